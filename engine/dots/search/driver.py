"""Time-bounded Dots-and-Boxes analysis: the driver around the search node (:mod:`node`).

``iterate(...)`` is iterative deepening as a generator (sunfish style): it yields one
:class:`~engine.search.DepthResult` per completed depth, then, once the root is solved, one
(``refined``) per move whose value it refines to an exact one. The caller owns time control;
``analyse`` is that caller for the engine's API: it stops at the limit (the hard deadline is
also enforced inside the search, which aborts mid-iteration) and returns the best answer found
so far.

Which driver runs:

* no limit at all: two heuristic iterations, then a proof (``iterate`` with ``solve``);
* a time limit alone, past ``SOLVE_LINES`` undrawn lines: :func:`anytime`, the heuristic
  deepening and resumable proof attempts of the root value (:class:`RootProof`) interleaved
  on one table, so the answer is exact whenever a proof fits the time;
* otherwise (a depth or node limit, or few lines left): ``iterate``, which goes straight to
  the end from the third iteration at ``SOLVE_LINES`` undrawn lines or fewer.

Whatever ran, the answer is assembled the same way (``_assemble``): every root move's value
is its deepest search's, capped by the moves the capture rules prove at least as good
(:func:`dominant_moves`) and kept within the bounds proven for it (its own search, the
table's proven entries, the root proof), which are reported as ``lower`` / ``upper``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...analysis import Analysis, Bound, Limit, MoveValue, Progress
from ...errors import SearchAborted
from ...search import DepthResult, RootMove, deadline_of
from ..chain_dp import chain_lines
from ..geometry import bits
from . import compiled
from .board import Tables, tables
from .caches import DotsCaches, make_caches
from .node import SLOW_NODE_LINES, CompiledSearcher, Searcher, SearchSession
from .table import INF, PROVEN, TranspositionTable

GAME_NAME = "dots-and-boxes"
# with this many undrawn lines or fewer, search straight to the end after two iterations
SOLVE_LINES = 26
#: A timed analysis of more than ``SOLVE_LINES`` undrawn lines interleaves two searches that
#: share the table (``anytime``): the heuristic deepening, which may use this share of the
#: time limit, and proof attempts of the root value (``RootProof``), which get the rest.
#: The first proof attempt may search ``FIRST_PROOF_NODES`` nodes (a 50th of that in the
#: Python core, about 30 times slower a node), each later one twice the last one's; once the
#: deepening has used its share (or can deepen no further) the proof runs to the deadline.
#: See ``bench/dots_timed_bench.py`` for the measurements.
DEEPENING_SHARE = 1 / 3
FIRST_PROOF_NODES = 50_000


# the bounds as plain globals: the root loop below reads them for every root move it searches,
# and a global is read several times faster than an attribute of the enum class
_EXACT, _LOWER, _UPPER, _ESTIMATE = Bound.EXACT, Bound.LOWER, Bound.UPPER, Bound.ESTIMATE


def _rank_key(r: RootMove):
    """The ranking of root moves (sort ascending): by value, exact ones first, then solved
    ones; equal ones keep their order."""
    return (-r.value, 0 if r.bound == _EXACT else 1, 0 if r.solved else 1)


def _sort_key(order_index):
    """:func:`_rank_key`, ties broken by ``order_index`` (line -> position)."""
    def key(r: RootMove):
        return (-r.value, 0 if r.bound == _EXACT else 1, 0 if r.solved else 1,
                order_index.get(r.action, 0))
    return key


def _depth_result(depth: int, res: dict[int, RootMove], solved: bool, searcher: SearchSession,
                  refined: bool = False) -> DepthResult:
    """``res`` (line -> result, in the order searched) as a DepthResult, best first."""
    return DepthResult(depth, tuple(sorted(res.values(), key=_rank_key)), tuple(res),
                       solved, searcher.nodes, searcher.tt_hits, refined)


def iterate(searcher: SearchSession, drawn: int, multipv: int | None = None,
            max_depth: int | None = None, refine: bool = True,
            partial: dict | None = None,
            solve_lines: int | None = None, solve: bool = False,
            first: int = -1, guess: int = 0,
            dominant: frozenset[int] = frozenset()) -> Iterator[DepthResult]:
    """Iterative deepening from ``drawn``. ``multipv``: how many best moves get exact
    (full-window) values in every iteration (default 1: the others get upper bounds).
    ``partial`` (a dict) receives each root move's result as soon as it is known, so a caller
    whose search was aborted mid-iteration can still use them. ``solve``: after two
    iterations, search straight to the end whatever the size (used when there is no time
    limit: deepening through heuristic leaves only slows a full proof down); without it, so
    does a position with ``solve_lines`` undrawn lines or fewer (default: the module's
    ``SOLVE_LINES`` when called). ``first``: a root move to put first in the proof iterations
    (the best move of a proof already in the table), whose value is searched from ``guess``
    (MTD(f)'s first window). ``dominant``: the root moves that the rules prove at least as good
    as every other (:func:`dominant_moves`); every other move's value is capped by theirs.

    The heuristic iterations stop after the one whose depth reaches the lines left: a deeper
    one would search the same tree (depth counts the lines drawn, captures aside)."""
    k = max(1, multipv or 1)
    if solve_lines is None:
        solve_lines = SOLVE_LINES  # read at call time: changing the module's value works
    order = searcher.root_order(drawn)
    if not order:
        return
    index = {ln: i for i, ln in enumerate(order)}
    prev: dict[int, RootMove] = {}
    depth = 0
    last_nodes = -1
    free = len(order)
    try:
        while True:
            depth += 1
            # near the end a direct proof is far cheaper than deepening through heuristic
            # leaves: after two quick iterations (a move in hand), search to the end
            direct = (free <= solve_lines or solve) and depth > 2 and max_depth is None
            sdepth = PROVEN if direct else depth
            if prev:
                order = [r.action for r in sorted(prev.values(), key=_sort_key(index))]
            if first >= 0 and direct and order[0] != first and first in order:
                # the best move of a proof already in the table: the others only need bounds
                order.remove(first)
                order.insert(0, first)
            h_iter = searcher.horizon
            res: dict[int, RootMove] = {}
            exact_vals: list[int] = []
            for ln in order:
                h0 = searcher.horizon
                if len(exact_vals) >= k:
                    alpha = exact_vals[k - 1]
                    v = searcher.child_value(drawn, ln, alpha, alpha + 1, sdepth - 1)
                    if v > alpha:
                        if direct:
                            v = _mtd(searcher, drawn, ln, sdepth - 1, v, v, INF)
                        else:
                            v = searcher.child_value(drawn, ln, alpha, INF, sdepth - 1)
                        bound = _EXACT if v > alpha else _UPPER
                    else:
                        bound = _UPPER
                elif direct:
                    # the first move of a proof: zero-window searches from 0 (MTD(f); the
                    # first pass says who wins), the fewest nodes of the windows measured
                    # (docs/benchmarks.md, the Dots-and-Boxes search)
                    h_proof = searcher.horizon

                    def note(lo: int, hi: int, ln: int = ln, h_proof: int = h_proof) -> None:
                        # a pass's proven bound, kept if the deadline stops the next one
                        if partial is not None and searcher.horizon == h_proof:
                            partial[ln] = (RootMove(ln, lo, _LOWER, True) if lo > -INF
                                           else RootMove(ln, hi, _UPPER, True))
                    v = _mtd(searcher, drawn, ln, sdepth - 1, guess if ln == first else 0,
                             -INF, INF, note)
                    bound = _EXACT
                else:
                    v = searcher.child_value(drawn, ln, -INF, INF, sdepth - 1)
                    bound = _EXACT
                r = RootMove(ln, v, bound, searcher.horizon == h0)
                res[ln] = r
                if partial is not None:
                    partial[ln] = r
                if bound is _EXACT:
                    exact_vals.append(v)
                    exact_vals.sort(reverse=True)
            solved = searcher.horizon == h_iter
            if solved:
                depth = max(depth, free)
            if dominant:
                cap_dominated(res, dominant)
            prev = res
            if direct:
                depth = max(depth, free)
            yield _depth_result(depth, res, solved, searcher)
            if solved:
                break
            if max_depth is not None and depth >= max_depth:
                return
            if depth >= free:
                return
            if searcher.nodes == last_nodes:
                break
            last_nodes = searcher.nodes
        if not refine:
            return
        # solved: give every move an exact value, best candidates first
        for r in sorted(prev.values(), key=_sort_key(index)):
            if r.bound == _EXACT:
                continue
            v = searcher.child_value(drawn, r.action, -INF, INF, PROVEN)
            nr = RootMove(r.action, v, _EXACT, True)
            prev[r.action] = nr
            if partial is not None:
                partial[r.action] = nr
            yield _depth_result(depth, prev, True, searcher, refined=True)
    except SearchAborted:
        return


def _mtd_beta(guess: int, lo: int, hi: int) -> int:
    """The next MTD(f) window ``[beta - 1, beta]`` for a value known to lie in ``[lo, hi]``
    (``lo < hi``), tested at ``guess``: it proves a new bound whichever way it fails."""
    g = min(max(guess, lo), hi)
    return min(g + 1 if g <= lo else g, hi)


def _mtd(searcher: SearchSession, drawn: int, line: int, depth: int, guess: int,
         lo: int, hi: int, on_bound: Callable[[int, int], None] | None = None) -> int:
    """Exact value of drawing ``line`` (known to lie in ``[lo, hi]``) by a sequence of
    zero-window searches starting at ``guess`` (MTD(f), Plaat et al.); the TT keeps the
    bounds between the passes. ``on_bound(lo, hi)`` after each pass that leaves a gap."""
    g = guess
    while lo < hi:
        beta = _mtd_beta(g, lo, hi)
        v = searcher.child_value(drawn, line, beta - 1, beta, depth)
        if v >= beta:
            lo = v
        else:
            hi = v
        g = v
        if on_bound is not None and lo < hi:
            on_bound(lo, hi)
    return lo


def dominant_moves(searcher: SearchSession, drawn: int) -> frozenset[int]:
    """The root moves that the search's capture rules prove at least as good as every other
    legal line of ``drawn`` (empty when no box can be taken).

    A capture the search would force (a capturable box that is not a decision point) is
    optimal: drawing it is worth its boxes plus the rest, and no other line is worth more; of
    several, the first the capture phase takes stands for them. With only decision points,
    taking (and, at a single decision point, the decline) dominates every other line, as
    inside the search. So every other move's value is at most the best of these."""
    t = searcher.t
    vals = t.valences(drawn)
    if 3 not in vals:
        return frozenset()
    _nd, _gained, taken, decisions = searcher.capture_phase(drawn, vals[:])
    if taken:
        return frozenset((taken[0],))
    moves = {d[0] for d in decisions}
    if len(decisions) == 1:
        moves.add(decisions[0][1])
    return frozenset(moves)


def cap_dominated(res: dict[int, RootMove], dominant: frozenset[int]) -> None:
    """Cap the value of every move outside ``dominant`` at the best value of the dominant
    moves in ``res`` (in place). A capped move's new value is a proven upper bound when that
    best value is proven exact, else an estimate."""
    best = None
    for ln in dominant:
        r = res.get(ln)
        if r is not None and (best is None or r.value > best.value):
            best = r
    if best is None:
        return
    proven = best.solved and best.bound == _EXACT
    for ln, r in res.items():
        if ln not in dominant and r.value > best.value:
            res[ln] = (RootMove(ln, best.value, _UPPER, True) if proven
                       else RootMove(ln, best.value, _ESTIMATE, False))


class RootProof:
    """A proof of a position's value by zero-window searches to the end of the game (MTD(f),
    Plaat et al.) that a node budget may cut short and a later :meth:`attempt` resumes: the
    table keeps what the interrupted pass had proven, and the pass is resumed with the same
    window.

    ``lo`` / ``hi``: the value's proven bounds so far (``-INF`` / ``INF``: none); ``guess``:
    the first window's value, replaced by each completed pass's result."""

    def __init__(self, searcher: SearchSession, drawn: int, guess: int = 0) -> None:
        self.searcher = searcher
        self.drawn = drawn
        self.lo, self.hi = -INF, INF
        self.guess = guess

    @property
    def proven(self) -> bool:
        return self.lo == self.hi

    def attempt(self, nodes: int | None = None) -> bool:
        """Search on until the value is proven, the searcher's deadline passes, or ``nodes``
        more nodes are searched (None: no budget). Returns whether the value is proven."""
        s = self.searcher
        s.max_nodes = None if nodes is None else s.nodes + nodes
        try:
            while self.lo < self.hi:
                beta = _mtd_beta(self.guess, self.lo, self.hi)
                v = s.search(self.drawn, beta - 1, beta, PROVEN)
                if v >= beta:
                    self.lo = v
                else:
                    self.hi = v
                self.guess = v
        except SearchAborted:
            pass
        finally:
            s.max_nodes = None
        return self.lo == self.hi


def _proven_value(searcher: SearchSession, drawn: int) -> tuple[int, int]:
    """The bounds of ``drawn``'s value for the player to move that the table holds as proven
    (``(-INF, INF)`` when none): the forced captures' boxes plus the entry of the position
    after them, as the search stores it."""
    t = searcher.t
    vals = t.valences(drawn)
    gained = 0
    if 3 in vals:
        drawn, gained, _lines, _dec = searcher.capture_phase(drawn, vals)
    if drawn == t.full:
        return gained, gained
    key, _s = t.key(drawn, searcher.symmetry)
    e = searcher.tt.get(key)
    if e is None or e[0] < PROVEN:
        return -INF, INF
    lo = gained + e[1] if e[1] > -INF else -INF
    hi = gained + e[2] if e[2] < INF else INF
    return lo, hi


def _proven_move_bounds(searcher: SearchSession, drawn: int, line: int) -> tuple[int, int]:
    """The proven bounds of drawing ``line`` in ``drawn``, from the table (see
    :func:`_proven_value`)."""
    c = searcher.t.completes(drawn, line)
    lo, hi = _proven_value(searcher, drawn | (1 << line))
    if c:
        return (c + lo if lo > -INF else -INF), (c + hi if hi < INF else INF)
    return (-hi if hi < INF else -INF), (-lo if lo > -INF else INF)


def _static_values(t: Tables, drawn: int, lines) -> dict[int, int]:
    """No-search guesses for moves that were never searched: the boxes a move takes, minus
    the size of what it hands over."""
    vals = t.valences(drawn)
    size: dict[int, int] = {}
    for _loop, n, chain, _ind in chain_lines(t, drawn, vals):
        for ln in chain:
            size[ln] = max(size.get(ln, 0), n)
    out = {}
    for ln in lines:
        c = t.completes(drawn, ln)
        if c:
            out[ln] = c
        else:
            give = sum(1 for b in t.line_boxes[ln] if vals[b] == 2)
            out[ln] = -max(size.get(ln, 0), give) if give else 0
    return out


def _drawn_of(state, t: Tables) -> int:
    d = state.drawn
    if isinstance(d, int):
        return d
    if isinstance(d, str):
        return sum(1 << i for i, ch in enumerate(d) if ch == "1")
    mask = 0
    for item in d:
        if isinstance(item, int):
            mask |= 1 << item
        else:
            mask |= 1 << t.geo.line_id(*item)
    return mask


# The search recurses once per line it draws, two frames each (the node's ``search`` and its
# ``node_children`` phase, which calls the child's ``search``). Frames it may stack besides: the
# driver above it (``analyse_position`` down to ``child_value``) and the helpers below its
# deepest node (the capture phase, the chain walks, the evaluation and the chain DP, whose
# recursion is bounded by the chains left, so by the lines the search did not draw).
_FRAMES_PER_LINE = 2
_EXTRA_FRAMES = 50


def _stack_depth() -> int:
    """The number of frames on the calling thread's stack."""
    f = sys._getframe(1)
    n = 1
    while f is not None:
        n += 1
        f = f.f_back
    return n


def analyse_position(w: int, h: int, drawn: int, limit: Limit | None = None,
                     multipv: int | None = None,
                     on_progress: Callable[[Progress], None] | None = None,
                     tt: TranspositionTable | None = None, symmetry: bool = True,
                     game: str = GAME_NAME, start: float | None = None,
                     solve: bool | None = None, caches: DotsCaches | None = None,
                     core: str | None = None, threads: int = 1,
                     evaluation: str | None = None) -> Analysis:
    """``analyse`` on a bare bitboard (used by the benchmarks and tests). ``start``: the
    ``time.perf_counter()`` the time limit counts from (default: now). ``solve``: aim for a
    proof from the third iteration on (default: when there is no limit at all). ``caches``:
    the board size's :class:`~engine.dots.search.caches.DotsCaches` to read and fill (default: a
    fresh one, dropped afterwards); ``tt``: a (Python) table to use instead of its own.
    ``core``: ``"c"`` or ``"python"`` (default: ``"c"`` when the compiled core is built and
    takes the board, unless ``tt`` is given; see :func:`compiled.resolve`, which raises
    ``ValueError`` for a core that cannot run). ``threads``: the threads the compiled core's
    search may run (see :mod:`compiled`; at most ``compiled.MAX_THREADS``); the Python search
    runs on one whatever it says. ``evaluation``: the horizon evaluation, ``"learned"`` or
    ``"fill"`` (default: ``learned`` where the board has a model; see
    :func:`~engine.dots.search.learned.resolve_evaluation`, which raises ``ValueError`` for
    one that cannot run).

    The search recurses once per line it draws (two frames each). When the interpreter's
    recursion limit leaves too few frames for that (the frames in use, two per undrawn line
    and a margin: more than the default 1000 only past about 450 undrawn lines, or from a
    deep caller), it is raised for the duration of this call and put back before it returns
    (unless something else changed it meanwhile). The limit is process-wide: a thread that
    runs another deep search at the same time must not rely on it."""
    all_lines = (1 << ((h + 1) * w + h * (w + 1))) - 1
    need = _stack_depth() + _FRAMES_PER_LINE * (all_lines & ~drawn).bit_count() + _EXTRA_FRAMES
    old = sys.getrecursionlimit()
    if old >= need:
        return _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry,
                                 game, start, solve, caches, core, threads, evaluation)
    sys.setrecursionlimit(need)
    try:
        return _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry,
                                 game, start, solve, caches, core, threads, evaluation)
    finally:
        if sys.getrecursionlimit() == need:
            sys.setrecursionlimit(old)


