"""Everything the Dots-and-Boxes search of one board size remembers, owned by one object,
and its budget (the one statement of it).

A :class:`DotsCaches` holds, for one board size: the transposition table (``tt``), the horizon
evaluation with its memos (``evaluator``: leaf values and the values of the positions its
fills end in; ``learned_evaluator()``: the learned evaluation's leaf values) and the chain DP's
memo (``dp``, shared by the evaluation and the search's exact loony endgames; it holds the
chain graph's values too); the compiled core (:mod:`compiled`) keeps its own table and memos
in one object (``compiled``), made on its first search. Every one of them is bounded, and
``clear()`` empties them all. A new member (another table, say) is added here, to
``clear()``, ``bounds()`` and ``sizes()``.

The budget of an owner of ``max_entries`` entries (an ``engine.analysis.SearchCache`` keeps
one per board size, made by :func:`make_caches`; a search given none makes its own, of
``DEFAULT_ENTRIES``): each of the ``AUX_CACHES`` auxiliary caches (the fill evaluation's two
memos, the learned evaluation's memo and its Nimstring memo, the DP memo) gets
``aux_entries(max_entries)``, a sixteenth of the budget and at most ``AUX_MAX``, and the
transposition table the rest, so that the owner never holds more than ``max_entries``
entries in all (each cache at least one: an owner of fewer than 6 may hold 6, or 8 with the
compiled core's memos). The compiled core's table takes ``table_bytes`` of entries
(``SearchCache(table_bytes=...)``, or ``boxfish solve --table-gb``); by default the bytes of
what the budget leaves it after its memos (``compiled.MEMO_SHARES`` auxiliary shares;
:func:`compiled.entry_bytes` each), and for a search's own caches :func:`own_table_bytes`, a
quarter of the machine's memory and at most ``OWN_TABLE_MAX_BYTES``. It starts small and
doubles as it fills, so an analysis only holds the memory its entries need; its three memos
get the auxiliary share each, and its Nimstring memo four times that (``compiled_nim``).
``sizes()`` counts it as ``compiled`` (table entries), ``compiled_memos`` (the three memos'
entries) and ``compiled_nim``.
"""

from __future__ import annotations

import os

from ..chain_dp import LoonyDP
from . import compiled as _compiled
from .board import Tables, tables
from .evaluate import Evaluator
from .learned import LearnedEvaluator, model_for
from .table import TranspositionTable

#: An auxiliary cache's share of an owner's entries: 1 / AUX_SHARE of them, at most AUX_MAX.
AUX_SHARE = 16
AUX_MAX = 1 << 16
AUX_CACHES = 5
#: The budget of a search's own caches (no ``SearchCache``): a 2,000,000-entry table and
#: 65,536 entries for each auxiliary cache.
DEFAULT_ENTRIES = 2_000_000 + AUX_CACHES * AUX_MAX


#: A search's own compiled table may take 1 / OWN_TABLE_SHARE of the machine's memory, at most
#: OWN_TABLE_MAX_BYTES (see :func:`own_table_bytes`).
OWN_TABLE_SHARE = 4
OWN_TABLE_MAX_BYTES = 4 << 30
#: The floor of that budget, and the memory assumed where the machine's cannot be read.
OWN_TABLE_MIN_BYTES = 64 << 20


