"""An independent exact Dots-and-Boxes solver, the oracle the engine is checked against.

``solver.c`` (beside this file, with the search it includes twice, ``search.h``) is a plain
negamax alpha-beta in C over the drawn-lines bitmask with a transposition table of bounds and
move ordering only; it shares no code with the engine. It is compiled on first use with the
system ``gcc -O2 -shared -fPIC`` into a cache directory under the system's temporary directory,
keyed by the hash of the sources (so an edited source is rebuilt), and loaded with ctypes.

Lines are OpenSpiel's action ids (horizontal lines first, row-major, then vertical ones) and a
position is the int with bit ``i`` set for each drawn line ``i``. The value of a position is
for the player to move: the boxes they will still take minus the opponent's under optimal play
(a line completing ``c > 0`` boxes keeps the turn: ``c + value(child)``, else
``-value(child)``). Any board of at most 128 lines works (1x1 up to 8x7, 12x4, 1x42; no
board has exactly 128 lines): boards of up to 64 lines are searched over 64-bit masks, bigger
ones over 128-bit masks, which the solver takes as two 64-bit halves. How far from the end a
position can be and still be solved depends on its undrawn lines and its chains, not on the
board: a 5x5 mid-game position of 36 undrawn lines takes about a second, every two more lines
about four times as long; endgames of long chains go much further (a 7x7 one with 48 undrawn
lines: a fifth of a second). bench/reference_solver_bench.py measures it.

Solves of more than a million nodes are recorded in ``recorded.json`` beside this file (with
the hash of the sources that computed them) when ``BOXFISH_REFERENCE_RECORD=1`` is set, and
looked up there before solving, so that the suite pays for each slow value once, not on every
run. An edited source ignores the whole record (``test_reference_solver`` then fails until it
is recorded again), and a lookup under a node limit below the recorded solve's nodes solves
as before, so a limit still makes the solver give up. ``BOXFISH_REFERENCE_RECORDED=0`` turns
the lookups off (the benchmarks that time the solver do).

One transposition table (2^``TABLE_LOG2`` entries of 24 bytes, allocated on first use) is kept
for the life of the process and shared by every call, whatever the board (entries are tagged
with the board size); :func:`clear_table` empties it, e.g. to time solves from scratch. Calls
are serialised by a lock.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["RECORDED", "ReferenceGaveUp", "ReferenceUnavailable", "clear_table", "last_nodes",
           "recorded_solves", "reference_move_values", "reference_value", "sources_digest"]

SOURCE = Path(__file__).with_name("solver.c")
#: every file the build reads (the search is included by solver.c)
SOURCES = (SOURCE, SOURCE.with_name("search.h"))
CFLAGS = ("-O2", "-shared", "-fPIC", "-mpopcnt")
#: log2 of the table's entries (24 bytes each: 2^25 = 768 MiB, touched only as it is used)
TABLE_LOG2 = 25
#: the widest mask the solver takes (two 64-bit halves)
MAX_LINES = 128
_HALF = (1 << 64) - 1
#: the slow solves recorded (see the module's docstring)
RECORDED = Path(__file__).with_name("recorded.json")
#: a solve is recorded when it searches more nodes than this (about half a second; wall time
#: would also count the table's first allocation)
RECORD_NODES = 1_000_000


class ReferenceUnavailable(RuntimeError):
    """The solver cannot be built or loaded (no ``gcc``, a failed compile, no memory)."""


class ReferenceGaveUp(RuntimeError):
    """A solve hit its time or node limit before it proved the value."""


_lock = threading.RLock()
_lib = None
_last_nodes = 0
_recorded: dict | None = None


def sources_digest() -> str:
    """The hash of the solver's sources, which a recorded value is tied to."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES)).hexdigest()[:16]


def recorded_solves() -> dict[str, dict]:
    """The recorded solves of the current sources: ``"WxH:hexmask"`` -> ``{"value", "nodes",
    "seconds"}`` (empty when the record is of other sources or looked up is turned off)."""
    global _recorded
    with _lock:
        if _recorded is None:
            data = (json.loads(RECORDED.read_text()) if RECORDED.exists()
                    else {"sources": sources_digest(), "solves": {}})
            _recorded = data["solves"] if data["sources"] == sources_digest() else {}
        if os.environ.get("BOXFISH_REFERENCE_RECORDED") == "0":
            return {}
        return _recorded


