"""Value types of a search and the game-independent ``analyse`` entry point.

``analyse(state, time_ms=..., depth=..., nodes=..., multipv=..., on_progress=...)`` hands the
work to the state's game (``Game.analyse``); each game's search lives in its own package.
The deadline is hard: ``analyse`` returns the best answer found so far, never raises for lack
of time.

Values are for the side to move. Dots and Boxes: the future boxes of the side to move minus
the opponent's (``mate_in`` is always None). Extreme Tic-Tac-Toe: evaluation units, a
heuristic estimate within ``±MAX_EVAL`` (:mod:`engine.xttt.evaluate`) or a proven result; a
forced big-board pattern win is reported with its distance in ``mate_in`` (see
:func:`engine.xttt.search.reported_value`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from cachetools import LRUCache

from .game import Move

#: The searches ``analyse`` may be asked for (None: the best available).
CORES = (None, "c", "python")


#: Where the cgroup file systems are mounted, and where a process's cgroups are listed.
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def usable_cores() -> int:
    """The CPUs this process may use: its affinity mask where the system has one (else every
    CPU), capped by its cgroup's CPU quota (:func:`cpu_quota`, rounded up: ``docker --cpus
    1.5`` gives 2): ``analyse``'s default number of search threads."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = max(1, os.cpu_count() or 1)
    quota = cpu_quota()
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))


def cpu_quota(root: str | None = None, cgroups: str | None = None) -> float | None:
    """The CPU bandwidth this process's cgroups allow, in cores (``docker --cpus``, a
    Kubernetes CPU limit): the smallest quota over the process's cgroup and its ancestors,
    cgroup v2 (``cpu.max``) or v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``). None when
    there is none, or nothing can be read (not Linux, no cgroup file system). ``root`` and
    ``cgroups`` default to :data:`CGROUP_ROOT` and :data:`PROC_CGROUP`."""
    root = root or CGROUP_ROOT
    try:
        with open(cgroups or PROC_CGROUP) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    quotas = []
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0" and controllers == "":
            bases, reader = [root, os.path.join(root, "unified")], _v2_quota
        elif "cpu" in controllers.split(","):
            bases, reader = [os.path.join(root, controllers), os.path.join(root, "cpu")], _v1_quota
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for base in dict.fromkeys(bases):
            # The process's own cgroup and each ancestor (in a container the listed path may
            # be the host's, not under the mount: the mount's root is then read).
            for depth in range(len(parts), -1, -1):
                quota = reader(os.path.join(base, *parts[:depth]))
                if quota is not None:
                    quotas.append(quota)
    return min(quotas) if quotas else None


def _v2_quota(folder: str) -> float | None:
    try:
        with open(os.path.join(folder, "cpu.max")) as f:
            quota, period = (f.read().split() + ["100000"])[:2]
    except OSError:
        return None
    if quota == "max" or int(period) <= 0:
        return None
    return int(quota) / int(period)


