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
"""

from __future__ import annotations

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

    __slots__ = ("t", "max_entries", "tt", "evaluator", "dp")

    def __init__(self, t: Tables, max_entries: int = DEFAULT_ENTRIES,
                 tt: TranspositionTable | None = None) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        self.t = t
        self.max_entries = max_entries
        aux = aux_entries(max_entries)
        self.dp = LoonyDP(aux)
        self.evaluator = Evaluator(t, aux, self.dp)
        self.tt = tt if tt is not None else TranspositionTable(max(1, max_entries - 3 * aux))

    def bounds(self) -> dict[str, int]:
        """The most entries each cache may hold."""
        aux = self.evaluator.max_entries
        return {"tt": self.tt.max_entries, "values": aux, "ends": aux,
                "dp": self.dp.max_entries}

    def sizes(self) -> dict[str, int]:
        """The entries each cache holds now."""
        return {"tt": len(self.tt), "values": len(self.evaluator.values),
                "ends": len(self.evaluator.ends), "dp": len(self.dp)}

    def clear(self) -> None:
        """Empty every cache."""
        self.tt.clear()
        self.evaluator.clear()
        self.dp.clear()

    def __len__(self) -> int:
        return sum(self.sizes().values())

    def __repr__(self) -> str:
        return f"DotsCaches({self.t.w}x{self.t.h}, {self.sizes()})"


def make_caches(w: int, h: int):
    """The factory of a ``SearchCache`` for a board size: ``max_entries -> DotsCaches``."""
    def factory(max_entries: int) -> DotsCaches:
        return DotsCaches(tables(w, h), max_entries)
    return factory