def own_table_bytes() -> int:
    """The compiled table budget of a search's own caches: a quarter of the machine's
    physical memory, between ``OWN_TABLE_MIN_BYTES`` and ``OWN_TABLE_MAX_BYTES``."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        memory = 0
    return max(OWN_TABLE_MIN_BYTES, min(OWN_TABLE_MAX_BYTES, memory // OWN_TABLE_SHARE))


def aux_entries(max_entries: int) -> int:
    """The entries each auxiliary cache of an owner of ``max_entries`` may hold."""
    return max(1, min(AUX_MAX, max_entries // AUX_SHARE))


class DotsCaches:
    """The caches of the Dots search on one board size (``t``), within the budget of the
    module docstring.

    The Python search's: ``tt``, ``evaluator``, ``dp``; the compiled core's: ``compiled``
    (``compiled_table()``). Each set is made on its first use, so an owner only one core
    searches with holds only that core's caches, unless a table of the caller's is passed as
    ``tt`` (then that table's own bound holds for it); an owner both cores search with holds
    at most the budget for each. Not thread-safe: one search at a time."""

    __slots__ = ("t", "max_entries", "table_bytes", "compiled", "_tt", "_evaluator", "_dp",
                 "_learned", "evaluation")

    def __init__(self, t: Tables, max_entries: int | None = None,
                 tt: TranspositionTable | None = None, table_bytes: int | None = None) -> None:
        own = max_entries is None
        if own:
            max_entries = DEFAULT_ENTRIES
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        self.t = t
        self.max_entries = max_entries
        self._tt = tt
        self._evaluator = self._dp = self._learned = None
        self.evaluation: str | None = None  # the horizon evaluation of the last search
        if table_bytes is None:
            table_bytes = (own_table_bytes() if own
                           else self._compiled_entries() * _compiled.entry_bytes(t.nl))
        self.table_bytes = table_bytes
        self.compiled = None  # the compiled core's table, made by its first search

    def _tt_entries(self) -> int:
        return max(1, self.max_entries - AUX_CACHES * aux_entries(self.max_entries))

    def _compiled_entries(self) -> int:
        return max(1, self.max_entries
                   - _compiled.MEMO_SHARES * aux_entries(self.max_entries))

    @property
    def tt(self) -> TranspositionTable:
        """The Python search's transposition table (made on first use)."""
        if self._tt is None:
            self._tt = TranspositionTable(self._tt_entries())
        return self._tt

    @property
    def dp(self) -> LoonyDP:
        """The chain DP's memo of the Python search (made on first use)."""
        if self._dp is None:
            self._dp = LoonyDP(aux_entries(self.max_entries))
        return self._dp

    @property
    def evaluator(self) -> Evaluator:
        """The Python search's horizon evaluation and its memos (made on first use)."""
        if self._evaluator is None:
            self._evaluator = Evaluator(self.t, aux_entries(self.max_entries), self.dp)
        return self._evaluator

    def learned_evaluator(self) -> LearnedEvaluator:
        """The Python search's learned evaluation and its memo (made on first use; it
        shares ``evaluator``'s fills and their memo). ``ValueError`` where the board has no
        model."""
        if self._learned is None:
            model = model_for(self.t)
            if model is None:
                raise ValueError(f"no learned evaluation for a {self.t.w}x{self.t.h} board")
            self._learned = LearnedEvaluator(self.evaluator, model)
        return self._learned

    def use_evaluation(self, evaluation: str) -> None:
        """Before a search with ``evaluation``: where the last search used another one, the
        tables are emptied, so that no heuristic value of one evaluation is read as
        another's (their proven entries would hold, but are dropped with them)."""
        if self.evaluation is not None and self.evaluation != evaluation:
            for c in (self._tt, self.compiled):
                if c is not None:
                    c.clear()
        self.evaluation = evaluation

    def compiled_table(self):
        """The compiled core's table and memos (made on first use; raises RuntimeError
        when the core is not available)."""
        if self.compiled is None:
            self.compiled = _compiled.new_table(self.table_bytes, self.t.nl,
                                                aux_entries(self.max_entries))
        return self.compiled

    def bounds(self) -> dict[str, int]:
        """The most entries each cache made so far may hold: ``tt``, ``values``, ``ends``,
        ``learned``, ``nimstring``, ``dp`` (the Python search's), ``compiled``,
        ``compiled_memos`` and ``compiled_nim`` (the compiled core's table and its memos)."""
        out = {}
        if self._tt is not None:
            out["tt"] = self._tt.max_entries
        if self._evaluator is not None:
            out["values"] = out["ends"] = self._evaluator.max_entries
        if self._learned is not None:
            out["learned"] = self._learned.max_entries
            out["nimstring"] = self._learned.nim.max_entries
        if self._dp is not None:
            out["dp"] = self._dp.max_entries
        if self.compiled is not None:
            out["compiled"] = self.compiled.max_capacity
            out["compiled_memos"] = 3 * self.compiled.memo_slots
            out["compiled_nim"] = _compiled.NIM_SLOTS_PER_SLOT * self.compiled.memo_slots
        return out

    def sizes(self) -> dict[str, int]:
        """The entries each cache made so far holds now (the names of ``bounds()``)."""
        out = {}
        if self._tt is not None:
            out["tt"] = len(self._tt)
        if self._evaluator is not None:
            out["values"] = len(self._evaluator.values)
            out["ends"] = len(self._evaluator.ends)
        if self._learned is not None:
            out["learned"] = len(self._learned)
            out["nimstring"] = len(self._learned.nim)
        if self._dp is not None:
            out["dp"] = len(self._dp)
        if self.compiled is not None:
            st = self.compiled.stats()
            out["compiled"] = st["entries"]
            out["compiled_memos"] = st["eval_entries"] + st["end_entries"] + st["loony_entries"]
            out["compiled_nim"] = st["nim_entries"]
        return out

    def clear(self) -> None:
        """Empty every cache."""
        for c in (self._tt, self._evaluator, self._learned, self._dp, self.compiled):
            if c is not None:
                c.clear()

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