def _record(key: str, value: int, nodes: int, seconds: float) -> None:
    """Adds one slow solve to ``recorded.json`` (merged with what another process wrote)."""
    data = (json.loads(RECORDED.read_text()) if RECORDED.exists() else None)
    if data is None or data["sources"] != sources_digest():
        data = {"sources": sources_digest(), "solves": {}}
    data["solves"][key] = {"value": value, "nodes": nodes, "seconds": round(seconds, 1)}
    data["solves"] = dict(sorted(data["solves"].items()))
    tmp = RECORDED.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, RECORDED)
    recorded_solves()[key] = data["solves"][key]


def _cflags() -> tuple[str, ...]:
    # -mpopcnt (a hardware popcount) only where the machine is x86-64
    if platform.machine() in ("x86_64", "AMD64"):
        return CFLAGS
    return CFLAGS[:3]


def _build() -> ctypes.CDLL:
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ReferenceUnavailable("the reference solver needs gcc on PATH (none found)")
    src = b"".join(p.read_bytes() for p in SOURCES)
    flags = _cflags()
    digest = hashlib.sha256(src + " ".join(flags).encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"boxfish-refsolver-{digest}"
    lib_path = cache / "solver.so"
    if not lib_path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        # built under a unique name and renamed: concurrent first uses do not clash
        tmp = cache / f"solver.{os.getpid()}.{threading.get_ident()}.so"
        proc = subprocess.run([gcc, *flags, "-o", str(tmp), str(SOURCE)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ReferenceUnavailable(f"gcc failed to build {SOURCE.name}:\n{proc.stderr}")
        os.replace(tmp, lib_path)
    lib = ctypes.CDLL(str(lib_path))
    lib.ref_table_init.argtypes = [ctypes.c_int]
    lib.ref_table_init.restype = ctypes.c_int
    lib.ref_table_clear.argtypes = []
    lib.ref_table_clear.restype = ctypes.c_int
    lib.ref_solve.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
                              ctypes.c_double, ctypes.c_int64, ctypes.POINTER(ctypes.c_int),
                              ctypes.POINTER(ctypes.c_int64)]
    lib.ref_solve.restype = ctypes.c_int
    lib.ref_max_lines.argtypes = []
    lib.ref_max_lines.restype = ctypes.c_int
    if lib.ref_max_lines() != MAX_LINES:
        raise ReferenceUnavailable(f"{lib_path} takes {lib.ref_max_lines()} lines, not "
                                   f"{MAX_LINES}")
    if lib.ref_table_init(TABLE_LOG2) != 0:
        raise ReferenceUnavailable(f"cannot allocate the solver's table (2^{TABLE_LOG2} "
                                   f"entries)")
    return lib


def _library() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is None:
            _lib = _build()
        return _lib


def _geometry(w: int, h: int) -> tuple[int, list[int]]:
    """(number of lines, the four-line mask of each box) of a w x h board; ValueError for a
    board of more than 128 lines."""
    if not (isinstance(w, int) and isinstance(h, int)) or w < 1 or h < 1:
        raise ValueError(f"board sizes are positive ints, got {w!r} x {h!r}")
    nh = (h + 1) * w
    nl = nh + h * (w + 1)
    if nl > MAX_LINES:
        raise ValueError(f"{w}x{h} has {nl} lines; the reference solver takes at most "
                         f"{MAX_LINES}")
    boxes = []
    for r in range(h):
        for c in range(w):
            left = nh + r * (w + 1) + c
            boxes.append(1 << (r * w + c) | 1 << ((r + 1) * w + c) | 1 << left
                         | 1 << (left + 1))
    return nl, boxes


def _solve(lib, w: int, h: int, drawn: int, deadline: float | None,
           max_nodes: int | None) -> int:
    global _last_nodes
    key = f"{w}x{h}:{drawn:x}"
    known = recorded_solves().get(key)
    if known is not None and (not max_nodes or known["nodes"] <= max_nodes):
        _last_nodes += known["nodes"]
        return known["value"]
    started = time.perf_counter()
    secs = 0.0
    if deadline is not None:
        secs = deadline - time.perf_counter()
        if secs <= 0:
            raise ReferenceGaveUp(f"no time left to solve {w}x{h} {drawn:#x}")
    value = ctypes.c_int()
    nodes = ctypes.c_int64()
    rc = lib.ref_solve(w, h, drawn & _HALF, drawn >> 64, secs, max_nodes or 0,
                       ctypes.byref(value), ctypes.byref(nodes))
    _last_nodes += nodes.value
    if rc == 1:
        raise ReferenceGaveUp(f"the reference solver gave up on {w}x{h} {drawn:#x} after "
                              f"{nodes.value:,} nodes")
    if rc == -2:
        raise ReferenceUnavailable("cannot allocate the solver's table")
    if rc != 0:
        raise ValueError(f"bad position for {w}x{h}: {drawn:#x}")
    seconds = time.perf_counter() - started
    if nodes.value > RECORD_NODES and os.environ.get("BOXFISH_REFERENCE_RECORD") == "1":
        _record(key, value.value, nodes.value, seconds)
    return value.value


def _check(w: int, h: int, drawn: int) -> tuple[int, list[int]]:
    nl, boxes = _geometry(w, h)
    if not isinstance(drawn, int) or drawn < 0 or drawn >> nl:
        raise ValueError(f"drawn must be a mask of the {nl} lines of {w}x{h}, got {drawn!r}")
    return nl, boxes


def reference_value(w: int, h: int, drawn: int, max_seconds: float | None = None,
                    max_nodes: int | None = None) -> int:
    """The exact value of ``drawn`` on a ``w`` x ``h`` board for the player to move.

    Raises :class:`ReferenceGaveUp` when ``max_seconds`` (wall time) or ``max_nodes`` run out
    first, :class:`ReferenceUnavailable` when the solver cannot be built (no gcc), and
    ``ValueError`` for a board of more than 128 lines or a mask with bits off the board."""
    _check(w, h, drawn)
    global _last_nodes
    with _lock:
        lib = _library()
        _last_nodes = 0
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        return _solve(lib, w, h, drawn, deadline, max_nodes)


def reference_move_values(w: int, h: int, drawn: int, lines=None,
                          max_seconds: float | None = None,
                          max_nodes: int | None = None) -> dict[int, int]:
    """The exact value of drawing each undrawn line of ``drawn`` (or each of ``lines``), for
    the player to move: ``c + value(child)`` when the line completes ``c > 0`` boxes, else
    ``-value(child)``. The maximum over all lines is :func:`reference_value`. The children's
    solves share the table. ``max_seconds`` and ``max_nodes`` bound each call as a whole
    (:class:`ReferenceGaveUp` when they run out); ``ValueError`` for a line that is drawn or
    off the board."""
    nl, boxes = _check(w, h, drawn)
    free = [ln for ln in range(nl) if not drawn >> ln & 1]
    if lines is None:
        lines = free
    else:
        lines = list(lines)
        bad = [ln for ln in lines if not (isinstance(ln, int) and 0 <= ln < nl)
               or drawn >> ln & 1]
        if bad:
            raise ValueError(f"not undrawn lines of {w}x{h} {drawn:#x}: {bad}")
    global _last_nodes
    with _lock:
        lib = _library()
        _last_nodes = 0
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        out: dict[int, int] = {}
        for ln in lines:
            child = drawn | 1 << ln
            c = sum(1 for m in boxes if m >> ln & 1 and child & m == m)
            left = max_nodes - _last_nodes if max_nodes else None
            if max_nodes and left <= 0:
                raise ReferenceGaveUp(f"node limit reached on {w}x{h} {drawn:#x}")
            v = _solve(lib, w, h, child, deadline, left)
            out[ln] = c + v if c else -v
        return out


def clear_table() -> None:
    """Forget every transposition-table entry (to time a solve from scratch)."""
    with _lock:
        if _library().ref_table_clear() != 0:
            raise ReferenceUnavailable("cannot allocate the solver's table")


def last_nodes() -> int:
    """Nodes searched by the last :func:`reference_value` or :func:`reference_move_values`."""
    return _last_nodes