def _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry, game, start,
                      solve, caches, core, threads, evaluation) -> Analysis:
    if start is None:
        start = time.perf_counter()
    limit = limit or Limit()
    t = tables(w, h)
    core = compiled.resolve("python" if core is None and tt is not None else core, t)
    deadline = deadline_of(start, limit.time_ms)
    legal = bits(t.full & ~drawn)
    if not legal:
        return Analysis(game=game, best_move=None, value=0, exact=True, bound=Bound.EXACT,
                        lower=0, upper=0, time_ms=(time.perf_counter() - start) * 1000,
                        core=core)
    if core == "c":
        searcher = CompiledSearcher(t, symmetry=symmetry, deadline=deadline,
                                    max_nodes=limit.nodes, caches=caches,
                                    threads=compiled.threads_of(threads),
                                    evaluation=evaluation)
    else:
        searcher = Searcher(t, tt=tt, symmetry=symmetry, deadline=deadline,
                            max_nodes=limit.nodes, caches=caches, evaluation=evaluation)
    try:
        return _search_and_answer(searcher, drawn, legal, limit, multipv, on_progress, game,
                                  start, deadline, solve, core)
    finally:
        searcher.close()


def _search_and_answer(searcher: SearchSession, drawn: int, legal: list[int], limit: Limit,
                       multipv, on_progress, game: str, start: float, deadline, solve,
                       core: str) -> Analysis:
    """The search of :func:`analyse_position` on ``searcher``, and its answer."""
    t = searcher.t
    moves_of = t.moves
    max_depth = limit.depth
    if max_depth is not None and max_depth < 1:
        max_depth = 1
    dominant = dominant_moves(searcher, drawn)

    def report(result: DepthResult) -> None:
        if on_progress is not None and not result.refined:
            best = result.best
            on_progress(Progress(depth=result.depth, best_move=moves_of[best.action],
                                 value=best.value, exact=result.solved and best.solved,
                                 nodes=result.nodes,
                                 time_ms=(time.perf_counter() - start) * 1000))

    partial: dict[int, RootMove] = {}
    proof = None
    if solve is None:
        solve = limit.time_ms is None and limit.nodes is None and limit.depth is None
    if (not solve and deadline is not None and max_depth is None and limit.nodes is None
            and len(legal) > SOLVE_LINES):
        last, proof = anytime(searcher, drawn, multipv, partial, start, deadline, dominant,
                              report)
    else:
        last = None
        for result in iterate(searcher, drawn, multipv, max_depth, refine=multipv is None,
                              partial=partial, solve=solve, dominant=dominant):
            last = result
            report(result)
            if deadline is not None and time.perf_counter() >= deadline:
                break
    ranked, lower, upper, depth = _assemble(searcher, drawn, legal, last, partial, proof,
                                            dominant)
    best = ranked[0]
    if lower == upper:
        value, bound = lower, Bound.EXACT
    else:
        value = min(max(best.value, lower), upper)
        bound = (Bound.LOWER if value == lower else Bound.UPPER if value == upper
                 else Bound.ESTIMATE)
    if multipv is not None:
        ranked = ranked[:multipv]
    try:
        pv_lines = searcher.principal_variation(drawn, best.action)
    except RecursionError:  # pragma: no cover - defensive
        pv_lines = [best.action]
    elapsed = (time.perf_counter() - start) * 1000
    return Analysis(
        game=game, best_move=moves_of[best.action], value=value, exact=bound == Bound.EXACT,
        bound=bound, lower=_finite(lower), upper=_finite(upper),
        pv=[moves_of[ln] for ln in pv_lines], depth=depth, nodes=searcher.nodes,
        nps=int(searcher.nodes / (elapsed / 1000)) if elapsed > 0 else 0, time_ms=elapsed,
        tt_hits=searcher.tt_hits, core=core,
        moves=[MoveValue(move=moves_of[r.action], value=r.value, exact=r.bound == Bound.EXACT,
                         bound=r.bound, lower=_finite(r.lower), upper=_finite(r.upper),
                         depth=r.depth)
               for r in ranked])


