"""The compiled core of the Dots-and-Boxes search: availability, its tables, the core choice.

``_core`` (built from the C units of ``core/`` by ``pip install``) runs the Python node
(:class:`node.Searcher`'s) node for node: the same phases, move ordering, captures, keys,
table semantics, chain DP and evaluation, so both report the same value, bound, best move and
node count as long as neither transposition table has had to replace an entry
(:class:`node.CompiledSearcher` is its searcher). It takes boards of up to
``MAX_LINES`` lines (every board of up to 7x7 boxes); larger boards, and machines where the
extension could not be built (``UNAVAILABLE_REASON`` says why), use the Python search.

The compiled table: ``new_table(nbytes, lines, memo_entries)``. Entries are 16 bytes on
boards of up to 64 lines (64-bit keys), 32 beyond; the table may hold the largest power of
two of entries that fits in ``nbytes`` (``max_capacity``). It starts with at most 65,536
slots and doubles whenever more than half are used, up to that, so a short search pays for
the memory it uses, not for zeroing all of it. Replacement rule: a position keeps its slot and is
updated as :class:`table.TranspositionTable` updates it (a proven entry is only merged
with proven ones, a heuristic one replaced by an equally deep or deeper one); a new position
takes the first free slot of its window of 8 slots; with none free, it replaces the window's
least valuable entry: heuristic before proven, one from an earlier search (``new_search()``)
before one of this search, shallower before deeper; a heuristic entry never replaces a
proven one (it is dropped). ``clear()`` empties it and gives the memory back.

Threads (``CompiledSearcher(threads=n)``, ``analyse(threads=n)``): a search of more than a
couple of thousand nodes runs on ``n`` threads that share the table (Lazy SMP: the helpers
search the same root, window and depth, each ordering its moves by its own perturbation of
the board's centrality; the first thread to finish has the answer, the others stop). The
entries are read and written without locks, checked against their key (a torn entry reads
as a miss); the table grows once every thread has stopped between two nodes; each helper
keeps memos of its own (the table's size, for the search session only: the table keeps the
main thread's); the node budget counts the nodes of every thread, and the core's ``nodes``
is their sum.
Exact values are those of one thread; node counts, heuristic values and which of equally
good moves is reported may differ from run to run. At most ``MAX_THREADS`` threads.
"""

from __future__ import annotations

import warnings

from . import evaluate, learned
from .board import Tables

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - depends on the build
    _core = None
    UNAVAILABLE_REASON: str | None = (
        f"the compiled core was not built ({exc}); reinstall with a C compiler and the "
        "Python headers")
else:
    UNAVAILABLE_REASON = None

#: Lines and boxes of the largest board the compiled core takes.
MAX_LINES = 128
MAX_BOXES = 64
#: The most threads one search of the compiled core runs.
MAX_THREADS = 64
#: A compiled table's memos, in ``memo_entries``: three (horizon values, fill ends, chain DP
#: and chain graph)
#: and the Nimstring memo's ``NIM_SLOTS_PER_SLOT`` (core.h).
NIM_SLOTS_PER_SLOT = 4
MEMO_SHARES = 3 + NIM_SLOTS_PER_SLOT


def available() -> bool:
    """Whether the compiled core was built and imports."""
    return _core is not None


def fits(t: Tables) -> bool:
    """Whether the compiled core can search this board size."""
    return _core is not None and t.nl <= MAX_LINES and t.nb <= MAX_BOXES


def resolve(core: str | None, t: Tables) -> str:
    """The search to run on ``t``'s board: ``core`` when given (``"c"`` or ``"python"``),
    else ``"c"`` when the compiled core is available and takes the board. Raises
    ``ValueError`` for another name, or for ``"c"`` where it cannot run."""
    if core is None:
        if _core is None:
            # (the warnings module shows it once per process)
            warnings.warn(f"Dots-and-Boxes analyses run the pure-Python search: "
                          f"{UNAVAILABLE_REASON}", RuntimeWarning, stacklevel=2)
            return "python"
        return "c" if fits(t) else "python"
    if core == "python":
        return core
    if core != "c":
        raise ValueError(f"core must be 'c' or 'python', got {core!r}")
    if _core is None:
        raise ValueError(UNAVAILABLE_REASON)
    if not fits(t):
        raise ValueError(f"the compiled core takes boards of up to {MAX_LINES} lines; "
                         f"{t.w}x{t.h} has {t.nl}")
    return core


def threads_of(threads: int) -> int:
    """The threads a compiled search runs when asked for ``threads`` (at least 1, at most
    ``MAX_THREADS``)."""
    return max(1, min(MAX_THREADS, threads))


def entry_bytes(lines: int) -> int:
    """Bytes of one compiled table entry on a board of ``lines`` lines."""
    return 16 if lines <= 64 else 32


def new_table(nbytes: int, lines: int = MAX_LINES, memo_entries: int = 1 << 16):
    """A compiled table for boards of up to ``lines`` lines, of at most ``nbytes`` bytes of
    entries (at least one), with memos of ``memo_entries`` slots each (rounded down to a
    power of two, at least one). Raises ``RuntimeError`` when the core is not available,
    ``ValueError`` for too few bytes."""
    if _core is None:
        raise RuntimeError(UNAVAILABLE_REASON)
    return _core.Table(max(nbytes, entry_bytes(lines)), lines > 64, memo_entries)


def board(t: Tables):
    """The compiled core's tables for ``t``'s board size (built once per ``Tables``)."""
    b = t.compiled_board
    if b is None:
        if not fits(t):
            raise ValueError(f"the compiled core does not take a {t.w}x{t.h} board")
        swaps = [(a.bit_length() - 1, a.bit_length() - 1 + sh) for a, sh in t.kswap1]
        b = _core.Board(t.nl, t.box_lines, t.syms, t.twin_groups, swaps, t.centrality,
                        t.fill_orders, (evaluate.TRUST_NUM, evaluate.TRUST_DEN),
                        (evaluate.PARITY_HORIZON, evaluate.PARITY_RAMP), evaluate.FILLS)
        t.compiled_board = b
    return b


def model(m, control_moves: int | None = None):
    """The compiled core's copy of a :class:`~.learned.Model` (made once per model and
    ``control_moves``, by default ``learned.CONTROL_MAX_MOVES``)."""
    if control_moves is None:
        control_moves = learned.CONTROL_MAX_MOVES
    c = m.compiled
    if c is None or c.control_moves != control_moves:
        c = m.compiled = _core.Model(
            m.features, m.shift, m.feature.astype("<i4").tobytes(),
            m.threshold.astype("<f8").tobytes(), m.left.astype("<i4").tobytes(),
            m.right.astype("<i4").tobytes(), m.value.astype("<i4").tobytes(),
            m.roots.astype("<i4").tobytes(), m.max_undrawn, control_moves)
    return c


def core(t: Tables, table, symmetry: bool, aborted: type[BaseException], clock):
    """A search session of the compiled core on ``t``'s board with ``table``."""
    return _core.Core(board(t), table, aborted, clock, symmetry)
