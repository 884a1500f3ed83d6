"""The files of exact data: one JSON-lines file per board, source and seed.

Where: ``$BOXFISH_EXACT_DIR`` when set, else ``$XDG_CACHE_HOME/boxfish/exact`` (by default
``~/.cache/boxfish/exact``); a file is ``<dir>/<w>x<h>/<source>-seed<seed>.jsonl``.

The first line is the header: ``{"format": "boxfish-exact/1", "width", "height", "source",
"seed", "params"}`` (``params``: what else decides the positions, e.g. self-play's node
limit). Each further line is one position, appended and flushed as soon as it is solved:

* ``u``, ``i``: its undrawn lines and its index among the positions of that count (the pair
  names the position: it is generated from the seed, the source, ``u`` and ``i`` alone);
* ``drawn``: the drawn lines as a hex bitmask (bit ``k`` = line ``k``, OpenSpiel's action
  ids); ``to_move``: the player to move (0 moved first);
* ``value``: the exact value for the player to move (the boxes they will still take minus the
  opponent's, as the engine reports values); ``values``: the exact value of drawing each
  undrawn line, in increasing line order (:func:`move_values` pairs them up);
* ``s``, ``nodes``: the solve's wall seconds and nodes (they vary from run to run: ``RUN_FIELDS``);
* unsolved within the cap: ``value`` and ``values`` null, ``cap`` (seconds), and ``lower`` /
  ``upper``, the value's proven bounds (null: none). A later run with a larger cap tries
  again and appends a new record; the last record of a position is the one that counts.

A crash can tear only the last line (records are written whole, then flushed): reading skips
it, and :class:`DataFile` cuts it off before it appends. Any other unreadable line is an
error (:class:`FormatError`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FORMAT = "boxfish-exact/1"
ENV = "BOXFISH_EXACT_DIR"
#: The fields of a record that depend on the run (machine, load, threads), not the position.
RUN_FIELDS = ("s", "nodes")

__all__ = ["DataFile", "ENV", "FORMAT", "FormatError", "RUN_FIELDS", "data_path", "default_dir",
           "drawn_of", "header", "latest", "move_values", "read"]


class FormatError(ValueError):
    """A file that is not exact data of this format, or not of the data asked for."""


def default_dir() -> Path:
    """The folder of the data: ``$BOXFISH_EXACT_DIR``, else ``<XDG cache>/boxfish/exact``."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "boxfish" / "exact"


def data_path(root: str | os.PathLike, w: int, h: int, source: str, seed: int) -> Path:
    """The file of ``source``'s positions of seed ``seed`` on a ``w`` x ``h`` board."""
    return Path(root) / f"{w}x{h}" / f"{source}-seed{seed}.jsonl"


def header(w: int, h: int, source: str, seed: int, params: dict) -> dict:
    """A file's header (as it reads back from JSON)."""
    return json.loads(json.dumps({"format": FORMAT, "width": w, "height": h, "source": source,
                                  "seed": seed, "params": params}))


def drawn_of(rec: dict) -> int:
    """A record's drawn lines as an int."""
    return int(rec["drawn"], 16)


def move_values(rec: dict, nl: int) -> dict[int, int]:
    """A solved record's move values as {line: value}, on a board of ``nl`` lines."""
    drawn = drawn_of(rec)
    return dict(zip((ln for ln in range(nl) if not drawn >> ln & 1), rec["values"],
                    strict=True))


def latest(records) -> dict[tuple[int, int], dict]:
    """The record that counts for each position ``(u, i)``: its last."""
    return {(r["u"], r["i"]): r for r in records}


def _parse(path: Path, data: bytes) -> tuple[dict | None, list[dict], int]:
    """(header or None, records, bytes of whole lines) of a file's content; a torn last line
    (no newline at its end) is left out."""
    whole = data.rfind(b"\n") + 1
    lines = data[:whole].splitlines()
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise FormatError(f"{path}:{n}: not a JSON line ({exc})") from exc
    if not rows:
        return None, [], whole
    head = rows[0]
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise FormatError(f"{path} is not {FORMAT} data")
    return head, rows[1:], whole


def read(path: str | os.PathLike) -> tuple[dict | None, list[dict]]:
    """A file's header (None for an empty file) and its records, in the order written (a
    torn last line is skipped; the file is not changed)."""
    path = Path(path)
    head, rows, _ = _parse(path, path.read_bytes())
    return head, rows


class DataFile:
    """A data file opened to append to: made with ``head`` (:func:`header`) when new, else
    checked against it (:class:`FormatError` when it is another board's, source's, seed's
    or parameters'), its torn last line cut off. ``records``: the last record of each
    position so far. A context manager; one writer at a time."""

    def __init__(self, path: str | os.PathLike, head: dict) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = self.path.read_bytes() if self.path.exists() else b""
        old, rows, whole = _parse(self.path, data)
        if old is not None and old != head:
            raise FormatError(f"{self.path} holds other data: {old} (asked for {head}); "
                              f"give another seed or folder")
        if whole < len(data):
            os.truncate(self.path, whole)  # the torn line of a crash: solved again
        self.records = latest(rows)
        self._f = open(self.path, "ab")
        if old is None:
            self._write(head)

    def _write(self, obj: dict) -> None:
        self._f.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def append(self, rec: dict) -> None:
        """Write ``rec`` at the end, on disk before this returns."""
        self._write(rec)
        self.records[(rec["u"], rec["i"])] = rec

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> DataFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