def anytime(searcher: SearchSession, drawn: int, multipv: int | None, partial: dict,
            start: float, deadline: float, dominant: frozenset[int],
            report: Callable[[DepthResult], None]) -> tuple[DepthResult | None, RootProof]:
    """The timed analysis of a position too big for a direct proof: heuristic deepening and
    proof attempts, interleaved on one table until the root value is proven or ``deadline``.

    Two heuristic iterations first (a move in hand, and the proof's first guess); then a
    proof attempt of ``FIRST_PROOF_NODES`` nodes, an iteration, an attempt of twice the
    nodes, and so on, while the iterations have used less than ``DEEPENING_SHARE`` of the
    time (an iteration is cut short where it would use more) and can still deepen; after
    that the proof runs to the deadline. Once the value is proven, the usual proof iterations
    (:func:`iterate` with ``solve``) give the root moves their values from the table, so the
    answer is exact at once.

    Returns the last iteration worth reporting (the deepest heuristic one, or the proven one)
    and the proof with its bounds; ``partial`` receives the root moves' results as
    :func:`iterate` gives them (only proven ones from the proof iterations). ``report`` is
    called with every iteration's result."""
    perf = time.perf_counter

    def expired() -> bool:
        return perf() >= deadline

    allowance = DEEPENING_SHARE * max(0.0, deadline - start)
    used = 0.0
    last: DepthResult | None = None
    deepening: Iterator[DepthResult] | None = iterate(
        searcher, drawn, multipv, refine=False, partial=partial, solve_lines=0,
        dominant=dominant)

    def deepen(until: float) -> None:
        nonlocal used, last, deepening
        searcher.deadline = until
        t0 = perf()
        try:
            result = next(deepening, None)
        finally:
            searcher.deadline = deadline
            used += perf() - t0
        if result is None:
            deepening = None
            return
        last = result
        report(result)
        if result.solved:
            deepening = None

    for _ in range(2):
        if deepening is not None and not expired():
            deepen(deadline)
    proof = RootProof(searcher, drawn, last.best.value if last is not None else 0)
    budget = (FIRST_PROOF_NODES if isinstance(searcher, CompiledSearcher)
              else max(1, FIRST_PROOF_NODES // 50))
    solved = last is not None and last.solved
    while not solved and not expired():
        if proof.attempt(budget if deepening is not None else None):
            break
        budget *= 2
        if deepening is not None:
            deepen(min(deadline, perf() + max(0.0, allowance - used)))
            solved = last is not None and last.solved
    if not (solved or proof.proven) or expired():
        return last, proof
    # proven: the proof iterations find the moves' values in the table
    found: dict[int, RootMove] = {}
    first = searcher.best_line(drawn)
    for result in iterate(searcher, drawn, multipv, refine=multipv is None, partial=found,
                          solve=True, first=first, guess=proof.lo if proof.proven else 0,
                          dominant=dominant):
        if result.solved or last is None or result.depth >= last.depth:
            last = result
            report(result)
        if expired():
            break
    partial.update((ln, r) for ln, r in found.items() if r.solved)
    return last, proof


@dataclass(slots=True)
class _Ranked:
    """A root move as reported: its value, the kind of bound it is, its proven bounds, and
    for an estimate the depth of the search it comes from."""

    action: int
    value: int
    bound: Bound
    lower: int
    upper: int
    dominant: bool
    order: int
    depth: int | None


#: ties of value rank an exact value first, then a lower bound, an estimate, an upper bound
_BOUND_ORDER = (_EXACT, _LOWER, _ESTIMATE, _UPPER)


def _finite(v: int) -> int | None:
    return v if -INF < v < INF else None


def _assemble(searcher: SearchSession, drawn: int, legal: list[int], last: DepthResult | None,
              partial: dict[int, RootMove], proof: RootProof | None,
              dominant: frozenset[int]) -> tuple[list[_Ranked], int, int, int]:
    """The root moves, best first, with the root value's proven bounds and the depth.

    One scale: every heuristic value comes from one search, the last complete iteration
    (depth ``D``; the moves' static guesses, depth 0, when none completed). An iteration cut
    short contributes only what it proved, never its heuristic values, which are of another
    depth. Each move's value is then capped by the dominant moves (:func:`dominant_moves`)
    and put within the bounds proven for it (its own search, the table's proven entries, the
    root proof's upper bound): an estimate never contradicts what is proven, and a value
    moved onto a proven bound is reported as that bound. The best move is the first: the
    highest value, ties broken by the kind of value (:data:`_BOUND_ORDER`)."""
    t = searcher.t
    results: dict[int, RootMove] = {}
    depth = 0
    if last is not None:
        by_line = {r.action: r for r in last.moves}
        results = {ln: by_line[ln] for ln in last.searched}
        depth = last.depth
    for ln, r in partial.items():
        old = results.get(ln)
        # a proven value or bound beats a heuristic one
        if r.solved and (old is None or (r is not old and (r.bound == _EXACT
                                                           or not old.solved))):
            results[ln] = r
    missing = [ln for ln in legal if ln not in results]  # none when an iteration completed
    if missing:
        guesses = _static_values(t, drawn, missing)
        for ln in missing:
            results[ln] = RootMove(ln, guesses[ln], _ESTIMATE, False)
    if dominant:
        cap_dominated(results, dominant)
    bounds: dict[int, tuple[int, int]] = {}
    root_hi = proof.hi if proof is not None else INF
    # past the compiled core's boards a look-up costs about 0.1 ms (20x20 with 540 lines
    # left: 45 ms, ten times the deadline's margin) and a proof there rarely stores anything
    probe = t.nl <= SLOW_NODE_LINES
    for ln, r in results.items():
        lo, hi = -INF, INF
        if r.solved:
            if r.bound == _EXACT:
                lo = hi = r.value
            elif r.bound == _LOWER:
                lo = r.value
            elif r.bound == _UPPER:
                hi = r.value
        if lo != hi:
            tlo, thi = _proven_move_bounds(searcher, drawn, ln) if probe else (-INF, INF)
            lo, hi = max(lo, tlo), min(hi, thi, root_hi)
        bounds[ln] = (lo, hi)
    if dominant:
        cap = max(bounds[ln][1] for ln in dominant if ln in bounds)
        for ln, (lo, hi) in bounds.items():
            if ln not in dominant and hi > cap:
                bounds[ln] = (lo, cap)
    ranked = []
    for i, (ln, r) in enumerate(results.items()):
        lo, hi = bounds[ln]
        if lo == hi:
            v, b = lo, _EXACT
        else:
            v = min(max(r.value, lo), hi)
            b = _LOWER if v == lo else _UPPER if v == hi else _ESTIMATE
        ranked.append(_Ranked(ln, v, b, lo, hi, ln in dominant, i,
                              depth if b is _ESTIMATE else None))
    ranked.sort(key=lambda r: (-r.value, _BOUND_ORDER.index(r.bound), not r.dominant, r.order))
    lower = max(r.lower for r in ranked)
    upper = max(r.upper for r in ranked)
    if proof is not None:
        lower, upper = max(lower, proof.lo), min(upper, proof.hi)
    if lower == upper:
        # a proven value is one searched to the end, even when the deadline cut the proof
        # iterations short and the depth searched is still the last heuristic iteration's
        depth = max(depth, (t.full & ~drawn).bit_count())
        if ranked[0].lower != lower:
            # lead with a move proven to reach the value, when one is known
            for i, r in enumerate(ranked):
                if r.lower == lower:
                    ranked.insert(0, ranked.pop(i))
                    break
    return ranked, lower, upper, depth


def analyse(state, limit: Limit | None = None, multipv: int | None = None,
            on_progress: Callable[[Progress], None] | None = None,
            cache=None, start: float | None = None, core: str | None = None,
            threads: int = 1, evaluation: str | None = None) -> Analysis:
    """Analyse a Dots-and-Boxes ``state`` (a :class:`~engine.dots.state.DotsState`, or
    anything with ``game.width/height`` and ``drawn``) within ``limit``; see
    ``engine.analysis.analyse`` (``mate_in`` is always None: the value is the box margin).
    ``cache``: an ``engine.analysis.SearchCache`` whose caches for this board size (a
    :class:`~engine.dots.search.caches.DotsCaches`: the TT, the evaluation's and the chain DP's
    memos) the search starts from and leaves its entries in. ``start``: the
    ``time.perf_counter()`` the time limit counts from (default: now). ``core``,
    ``threads`` and ``evaluation``: see :func:`analyse_position`."""
    if start is None:
        start = time.perf_counter()
    game = state.game
    w, h = game.width, game.height
    t = tables(w, h)
    caches = (cache.owner((GAME_NAME, w, h), make_caches(w, h, cache.table_bytes))
              if cache is not None else None)
    return analyse_position(w, h, _drawn_of(state, t), limit, multipv, on_progress,
                            game=getattr(game, "name", GAME_NAME), start=start, caches=caches,
                            core=core, threads=threads, evaluation=evaluation)
