"""Time-bounded Dots-and-Boxes analysis: the driver around :mod:`search_core`.

``iterate(...)`` is iterative deepening as a generator (sunfish style): it yields one
:class:`~engine.search.DepthResult` per completed depth, then, once the root is solved, one
(``refined``) per move whose value it refines to an exact one. The caller owns time control;
``analyse`` is that caller for the engine's API: it stops at the limit (the hard deadline is
also enforced inside the search, which aborts mid-iteration) and returns the best answer found
so far.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator

from ..analysis import Analysis, Bound, Limit, MoveValue, Progress
from ..search import DepthResult, RootMove, SearchAborted, deadline_of
from . import compiled
from .caches import DotsCaches, make_caches
from .chain_dp import components
from .geometry import bits
from .search_board import Tables, tables
from .search_core import CompiledSearcher, Searcher
from .search_tt import INF, PROVEN, TranspositionTable

GAME_NAME = "dots-and-boxes"
# with this many undrawn lines or fewer, search straight to the end after two iterations
SOLVE_LINES = 26
# play the best move of a heuristic iteration cut short by the deadline when it has one
USE_PARTIAL = True
# under a time limit, with more than SOLVE_LINES and at most PROOF_LINES undrawn lines, first
# try to prove the position's value outright (one full-window search to the end) within a
# share of the time (``_proof_share``); the rest, or all of it when the proof fails, goes to
# the usual iterative deepening, which the proven TT entries help. Without it the deepening
# never proves a 28-31-line 5x5 position that a direct search solves in 0.03 s (the pruned
# sacrifices of long chains keep every iteration heuristic). 5x5 mid-game positions vs
# greedy, summed exact regret at 0.2 s over 132 positions of 28-38 undrawn lines: 198-212
# without, 124 with this time schedule (none left at 28-33 lines).
PROOF_LINES = 36


def _proof_share(free: int) -> float:
    return 0.75 if free <= 33 else 0.6 if free <= 35 else 0.5


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


def _proven_bound(r: RootMove) -> Bound:
    """What ``r`` proves about its move's value: its bound when no heuristic value was used to
    find it, else only an estimate."""
    return r.bound if r.solved else _ESTIMATE


def _depth_result(depth: int, res: dict[int, RootMove], solved: bool, searcher: Searcher,
                  refined: bool = False) -> DepthResult:
    """``res`` (line -> result, in the order searched) as a DepthResult, best first."""
    return DepthResult(depth, tuple(sorted(res.values(), key=_rank_key)), tuple(res),
                       solved, searcher.nodes, searcher.tt_hits, refined)


def iterate(searcher: Searcher, drawn: int, multipv: int | None = None,
            max_depth: int | None = None, refine: bool = True,
            partial: dict | None = None,
            solve_lines: int | None = None, solve: bool = False,
            first: int = -1) -> Iterator[DepthResult]:
    """Iterative deepening from ``drawn``. ``multipv``: how many best moves get exact
    (full-window) values in every iteration (default 1: the others get upper bounds).
    ``partial`` (a dict) receives each root move's result as soon as it is known, so a caller
    whose search was aborted mid-iteration can still use them. ``solve``: after two
    iterations, search straight to the end whatever the size (used when there is no time
    limit: deepening through heuristic leaves only slows a full proof down); without it, so
    does a position with ``solve_lines`` undrawn lines or fewer (default: the module's
    ``SOLVE_LINES`` when called). ``first``: a root move to put first in the proof iterations
    (the best move of a proof already in the table)."""
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
                    # first pass says who wins). Nodes to solve 3x3 / 2x4 / 2x5 / 3x4, this
                    # vs one full window vs MTD(f) from the shallow iterations' value:
                    # 80k/54k/901k/6.48M, 81k/46k/932k/6.61M, 74k/63k/901k/8.13M.
                    h_proof = searcher.horizon

                    def note(lo: int, hi: int, ln: int = ln, h_proof: int = h_proof) -> None:
                        # a pass's proven bound, kept if the deadline stops the next one
                        if partial is not None and searcher.horizon == h_proof:
                            partial[ln] = (RootMove(ln, lo, _LOWER, True) if lo > -INF
                                           else RootMove(ln, hi, _UPPER, True))
                    v = _mtd(searcher, drawn, ln, sdepth - 1, 0, -INF, INF, note)
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
            prev = res
            if direct:
                depth = max(depth, free)
            yield _depth_result(depth, res, solved, searcher)
            if solved:
                break
            if max_depth is not None and depth >= max_depth:
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


def _mtd(searcher: Searcher, drawn: int, line: int, depth: int, guess: int,
         lo: int, hi: int, on_bound: Callable[[int, int], None] | None = None) -> int:
    """Exact value of drawing ``line`` (known to lie in ``[lo, hi]``) by a sequence of
    zero-window searches starting at ``guess`` (MTD(f), Plaat et al.); the TT keeps the
    bounds between the passes. ``on_bound(lo, hi)`` after each pass that leaves a gap."""
    g = min(max(guess, lo), hi)
    while lo < hi:
        beta = g + 1 if g <= lo else g
        if beta > hi:
            beta = hi
        v = searcher.child_value(drawn, line, beta - 1, beta, depth)
        if v >= beta:
            lo = v
        else:
            hi = v
        g = v
        if on_bound is not None and lo < hi:
            on_bound(lo, hi)
    return lo


def _static_values(t: Tables, drawn: int, lines) -> dict[int, int]:
    """No-search guesses for moves that were never searched: the boxes a move takes, minus
    the size of what it hands over."""
    vals = t.valences(drawn)
    size: dict[int, int] = {}
    for _loop, n, comp_lines, _ind in components(t, drawn, vals):
        for ln in comp_lines:
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


# The search recurses once per line it draws. Frames it may stack besides: the driver above it
# (``analyse_position`` down to ``child_value``) and the helpers below its deepest node (the
# capture phase, the chain walks, the evaluation and the chain DP, whose recursion is bounded
# by the components left, so by the lines the search did not draw).
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
                     core: str | None = None) -> Analysis:
    """``analyse`` on a bare bitboard (used by the benchmarks and tests). ``start``: the
    ``time.perf_counter()`` the time limit counts from (default: now). ``solve``: aim for a
    proof from the third iteration on (default: when there is no limit at all). ``caches``:
    the board size's :class:`~engine.dots.caches.DotsCaches` to read and fill (default: a
    fresh one, dropped afterwards); ``tt``: a (Python) table to use instead of its own.
    ``core``: ``"c"`` or ``"python"`` (default: ``"c"`` when the compiled core is built and
    takes the board, unless ``tt`` is given; see :func:`compiled.resolve`, which raises
    ``ValueError`` for a core that cannot run).

    The search recurses once per line it draws. When the interpreter's recursion limit
    leaves too few frames for that (the frames in use, the undrawn lines and a margin: more
    than the default 1000 only past about 900 undrawn lines, or from a deep caller), it is
    raised for the duration of this call and put back before it returns (unless something
    else changed it meanwhile). The limit is process-wide: a thread that runs another deep
    search at the same time must not rely on it."""
    all_lines = (1 << ((h + 1) * w + h * (w + 1))) - 1
    need = _stack_depth() + (all_lines & ~drawn).bit_count() + _EXTRA_FRAMES
    old = sys.getrecursionlimit()
    if old >= need:
        return _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry,
                                 game, start, solve, caches, core)
    sys.setrecursionlimit(need)
    try:
        return _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry,
                                 game, start, solve, caches, core)
    finally:
        if sys.getrecursionlimit() == need:
            sys.setrecursionlimit(old)


def _analyse_position(w, h, drawn, limit, multipv, on_progress, tt, symmetry, game, start,
                      solve, caches, core) -> Analysis:
    if start is None:
        start = time.perf_counter()
    limit = limit or Limit()
    t = tables(w, h)
    core = compiled.resolve("python" if core is None and tt is not None else core, t)
    deadline = deadline_of(start, limit.time_ms)
    if core == "c":
        searcher = CompiledSearcher(t, symmetry=symmetry, deadline=deadline,
                                    max_nodes=limit.nodes, caches=caches)
    else:
        searcher = Searcher(t, tt=tt, symmetry=symmetry, deadline=deadline,
                            max_nodes=limit.nodes, caches=caches)
    legal = bits(t.full & ~drawn)
    moves_of = t.moves
    if not legal:
        return Analysis(game=game, best_move=None, value=0, exact=True, bound=Bound.EXACT,
                        time_ms=(time.perf_counter() - start) * 1000, core=core)
    partial: dict[int, RootMove] = {}
    last: DepthResult | None = None
    max_depth = limit.depth
    if max_depth is not None and max_depth < 1:
        max_depth = 1
    first = -1
    if solve is None:
        solve = limit.time_ms is None and limit.nodes is None and limit.depth is None
        free = len(legal)
        if (not solve and deadline is not None and max_depth is None and free > SOLVE_LINES
                and free <= PROOF_LINES):
            # a proof attempt within a share of the time: when it succeeds, the iterations
            # below go straight to the end and find the proof in the table
            searcher.deadline = start + _proof_share(free) * (deadline - start)
            try:
                searcher.search(drawn, -INF, INF, PROVEN)
                solve = True
                first = searcher.best_line(drawn)
            except SearchAborted:
                pass
            searcher.deadline = deadline
    for result in iterate(searcher, drawn, multipv, max_depth, refine=multipv is None,
                          partial=partial, solve=solve, first=first):
        last = result
        if not result.refined and on_progress is not None:
            best = result.best
            on_progress(Progress(depth=result.depth, best_move=moves_of[best.action],
                                 value=best.value, exact=result.solved and best.solved,
                                 nodes=result.nodes,
                                 time_ms=(time.perf_counter() - start) * 1000))
        if deadline is not None and time.perf_counter() >= deadline:
            break
    # assemble: the last complete iteration, improved by what an aborted deeper iteration
    # had already proven (heuristic values of different depths are not mixed; the aborted
    # iteration's best move, if it finished one, is played first: ``USE_PARTIAL``)
    # the last iteration's results in the order it searched them (ties keep that order)
    results: dict[int, RootMove] = {}
    if last is not None:
        by_line = {r.action: r for r in last.moves}
        results = {ln: by_line[ln] for ln in last.searched}
    depth = last.depth if last is not None else 0
    solved = last.solved if last is not None else False
    deeper: RootMove | None = None
    for ln, r in partial.items():
        old = results.get(ln)
        # a proven value or bound beats a heuristic one
        if old is None or (r is not old and r.solved and (r.bound == Bound.EXACT
                                                           or not old.solved)):
            results[ln] = r
        elif (USE_PARTIAL and r is not old and r.bound == Bound.EXACT and not solved
              and (deeper is None or r.value > deeper.value)):
            deeper = r
    missing = [ln for ln in legal if ln not in results]
    if missing:
        guesses = _static_values(t, drawn, missing)
        for ln in missing:
            results[ln] = RootMove(ln, guesses[ln], Bound.ESTIMATE, False)
    ranked = sorted(results.values(), key=_rank_key)
    if deeper is not None and not (ranked[0].solved and ranked[0].bound == Bound.EXACT):
        # the aborted iteration searched this move one ply deeper than the others and found
        # it the best of those it finished (the previous best first, then any that beat it)
        results[deeper.action] = deeper
        ranked = [deeper] + [r for r in ranked if r.action != deeper.action]
    best = ranked[0]
    best_bound = _proven_bound(best)
    others_ok = all(_proven_bound(r) in (Bound.EXACT, Bound.UPPER) and r.value <= best.value
                    for r in ranked[1:])
    if solved and best_bound == Bound.EXACT and others_ok:
        bound = Bound.EXACT
    elif best_bound in (Bound.EXACT, Bound.LOWER):
        # one move's value (or a lower bound of it) is proven, the others' are not bounded
        # by it: the position is worth at least that much
        bound = Bound.LOWER
    else:
        bound = Bound.ESTIMATE
    exact = bound == Bound.EXACT
    mv = []
    for r in ranked:
        b = _proven_bound(r)
        mv.append(MoveValue(move=moves_of[r.action], value=r.value, exact=b == Bound.EXACT,
                            bound=b))
    if multipv is not None:
        mv = mv[:multipv]
    try:
        pv_lines = searcher.principal_variation(drawn, best.action)
    except RecursionError:  # pragma: no cover - defensive
        pv_lines = [best.action]
    searcher.close()
    elapsed = (time.perf_counter() - start) * 1000
    return Analysis(
        game=game, best_move=moves_of[best.action], value=best.value, exact=exact, bound=bound,
        pv=[moves_of[ln] for ln in pv_lines], depth=depth, nodes=searcher.nodes,
        nps=int(searcher.nodes / (elapsed / 1000)) if elapsed > 0 else 0, time_ms=elapsed,
        tt_hits=searcher.tt_hits, moves=mv, core=core)


def analyse(state, limit: Limit | None = None, multipv: int | None = None,
            on_progress: Callable[[Progress], None] | None = None,
            cache=None, start: float | None = None, core: str | None = None) -> Analysis:
    """Analyse a Dots-and-Boxes ``state`` (a :class:`~engine.dots.state.DotsState`, or
    anything with ``game.width/height`` and ``drawn``) within ``limit``; see
    ``engine.analysis.analyse`` (``mate_in`` is always None: the value is the box margin).
    ``cache``: an ``engine.analysis.SearchCache`` whose caches for this board size (a
    :class:`~engine.dots.caches.DotsCaches`: the TT, the evaluation's and the chain DP's
    memos) the search starts from and leaves its entries in. ``start``: the
    ``time.perf_counter()`` the time limit counts from (default: now). ``core``: see
    :func:`analyse_position`."""
    if start is None:
        start = time.perf_counter()
    game = state.game
    w, h = game.width, game.height
    t = tables(w, h)
    caches = (cache.owner((GAME_NAME, w, h), make_caches(w, h, cache.table_bytes))
              if cache is not None else None)
    return analyse_position(w, h, _drawn_of(state, t), limit, multipv, on_progress,
                            game=getattr(game, "name", GAME_NAME), start=start, caches=caches,
                            core=core)
