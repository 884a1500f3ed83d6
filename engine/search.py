"""What the games' searches share: limits, the abort signal and the per-depth results.

Both searches (:mod:`engine.dots.search.driver`, :mod:`engine.xttt.search`) are iterative deepening
written as a generator: ``iterate(...)`` yields one :class:`DepthResult` per completed depth,
and the game's ``analyse`` owns the time control around it. Their ``Searcher`` classes derive
from :class:`SearcherBase` and take the same options:

* ``deadline``: a ``time.perf_counter()`` time; ``deadline_of(start, time_ms)`` computes it,
  keeping back :data:`DEADLINE_MARGIN` for building the answer;
* ``max_nodes``: a node budget (``Limit.nodes``);
* ``max_depth`` (of ``iterate``): the last depth to complete (``Limit.depth``).

Reaching the deadline or the node budget inside an iteration raises :class:`SearchAborted`,
which the ``iterate`` generators catch: the caller keeps the last completed depth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .analysis import Bound
from .errors import SearchAborted

#: Seconds a search keeps back from its time limit for the last node check and for building
#: the answer.
DEADLINE_MARGIN = 0.004


def deadline_of(start: float, time_ms: int | None) -> float | None:
    """The ``time.perf_counter()`` time at which a search given ``time_ms`` from ``start``
    stops: :data:`DEADLINE_MARGIN` before the limit (never before ``start``); None when
    there is no time limit."""
    if time_ms is None:
        return None
    return start + max(0.0, time_ms / 1000.0 - DEADLINE_MARGIN)


class SearcherBase:
    """The limits and counters every ``Searcher`` has.

    ``deadline`` / ``max_nodes``: see the module docstring (None: no such limit; both may be
    changed between searches). ``nodes``: positions searched so far; ``tt_hits``: useful
    transposition-table look-ups; ``horizon``: heuristic values used so far, so a subtree
    whose search leaves it unchanged was searched to the end (its value is *solved*).
    """

    def __init__(self, deadline: float | None = None, max_nodes: int | None = None) -> None:
        self.deadline = deadline
        self.max_nodes = max_nodes
        self.nodes = 0
        self.tt_hits = 0
        self.horizon = 0

    def check_limits(self) -> None:
        """Raise :class:`SearchAborted` when the deadline or the node budget is reached
        (the searches call it every few nodes)."""
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            raise SearchAborted
        if self.max_nodes is not None and self.nodes >= self.max_nodes:
            raise SearchAborted


@dataclass(slots=True)
class RootMove:
    """One root move after an iteration: its action id and its value for the side to move.
    Read-only (not frozen only because a frozen dataclass is three times slower to make,
    and a search makes one per root move it searches).

    ``bound``: ``exact`` (a full-window value at this depth), ``upper`` / ``lower`` (the
    value only bounds it), or ``estimate`` (a guess the search never checked). ``solved``: no
    heuristic value was used to find it, so the value (or bound) is a true one.
    """

    action: int
    value: int
    bound: Bound
    solved: bool


@dataclass(frozen=True, slots=True)
class DepthResult:
    """What one completed iteration found at the root.

    ``moves``: the root moves, best first by the game's ranking (equal ones in the order
    searched); ``searched``: the action ids in the order the iteration searched them (a
    move that stands for its class of symmetric moves once); ``solved``: the root value
    used no heuristic value; ``nodes`` / ``tt_hits``: the searcher's counters then.
    ``refined``: the result of a pass after a solved depth that only gives more moves exact
    values (Dots and Boxes), not of a new depth.
    """

    depth: int
    moves: tuple[RootMove, ...]
    searched: tuple[int, ...]
    solved: bool
    nodes: int
    tt_hits: int
    refined: bool = False

    @property
    def best(self) -> RootMove:
        return self.moves[0]


__all__ = ["DEADLINE_MARGIN", "deadline_of", "SearchAborted", "SearcherBase", "RootMove",
           "DepthResult"]
