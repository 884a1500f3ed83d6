"""Alpha-beta search for Extreme Tic-Tac-Toe.

Negamax with principal-variation search, iterative deepening, a transposition table keyed by
the Zobrist hash, move ordering (TT move, block-winning and blocking moves, penalties for
sending the opponent to a block it can win or to an open move, killers, history) and a
quiescence search over block-winning moves. A bonus move (rule 13) is searched at the same
depth as the block-winning move that earned it, and with the same sign: the same player moves.

Values inside the search are for the side to move, in evaluation units
(:mod:`engine.xttt.evaluate`):

* ``MATE - plies`` for a forced big-board pattern win (``-`` for a loss);
* ``±(POINTS_WIN + POINT_UNIT * d)`` for a forced full-board ending won (lost) by ``d``
  rule-16 points, ``0`` for one with equal points;
* anything else is a heuristic estimate, ``abs(value) <= MAX_EVAL``.

The analysis reports them through :func:`reported_value`: the distance of a pattern win goes
to ``mate_in`` and its value becomes that of its 68-0 result, :data:`WIN_VALUE`.

Every node records whether its value rests on a heuristic leaf; a root value that does not is
*solved* (this is how a forced draw is proven). :meth:`Searcher.iterate` is a generator
yielding one :class:`~engine.search.DepthResult` per completed depth; :func:`analyse` owns the
time control.
"""

from __future__ import annotations

import time

from ..analysis import Analysis, Bound, MoveValue, Progress, Proven
from ..errors import SearchAborted
from ..search import DepthResult, RootMove, SearcherBase, deadline_of
from .endgame import points_static
from .evaluate import CLOSED_BLOCK_VALUES, MAX_EVAL, PTS_HI, PTS_LO, BlockInfoCache, evaluate
from .state import FULL_BOARD, XtttState
from .symmetry import move_classes
from .tables import BLOCK_CELLS, CELL_BIT, CELL_BLOCK, CELL_LOCAL, FULL, IS_WIN, OPEN, WIN_POINTS

MATE = 1_000_000
MATE_BOUND = 900_000  # values beyond are pattern wins, distance-adjusted in the TT
POINTS_WIN = 500_000
POINT_UNIT = 1000  # value of one rule-16 point in a proven full-board ending
PROVEN = 400_000  # |value| >= PROVEN is a proven win / loss
#: The reported value of a forced pattern win: that of its result, 68-0 (:func:`reported_value`)
WIN_VALUE = POINTS_WIN + WIN_POINTS * POINT_UNIT
INF = 10_000_000
QDEPTH = 4  # plies of block-winning moves searched beyond the horizon
EXACT, LOWER, UPPER = 0, 1, 2  # transposition-table entry flags
TT_MAX = 1_500_000  # entries; past it only depth >= 2 results are stored, past twice it, none
_CHECK_EVERY = 256  # nodes between deadline checks
# move-ordering scores (history scores stay far below these)
_WINS, _BLOCKS, _KILLER, _SENDS, _OPENS = 1 << 40, 1 << 36, 1 << 35, 1 << 34, 1 << 33
assert MAX_EVAL < PROVEN < POINTS_WIN - WIN_POINTS * POINT_UNIT
assert WIN_VALUE < MATE_BOUND


def proven_of(value: int, solved: bool) -> Proven | None:
    """The outcome a search value proves (``win`` / ``loss`` / ``draw``), else None."""
    if value >= PROVEN:
        return Proven.WIN
    if value <= -PROVEN:
        return Proven.LOSS
    if solved:
        return Proven.WIN if value > 0 else Proven.LOSS if value < 0 else Proven.DRAW
    return None