def _v1_quota(folder: str) -> float | None:
    try:
        with open(os.path.join(folder, "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(folder, "cpu.cfs_period_us")) as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return quota / period


class Bound(StrEnum):
    """What a reported value says about the true one (compares equal to, and serialises as,
    its string)."""

    EXACT = "exact"        #: the value is proven
    LOWER = "lower"        #: the true value is at least the value (proven)
    UPPER = "upper"        #: the true value is at most the value (proven)
    ESTIMATE = "estimate"  #: a heuristic value from the search horizon


class Proven(StrEnum):
    """A game outcome the search proved, for the side to move."""

    WIN = "win"
    LOSS = "loss"
    DRAW = "draw"


@dataclass(frozen=True, slots=True)
class Limit:
    """How long a search may run: any combination; the first one reached stops it.

    With no limit at all the search runs until the position is solved.
    """

    time_ms: int | None = None
    depth: int | None = None
    nodes: int | None = None


@dataclass(frozen=True, slots=True)
class MoveValue:
    """One legal move with its value for the side to move (``bound``, ``lower``, ``upper``
    and ``mate_in`` as in :class:`Analysis`, for this move). ``depth``: for an estimate, the
    depth of the search iteration it comes from (Dots and Boxes: every estimate of one
    answer comes from the same one, 0 for a static guess); None for an exact value or a
    proven bound, and for Extreme Tic-Tac-Toe."""

    move: Move
    value: float
    exact: bool
    bound: Bound = Bound.EXACT
    mate_in: int | None = None
    lower: float | None = None
    upper: float | None = None
    depth: int | None = None

    def to_dict(self) -> dict:
        return {"move": list(self.move), "value": self.value, "exact": self.exact,
                "bound": str(self.bound), "lower": self.lower, "upper": self.upper,
                "depth": self.depth, "mate_in": self.mate_in}


@dataclass(frozen=True, slots=True)
class Progress:
    """Reported through ``on_progress`` after each completed iterative-deepening depth
    (``value`` and ``mate_in`` as in :class:`Analysis`)."""

    depth: int
    best_move: Move | None
    value: float
    exact: bool
    nodes: int
    time_ms: float
    mate_in: int | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["best_move"] = list(self.best_move) if self.best_move is not None else None
        return d


@dataclass(slots=True)
class Analysis:
    """The result of a search.

    ``value``: for Dots and Boxes the future boxes of the side to move minus the opponent's
    (see the spec); for Extreme Tic-Tac-Toe a score for the side to move in evaluation units,
    with ``proven`` set to a :class:`Proven` (``"win"``, ``"loss"`` or ``"draw"``) when the
    search proved the outcome. ``exact`` is true when the value is proven. ``bound`` (a
    :class:`Bound`) is ``"exact"`` then; otherwise ``"lower"`` or ``"upper"`` when the search
    established that the true value is at least or at most the reported one, or
    ``"estimate"`` for a heuristic value from the search horizon.

    ``lower`` / ``upper`` (Dots and Boxes): what is proven about the true value whatever
    ``bound`` says: it is at least ``lower`` and at most ``upper`` (None: no such bound
    proven; both equal ``value`` when it is exact). An estimate always lies between them:
    where the heuristic value would contradict a proven bound, ``value`` is that bound and
    ``bound`` says ``"lower"`` or ``"upper"``.

    ``mate_in``: for a forced big-board pattern win in Extreme Tic-Tac-Toe, its distance in
    plies (every move counts, a bonus move too), signed like a UCI ``score mate``: positive
    when the side to move wins in that many plies, negative when it loses in that many, 0 for
    a game a pattern has already ended (``proven`` says for whom). ``value`` then stays on the
    evaluation's scale: a pattern win is worth its 68-0 result (see
    :func:`engine.xttt.search.reported_value`). None otherwise, and always for Dots and
    Boxes, whose value is the box margin.
    ``moves``: every legal move (or the ``multipv`` best) with its own value, best first.
    ``core``: the search that ran: ``"c"`` (the compiled Dots-and-Boxes core) or
    ``"python"`` (the reference search; Extreme Tic-Tac-Toe always).
    """

    game: str
    best_move: Move | None
    value: float
    exact: bool
    bound: Bound
    pv: list[Move] = field(default_factory=list)
    depth: int = 0
    nodes: int = 0
    nps: int = 0
    time_ms: float = 0.0
    tt_hits: int = 0
    moves: list[MoveValue] = field(default_factory=list)
    proven: Proven | None = None
    mate_in: int | None = None
    core: str = "python"
    lower: float | None = None
    upper: float | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict with the same field names (moves as lists)."""
        return {
            "game": self.game,
            "best_move": list(self.best_move) if self.best_move is not None else None,
            "value": self.value,
            "exact": self.exact,
            "bound": str(self.bound),
            "lower": self.lower,
            "upper": self.upper,
            "pv": [list(m) for m in self.pv],
            "depth": self.depth,
            "nodes": self.nodes,
            "nps": self.nps,
            "time_ms": round(self.time_ms, 3),
            "tt_hits": self.tt_hits,
            "moves": [m.to_dict() for m in self.moves],
            "proven": str(self.proven) if self.proven is not None else None,
            "mate_in": self.mate_in,
            "core": self.core,
        }


class SearchCache:
    """What one analysis leaves for the next: per game and board size, the owner of every
    cache that game's search keeps (its transposition table and its memos).

    Pass the same cache to ``analyse`` for successive positions of a game (a bot thinking
    move after move, a worker serving one game's requests) and every search starts warm:
    the previous one has already searched most of the new position's tree. Entries are keyed
    by position alone, so one cache may serve unrelated analyses of the same game; an entry
    from a deeper search wins, and only proven entries count towards an exact answer.

    Bounded: at most ``max_tables`` owners are kept, the least recently used dropped first
    (a ``cachetools.LRUCache``), and each holds at most ``max_entries`` entries in all its
    caches (a cache keeps at least one entry whatever its share), so the whole cache at most
    ``max_tables * max_entries``. How an owner splits its
    ``max_entries`` among its caches is its game's policy, written with its caches:
    :mod:`engine.dots.search.caches` (which also sizes the compiled Dots-and-Boxes core's
    table, ``table_bytes`` per owner when given) and ``engine.xttt.search.XtttCaches``.
    ``clear()`` empties every cache of every owner and drops them. Not thread-safe: one
    cache per thread.
    """

    def __init__(self, max_entries: int = 1_000_000, max_tables: int = 2,
                 table_bytes: int | None = None) -> None:
        if max_entries < 1 or max_tables < 1:
            raise ValueError(f"max_entries and max_tables must be >= 1, got "
                             f"{max_entries!r}, {max_tables!r}")
        if table_bytes is not None and table_bytes < 1 << 15:
            raise ValueError(f"table_bytes must be >= 32768, got {table_bytes!r}")
        self.max_entries = max_entries
        self.max_tables = max_tables
        self.table_bytes = table_bytes
        self._owners: LRUCache[Hashable, Any] = LRUCache(maxsize=max_tables)

    def owner(self, key: Hashable, factory: Callable[[int], Any]) -> Any:
        """The caches stored under ``key`` (a game and board size), made by
        ``factory(max_entries)`` if there are none (which may drop the least recently used
        owner). An owner has ``clear()`` (empty every cache it holds) and ``len()`` (the
        entries it holds in all), and never holds more than the ``max_entries`` it was made
        with."""
        owners = self._owners
        try:
            return owners[key]  # marks it as the most recently used
        except KeyError:
            owner = owners[key] = factory(self.max_entries)
            return owner

    def owners(self) -> dict[Hashable, Any]:
        """The owners kept, by key, least recently used first."""
        return dict(self._owners)

    def entries(self) -> int:
        """The entries held in all: every cache of every owner."""
        return sum(len(o) for o in self._owners.values())

    def clear(self) -> None:
        """Empty every cache of every owner (also one a running search still holds), and
        drop the owners."""
        for owner in self._owners.values():
            owner.clear()
        self._owners.clear()

    def __len__(self) -> int:
        """The number of owners kept (one per game and board size analysed lately)."""
        return len(self._owners)

    def __repr__(self) -> str:
        return (f"SearchCache(max_entries={self.max_entries}, max_tables={self.max_tables}, "
                f"table_bytes={self.table_bytes})"
                f" with {len(self._owners)} owner(s), {self.entries()} entries")


def analyse(state, time_ms: int | None = 1000, depth: int | None = None,
            nodes: int | None = None, multipv: int | None = None,
            on_progress: Callable[[Progress], None] | None = None,
            cache: SearchCache | None = None, core: str | None = None,
            threads: int | None = None, evaluation: str | None = None) -> Analysis:
    """Search ``state`` and return an :class:`Analysis`.

    ``time_ms`` is a hard deadline (pass ``None`` with ``depth`` or ``nodes`` for a search
    bounded only by those, or with neither to solve exactly). ``multipv=k`` keeps the k best
    moves in ``Analysis.moves``. ``on_progress`` is called after every completed depth.
    ``cache``: a :class:`SearchCache` to start from and to leave the search's table in
    (default: a fresh table, dropped afterwards). ``core``: ``"c"`` or ``"python"`` to
    choose the search (default: the compiled core when it is built and takes the board: Dots
    and Boxes of up to 128 lines; ``Analysis.core`` says which ran). ``threads``: the
    threads the search may run (default: :func:`usable_cores`, every CPU this process may
    use). The compiled Dots-and-Boxes core runs a search of more than a few thousand nodes on
    that many (at most 64), sharing its table; its exact values are those of one thread,
    but node counts, heuristic values and the choice among equally good moves may differ
    from run to run (``threads=1`` for repeatable ones). The Python searches run on one
    thread whatever it says. A program that runs several analyses at once should give each
    its share of the cores. ``evaluation`` (Dots and Boxes only): the horizon evaluation,
    ``"learned"`` or ``"fill"`` (default: the learned one where the board has a model;
    exact values do not depend on it).
    Raises ``ValueError`` for a negative limit, a ``multipv`` below 1, ``threads`` below 1,
    an unknown ``core``, or ``core="c"`` where the compiled core is not available for the
    position.
    """
    # the time limit counts from here: a first call also imports the game's search
    start = time.perf_counter()
    for name, v in (("time_ms", time_ms), ("depth", depth), ("nodes", nodes)):
        if v is not None and v < 0:
            raise ValueError(f"{name} must be >= 0, got {v!r}")
    if multipv is not None and multipv < 1:
        raise ValueError(f"multipv must be >= 1, got {multipv!r}")
    if threads is None:
        threads = usable_cores()
    elif type(threads) is not int or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    if core not in CORES:
        raise ValueError(f"core must be one of {', '.join(map(repr, CORES[1:]))} or None, "
                         f"got {core!r}")
    limit = Limit(time_ms=time_ms, depth=depth, nodes=nodes)
    more = {}
    if evaluation is not None:
        if getattr(state.game, "name", None) != "dots-and-boxes":
            raise ValueError(f"evaluation applies to dots-and-boxes, not "
                             f"{getattr(state.game, 'name', state.game)!r}")
        more["evaluation"] = evaluation
    return state.game.analyse(state, limit, multipv, on_progress, cache=cache, start=start,
                              core=core, threads=threads, **more)


# British spelling is the canonical one; the alias is for American users.
analyze = analyse
