"""Everything the Dots-and-Boxes search of one board size remembers, owned by one object.

A :class:`DotsCaches` holds, for one board size: the transposition table (``tt``), the horizon
evaluation with its memos (``evaluator``: leaf values and the values of the positions its
fills end in) and the chain DP's memo (``dp``, shared by the evaluation and the search's exact
loony endgames). Every one of them is bounded, and ``clear()`` empties them all.

A search that is given none makes a fresh one (``Searcher``); an
``engine.analysis.SearchCache`` keeps one per board size between analyses, made by
:func:`make_caches` with the cache's ``max_entries``: the auxiliary caches (the evaluation's
two memos and the DP memo) get ``aux_entries(max_entries)`` entries each, a sixteenth of the
budget and at most 65,536 (their size before they were owned here), and the transposition
table the rest, so that the owner never holds more than ``max_entries`` entries in all. A new
member (another table, say) is added here, to ``clear()``, ``__len__`` and ``sizes()``.

The compiled core (:mod:`compiled`) keeps its own table and memos in one object
(``compiled``), made on its first search: ``table_bytes`` of entries (default: the bytes of
the Python table's share, :func:`compiled.entry_bytes` each), and the memos' share each for
its three memos. ``sizes()`` counts it as ``compiled`` (table entries) and
``compiled_memos`` (the three memos' entries).
"""

from __future__ import annotations

from . import compiled as _compiled
from .chain_dp import LoonyDP
from .evaluate import Evaluator
from .search_board import Tables, tables
from .search_tt import TranspositionTable

#: An auxiliary cache's share of an owner's entries: 1 / AUX_SHARE of them, at most AUX_MAX.
AUX_SHARE = 16
AUX_MAX = 1 << 16
#: The budget of a search's own caches (no ``SearchCache``): a 2,000,000-entry table and
#: 65,536 entries for each auxiliary cache.
DEFAULT_ENTRIES = 2_000_000 + 3 * AUX_MAX


def aux_entries(max_entries: int) -> int:
    """The entries each auxiliary cache of an owner of ``max_entries`` may hold."""
    return max(1, min(AUX_MAX, max_entries // AUX_SHARE))


class DotsCaches:
    """The caches of the Dots search on one board size (``t``): ``tt``, ``evaluator``,
    ``dp``. At most ``max_entries`` entries in all (see the module docstring), unless a
    table of the caller's is passed as ``tt`` (then that table's own bound holds for it).
    Not thread-safe: one search at a time."""

    __slots__ = ("t", "max_entries", "tt", "evaluator", "dp", "table_bytes", "compiled")

    def __init__(self, t: Tables, max_entries: int = DEFAULT_ENTRIES,
                 tt: TranspositionTable | None = None, table_bytes: int | None = None) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        self.t = t
        self.max_entries = max_entries
        aux = aux_entries(max_entries)
        self.dp = LoonyDP(aux)
        self.evaluator = Evaluator(t, aux, self.dp)
        tt_entries = max(1, max_entries - 3 * aux)
        self.tt = tt if tt is not None else TranspositionTable(tt_entries)
        self.table_bytes = (table_bytes if table_bytes is not None
                            else tt_entries * _compiled.entry_bytes(t.nl))
        self.compiled = None  # the compiled core's table, made by its first search

    def compiled_table(self):
        """The compiled core's table and memos (made on first use; raises RuntimeError
        when the core is not available)."""
        if self.compiled is None:
            self.compiled = _compiled.new_table(self.table_bytes, self.t.nl,
                                                aux_entries(self.max_entries))
        return self.compiled

    def bounds(self) -> dict[str, int]:
        """The most entries each cache may hold (the compiled table's once it exists)."""
        aux = self.evaluator.max_entries
        out = {"tt": self.tt.max_entries, "values": aux, "ends": aux,
               "dp": self.dp.max_entries}
        if self.compiled is not None:
            out["compiled"] = self.compiled.capacity
            out["compiled_memos"] = 3 * self.compiled.memo_slots
        return out

    def sizes(self) -> dict[str, int]:
        """The entries each cache holds now."""
        out = {"tt": len(self.tt), "values": len(self.evaluator.values),
               "ends": len(self.evaluator.ends), "dp": len(self.dp)}
        if self.compiled is not None:
            st = self.compiled.stats()
            out["compiled"] = st["entries"]
            out["compiled_memos"] = st["eval_entries"] + st["end_entries"] + st["loony_entries"]
        return out

    def clear(self) -> None:
        """Empty every cache."""
        self.tt.clear()
        self.evaluator.clear()
        self.dp.clear()
        if self.compiled is not None:
            self.compiled.clear()

    def __len__(self) -> int:
        return sum(self.sizes().values())

    def __repr__(self) -> str:
        return f"DotsCaches({self.t.w}x{self.t.h}, {self.sizes()})"


def make_caches(w: int, h: int, table_bytes: int | None = None):
    """The factory of a ``SearchCache`` for a board size: ``max_entries -> DotsCaches``
    (``table_bytes``: the compiled table's size, default from ``max_entries``)."""
    def factory(max_entries: int) -> DotsCaches:
        return DotsCaches(tables(w, h), max_entries, table_bytes=table_bytes)
    return factory