def reported_value(value: int) -> tuple[float, int | None]:
    """``(value, mate_in)`` as an analysis reports a search value.

    A forced pattern win (``value > MATE_BOUND``, i.e. ``MATE - plies``) is reported as
    ``(WIN_VALUE, plies)``, a forced pattern loss as ``(-WIN_VALUE, -plies)``: the value of its
    result, 68-0, the same as a full-board ending won by all 68 points, so values stay on one
    scale (``|value| <= WIN_VALUE``) and the distance is in ``mate_in``, signed like a UCI
    ``score mate``. Any other value is reported as it is, with ``mate_in`` None.
    """
    if value > MATE_BOUND:
        return float(WIN_VALUE), MATE - value
    if value < -MATE_BOUND:
        return float(-WIN_VALUE), -(MATE + value)
    return float(value), None


class Searcher(SearcherBase):
    """Searches a private copy of a state. Not thread-safe; one per analysis.

    ``deadline`` / ``max_nodes`` and the counters: see :class:`~engine.search.SearcherBase`.
    ``symmetry``: search one root move per class of symmetric moves. ``blocks``: the cache of
    block values to use (default: a new one, owned by this searcher). ``tt`` (a dict, by
    Zobrist hash) holds at most ``2 * tt_max + 1`` entries: past ``tt_max`` only results of
    depth 2 or more are stored, past twice it none (``analyse`` lowers ``tt_max`` to fit a
    ``SearchCache``'s share).
    """

    def __init__(self, state: XtttState, deadline: float | None = None,
                 max_nodes: int | None = None, symmetry: bool = True,
                 blocks: BlockInfoCache | None = None) -> None:
        super().__init__(deadline, max_nodes)
        # the search never undoes past its root: the copy needs no history
        self.st = state.copy(history=False)
        self.symmetry = symmetry
        self.blocks = blocks if blocks is not None else BlockInfoCache()
        self._block_get = self.blocks.table.get  # the hot path's look-up, without a call
        self.tt: dict[int, tuple] = {}
        self.tt_max = TT_MAX
        self.killers: list[list[int]] = [[-1, -1] for _ in range(512)]
        self.history = [[0] * 256, [0] * 256]
        self._next_check = _CHECK_EVERY if max_nodes is None else min(_CHECK_EVERY, max_nodes)
        self.px = [0.0] * 16
        self.po = [0.0] * 16
        self.thr = [[0] * 16, [0] * 16]
        self._saved: list[tuple] = []  # block values before each move of the current line
        # (depth, cell, value) of the best root move of the unfinished depth when it beat the
        # exact value of that depth's first move (the previous best), else None
        self.partial: tuple[int, int, int] | None = None
        for b in range(16):
            self._refresh(b)

    # ------------------------------------------------------------------ bookkeeping

    def _refresh(self, b: int) -> None:
        st = self.st
        vx, vo, tx, to = self.blocks.values(st.block_codes[b], st.marks[0][b], st.marks[1][b])
        self.px[b] = vx
        self.po[b] = vo
        self.thr[0][b] = tx
        self.thr[1][b] = to

    def _do(self, i: int) -> None:
        """Play cell ``i`` and update the block values of its block (saved for undo)."""
        st = self.st
        st.play_unchecked(i)
        b = CELL_BLOCK[i]
        px, po, t0, t1 = self.px, self.po, self.thr[0], self.thr[1]
        self._saved.append((px[b], po[b], t0[b], t1[b]))
        status = st.block_codes[b]
        if status == OPEN:
            marks = st.marks
            mx = marks[0][b]
            mo = marks[1][b]
            info = self._block_get(mx << 16 | mo)
            if info is None:
                info = self.blocks.info(mx, mo)
            px[b], po[b], t0[b], t1[b] = info
        else:
            px[b], po[b], t0[b], t1[b] = CLOSED_BLOCK_VALUES[status]

    def _undo(self) -> None:
        b = CELL_BLOCK[self.st.undo_unchecked()]
        self.px[b], self.po[b], self.thr[0][b], self.thr[1][b] = self._saved.pop()

    def _check(self) -> None:
        self.check_limits()
        nxt = self.nodes + _CHECK_EVERY
        if self.max_nodes is not None:
            nxt = min(nxt, self.max_nodes)
        self._next_check = nxt

    def terminal(self, ply: int) -> int:
        """The value of the finished current position for the side to move, ``ply`` plies
        from the root (see the module docstring)."""
        st = self.st
        over = st.over
        if over != FULL_BOARD:
            return MATE - ply if over == st.to_move else ply - MATE
        me = st.to_move
        d = sum_points(st.won[me]) - sum_points(st.won[1 - me])
        if d == 0:
            return 0
        return (POINTS_WIN if d > 0 else -POINTS_WIN) + POINT_UNIT * d

    def static(self) -> int:
        """The heuristic value of the current position for the side to move (expected
        points, see :mod:`engine.xttt.endgame`, once no big-board pattern is possible)."""
        st = self.st
        won = st.won
        dec = st.decided
        if IS_WIN[FULL & ~(dec & ~won[0])] or IS_WIN[FULL & ~(dec & ~won[1])]:
            v = evaluate(self.px, self.po)
            return v if st.to_move == 0 else -v
        return points_static(st, self.px, self.po, self.thr)

    # ------------------------------------------------------------------ move ordering

    def ordered(self, moves: list[int], tt_move: int, ply: int) -> list[int]:
        """``moves`` best first: TT move, block wins, blocks of the opponent's threats,
        killers, then history; moves that send the opponent to a block it can win at once, or
        hand it an open move, go last."""
        st = self.st
        p = st.to_move
        mine = self.thr[p]
        theirs = self.thr[1 - p]
        status = st.block_codes
        hist = self.history[p]
        k1, k2 = self.killers[ply]
        scored = []
        append = scored.append
        for i in moves:
            b = CELL_BLOCK[i]
            bit = CELL_BIT[i]
            if mine[b] & bit:
                s = _WINS
            else:
                s = hist[i]
                if theirs[b] & bit:
                    s += _BLOCKS
                if i == k1 or i == k2:
                    s += _KILLER
                t = CELL_LOCAL[i]
                if status[t]:
                    s -= _OPENS
                elif theirs[t] and t != b:
                    s -= _SENDS
            append((s, i))
        scored.sort(reverse=True)
        out = [i for _, i in scored]
        if tt_move >= 0 and tt_move != out[0] and tt_move in moves:
            out.remove(tt_move)
            out.insert(0, tt_move)
        return out

    def _winning_cells(self) -> list[int]:
        """The legal cells that win a block for the side to move."""
        st = self.st
        thr = self.thr[st.to_move]
        status = st.block_codes
        last = st.last_action
        if last >= 0 and status[CELL_LOCAL[last]] == OPEN:
            blocks = (CELL_LOCAL[last],)
        else:
            blocks = range(16)
        out = []
        for b in blocks:
            m = thr[b]
            if m and status[b] == OPEN:
                cells = BLOCK_CELLS[b]
                for loc in range(16):
                    if m >> loc & 1:
                        out.append(cells[loc])
        return out

    # ------------------------------------------------------------------ search

    def _child(self, i: int, p: int, depth: int, alpha: int, beta: int, ply: int) -> int:
        """Value for player ``p`` of playing ``i`` (already played) with window (alpha, beta)."""
        if self.st.to_move == p:  # bonus move: same player, same depth, same sign
            return self._search(depth, alpha, beta, ply + 1)
        return -self._search(depth - 1, -beta, -alpha, ply + 1)

    def _qsearch(self, alpha: int, beta: int, ply: int, qdepth: int) -> int:
        self.nodes += 1
        if self.nodes >= self._next_check:
            self._check()
        st = self.st
        if st.over is not None:
            return self.terminal(ply)
        self.horizon += 1
        best = self.static()
        if best >= beta or qdepth <= 0:
            return best
        if best > alpha:
            alpha = best
        p = st.to_move
        for i in self._winning_cells():
            self._do(i)
            if st.to_move == p:
                v = self._qsearch(alpha, beta, ply + 1, qdepth - 1)
            else:
                v = -self._qsearch(-beta, -alpha, ply + 1, qdepth - 1)
            self._undo()
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if v >= beta:
                        break
        return best

    def _search(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        if depth <= 0:
            return self._qsearch(alpha, beta, ply, QDEPTH)
        self.nodes += 1
        if self.nodes >= self._next_check:
            self._check()
        st = self.st
        if st.over is not None:
            return self.terminal(ply)
        key = st.hash
        entry = self.tt.get(key)
        tt_move = -1
        if entry is not None:
            edepth, eflag, ev, tt_move, esolved = entry
            if esolved or edepth >= depth:
                if ev > MATE_BOUND:
                    ev -= ply
                elif ev < -MATE_BOUND:
                    ev += ply
                if eflag == EXACT or (eflag == LOWER and ev >= beta) or \
                        (eflag == UPPER and ev <= alpha):
                    self.tt_hits += 1
                    if not esolved:
                        self.horizon += 1
                    return ev
        h0 = self.horizon
        alpha0 = alpha
        p = st.to_move
        best = -INF
        best_move = -1
        first = True
        for i in self.ordered(st.legal_actions(), tt_move, ply):
            self._do(i)
            if first:
                v = self._child(i, p, depth, alpha, beta, ply)
                first = False
            else:
                v = self._child(i, p, depth, alpha, alpha + 1, ply)
                if alpha < v < beta:
                    v = self._child(i, p, depth, v, beta, ply)
            self._undo()
            if v > best:
                best = v
                best_move = i
                if v > alpha:
                    alpha = v
                    if v >= beta:
                        self.history[p][i] += depth * depth
                        ks = self.killers[ply]
                        if ks[0] != i:
                            ks[1] = ks[0]
                            ks[0] = i
                        break
        flag = LOWER if best >= beta else UPPER if best <= alpha0 else EXACT
        sv = best + ply if best > MATE_BOUND else best - ply if best < -MATE_BOUND else best
        tt = self.tt
        tt_max = self.tt_max
        if len(tt) < tt_max or key in tt or (depth > 1 and len(tt) < 2 * tt_max):
            tt[key] = (depth, flag, sv, best_move, self.horizon == h0)
        return best

    def _root(self, depth: int, order: list[int], want_exact: int,
              classes: dict[int, list[int]]) -> DepthResult:
        """Search the root moves ``order`` to ``depth``; the ``want_exact`` best get exact
        values. Each searched move stands for its class of symmetric moves in ``classes``."""
        st = self.st
        p = st.to_move
        h0 = self.horizon
        results: list[RootMove] = []
        exact_values: list[int] = []
        self.partial = None
        first_value = None
        for i in order:
            hm = self.horizon
            alpha = -INF if len(exact_values) < want_exact else exact_values[want_exact - 1]
            self._do(i)
            if alpha == -INF:
                v = self._child(i, p, depth, -INF, INF, 0)
            else:
                v = self._child(i, p, depth, alpha, alpha + 1, 0)
                if v > alpha:
                    v = self._child(i, p, depth, alpha, INF, 0)
            self._undo()
            exact = v > alpha
            if exact:
                exact_values.append(v)
                exact_values.sort(reverse=True)
                if first_value is None:
                    first_value = v
                elif v > first_value and (self.partial is None or v > self.partial[2]):
                    self.partial = (depth, i, v)
            solved = self.horizon == hm
            bound = Bound.EXACT if exact else Bound.UPPER
            results.extend(RootMove(j, v, bound, solved) for j in classes[i])
        self.partial = None
        results.sort(key=lambda m: (m.value, m.bound == Bound.EXACT), reverse=True)
        best = results[0]
        self.tt[st.hash] = (depth, EXACT, best.value, best.action, self.horizon == h0)
        return DepthResult(depth, tuple(results), tuple(order), self.horizon == h0, self.nodes,
                           self.tt_hits)

    def iterate(self, max_depth: int | None = None, multipv: int | None = None):
        """Yield a :class:`~engine.search.DepthResult` per completed depth 1, 2, ... (root
        moves best first: by value, exact values before upper bounds).

        Stops after ``max_depth``, once the root is solved or a pattern win / loss is found
        for the best move (with ``multipv``, for each of the ``multipv`` best), or silently
        when the deadline or node budget is reached inside an iteration. The state must not
        be terminal.
        """
        moves = self.st.legal_actions()
        if not moves:
            raise ValueError("no legal moves: the game is over")
        order = self.ordered(moves, -1, 0)
        if self.symmetry:
            classes = move_classes(self.st, order)
            order = list(classes)
        else:
            classes = {i: [i] for i in order}
        want = 1 if multipv is None else min(multipv, len(order))
        shown = 1 if multipv is None else multipv
        limit = max_depth if max_depth is not None else 10_000
        depth = 1
        while depth <= limit:
            try:
                res = self._root(depth, order, want, classes)
            except SearchAborted:
                while self._saved:  # unwind the interrupted line: one entry per move played
                    self._undo()
                return
            yield res
            # a pattern win or loss is final: stop when each move analyse reports has one
            if res.solved or all(abs(m.value) > MATE_BOUND for m in res.moves[:shown]):
                return
            order = [m.action for m in res.moves if m.action in classes]
            depth += 1

    def pv(self, first: int, max_len: int = 64) -> list[int]:
        """The principal variation from the root: ``first`` then the TT's best moves."""
        line = []
        st = self.st
        cell = first
        while cell >= 0 and len(line) < max_len and cell in st.legal_actions():
            line.append(cell)
            st.play_unchecked(cell)
            entry = self.tt.get(st.hash)
            cell = entry[3] if entry is not None else -1
        for _ in line:
            st.undo_unchecked()
        return line


def sum_points(mask: int) -> int:
    """Rule-16 points of a mask of won blocks."""
    return PTS_LO[mask & 255] + PTS_HI[mask >> 8]


def _move(cell: int) -> tuple[int, int]:
    return divmod(cell, 16)


def _move_value(m: RootMove) -> MoveValue:
    proven = proven_of(m.value, m.solved) if m.bound == Bound.EXACT else None
    value, mate_in = reported_value(m.value)
    if proven is not None:
        return MoveValue(_move(m.action), value, True, Bound.EXACT, mate_in)
    return MoveValue(_move(m.action), value, False,
                     Bound.UPPER if m.bound == Bound.UPPER else Bound.ESTIMATE, mate_in)


class XtttCaches:
    """The caches of the XTTT search that a ``SearchCache`` keeps between analyses: the
    transposition table ``tt`` (a dict by Zobrist hash) and the block-values memo ``blocks``
    (a :class:`~engine.xttt.evaluate.BlockInfoCache`). At most ``max_entries`` entries in
    all: ``blocks`` gets ``max_entries // 16`` (at most 500,000, at least 1) and the table
    the rest (``tt_entries``); a search on it stores at most that many
    (``Searcher.tt_max``), and ``analyse`` empties a table that has no room left."""

    __slots__ = ("max_entries", "tt", "blocks", "tt_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        self.max_entries = max_entries
        share = max(1, min(500_000, max_entries // 16))
        self.blocks = BlockInfoCache(share)
        self.tt: dict[int, tuple] = {}
        self.tt_entries = max(1, max_entries - share)

    @property
    def tt_max(self) -> int:
        """The ``Searcher.tt_max`` that keeps the table within ``tt_entries``."""
        return min(TT_MAX, (self.tt_entries - 1) // 2)

    def clear(self) -> None:
        """Empty both caches."""
        self.tt.clear()
        self.blocks.clear()

    def __len__(self) -> int:
        return len(self.tt) + len(self.blocks)


def analyse(state: XtttState, limit, multipv: int | None = None,
            on_progress=None, cache=None, start: float | None = None) -> Analysis:
    """Search ``state`` within ``limit`` (an :class:`engine.analysis.Limit`).

    ``limit.time_ms`` is a hard deadline: the search returns the result of the last completed
    depth (at worst a legal move chosen by move ordering alone). Without a time limit it
    honours ``depth`` / ``nodes``, and with neither it searches until the root is solved.
    ``multipv=k`` returns the k best moves with exact values; otherwise every legal move is
    listed, the best with its value and the others with upper bounds. ``on_progress`` gets a
    :class:`Progress` after every completed depth. The caller's state is not changed.
    Values and ``mate_in`` are reported by :func:`reported_value`.
    ``cache``: an ``engine.analysis.SearchCache``; its :class:`XtttCaches` (the TT, emptied
    when it has no room left, and the block-values memo) are the search's.
    ``start``: the ``time.perf_counter()`` the time limit counts from (default: now).
    """
    t0 = start if start is not None else time.perf_counter()
    if state.is_terminal():
        value = Searcher(state).terminal(0)
        reported, mate_in = reported_value(value)
        return Analysis(game=state.game.name, best_move=None, value=reported, exact=True,
                        bound=Bound.EXACT, proven=proven_of(value, True), mate_in=mate_in)
    if cache is not None:
        caches = cache.owner(state.game.name, XtttCaches)
        searcher = Searcher(state, deadline_of(t0, limit.time_ms), limit.nodes,
                            blocks=caches.blocks)
        searcher.tt_max = caches.tt_max
        if len(caches.tt) >= 2 * searcher.tt_max:
            caches.tt.clear()
        searcher.tt = caches.tt
    else:
        searcher = Searcher(state, deadline_of(t0, limit.time_ms), limit.nodes)
    last: DepthResult | None = None
    for res in searcher.iterate(limit.depth, multipv):
        last = res
        if on_progress is not None:
            b = res.best
            value, mate_in = reported_value(b.value)
            on_progress(Progress(res.depth, _move(b.action), value,
                                 proven_of(b.value, res.solved) is not None, res.nodes,
                                 (time.perf_counter() - t0) * 1000.0, mate_in))
    elapsed = time.perf_counter() - t0
    nodes = searcher.nodes
    nps = int(nodes / elapsed) if elapsed > 0 else 0
    if last is None:  # not even depth 1 finished: move ordering's choice, static value
        cell = searcher.ordered(searcher.st.legal_actions(), -1, 0)[0]
        return Analysis(game=state.game.name, best_move=_move(cell),
                        value=float(searcher.static()), exact=False, bound=Bound.ESTIMATE,
                        pv=[_move(cell)], depth=0, nodes=nodes, nps=nps,
                        time_ms=elapsed * 1000.0, tt_hits=searcher.tt_hits)
    best = last.best
    proven = proven_of(best.value, last.solved)
    moves = [_move_value(m) for m in last.moves]
    part = searcher.partial
    if part is not None and multipv is None and part[0] == last.depth + 1:
        # The deadline hit depth + 1 after a move had beaten that depth's first move (the
        # previous best) with an exact value: play it, reported first with that value.
        # Only a win is proven by one move; a loss would need every move searched.
        _, cell, v = part
        best = RootMove(cell, v, Bound.EXACT, False)
        proven = Proven.WIN if v >= PROVEN else None
        v_reported, v_mate_in = reported_value(v)
        first = MoveValue(_move(cell), v_reported, proven is not None,
                          Bound.EXACT if proven is not None else Bound.ESTIMATE, v_mate_in)
        moves = [first] + [m for m in moves if m.move != _move(cell)]
    if multipv is not None:
        moves = moves[:multipv]
    value, mate_in = reported_value(best.value)
    return Analysis(
        game=state.game.name,
        best_move=_move(best.action),
        value=value,
        exact=proven is not None,
        bound=Bound.EXACT if proven is not None else Bound.ESTIMATE,
        pv=[_move(c) for c in searcher.pv(best.action)],
        depth=last.depth,
        nodes=nodes,
        nps=nps,
        time_ms=elapsed * 1000.0,
        tt_hits=searcher.tt_hits,
        moves=moves,
        proven=proven,
        mate_in=mate_in,
    )
