"""The transposition table of the Dots-and-Boxes search.

Key: the drawn-line bitboard after the forced captures, reduced to its smallest twin-sorted
image under the board's symmetries (``Tables.key``, defined in :mod:`board`; a perfect
key: a value never depends on scores or on who drew what).
Entry: ``(depth, lo, hi, move)``: the value lies in ``[lo, hi]`` (``lo == hi``: EXACT, ``hi``
infinite: LOWER bound, ``lo`` infinite: UPPER bound), searched to ``depth`` plies, ``PROVEN``
(a very large depth, or more: the compiled core adds a proof's size class) when no heuristic
leaf was involved, so the bounds are true ones; ``move``
is the best or refuting line in the canonical frame (-1: none).

Memory is bounded by ``max_entries``. Replacement rule: a proven entry is never replaced by a
heuristic one (two proven entries for a key are merged by intersecting their bounds and
keeping the larger depth); a
heuristic entry is replaced by a deeper or equally deep one. When the table is full, the oldest
quarter of the entries (in insertion order, which the dict keeps) is dropped.
"""

from __future__ import annotations

from itertools import islice

INF = 1 << 20
PROVEN = 1 << 16


class TranspositionTable:
    __slots__ = ("table", "max_entries", "evictions")

    def __init__(self, max_entries: int = 2_000_000) -> None:
        self.table: dict[int, tuple[int, int, int, int]] = {}
        self.max_entries = max_entries
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.table)

    def get(self, key: int):
        return self.table.get(key)

    def store(self, key: int, depth: int, lo: int, hi: int, move: int) -> None:
        table = self.table
        old = table.get(key)
        if old is not None:
            od, olo, ohi, om = old
            if od >= PROVEN:
                if depth < PROVEN:
                    return
                depth = max(depth, od)
                if olo > lo:
                    lo = olo
                if ohi < hi:
                    hi = ohi
                if move < 0:
                    move = om
            elif depth < od:
                return
            table[key] = (depth, lo, hi, move)
            return
        if len(table) >= self.max_entries:
            drop = max(1, self.max_entries // 4)
            for k in list(islice(table, drop)):
                del table[k]
            self.evictions += drop
        table[key] = (depth, lo, hi, move)

    def clear(self) -> None:
        self.table.clear()
