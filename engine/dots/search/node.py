"""Negamax alpha-beta over the future-box margin, with Dots-and-Boxes knowledge: the
searchers, and the Python reference node.

Values: boxes the player to move will still take minus the opponent's. A line that completes
boxes keeps the turn, so its value is ``completed + value(child)`` (no negation); any other
line passes the turn: ``-value(child)``.

What makes it fast and still exact:

* Forced captures without branching (Berlekamp; Barker and Korf 2012). A capturable box X
  (valence 3, missing line L) whose neighbour Y across L is absent or not of valence 2 is
  always taken, and so is X when the boxes behind it form a longer run. The only capturable
  boxes that branch are the *decision points*: the last two boxes of a half-open chain
  (X - Y - border/joint) and the last four of a closed chain or opened loop (X - Y - Z - W,
  W capturable). There the two meaningful replies are: take (all), or decline by drawing the
  line beyond Y (leaving two boxes, or two pairs of two, to the opponent). With two or more
  decision points at once, one is taken before a decline is considered. Leaving capturable
  boxes while moving elsewhere is dominated and never tried.
* Exact loony endgames: when no box can be taken and every box left has valence 2, the value
  comes from the chain DP (``chain_dp``) instead of search; when no safe line is left but
  chains still meet at joints, from the chain graph (``chain_graph``).
* Equivalent sacrifices: one line per chain or loop (the middle line of a 2-chain, which
  cannot be declined; any line of a longer chain, also one that ends at a joint, as every line
  leaves the taker the same two choices), and one chain or loop per kind and length among the
  independent ones (both ends on the border; the words as in :mod:`~engine.dots.chains`).
* Twin lines (Barker and Korf's corner symmetry): the border lines of one box are parallel
  strings from the same coin to the ground, so drawing either gives equivalent positions.
  Only the lowest undrawn twin is searched, and the TT key sorts each box's drawn border lines
  to its lowest ids (``Tables.key``; the key's definition is in :mod:`board`).
* Enhanced transposition cutoffs: before searching, the safe lines' positions are looked up
  in the TT; one already known to refute the window ends the node. The children's keys are
  derived from the parent's packed images and handed down with the valences.
* Transposition table keyed by drawn lines modulo the board's symmetries and twins; move
  ordering: TT move (in a proof only a proven entry's), safe lines (next to fuller boxes,
  then central, then history; in a proof central ones first, then next to fuller boxes),
  then the sacrifices, smallest first, generated only when no safe line has cut the node
  off.
* Iterative deepening with a heuristic at the horizon (``evaluate``); a node's result is
  *proven* when no heuristic value was used below it, which is what ``exact`` reports.

:class:`Searcher` searches with the Python node (:func:`build_node`: the phases of
:mod:`phases`, in order), :class:`CompiledSearcher` with the compiled core's (:mod:`compiled`),
which runs the same phases under the same names; what both share is :class:`SearchSession`'s.
"""

from __future__ import annotations

import time

from ...errors import SearchAborted
from ...search import SearcherBase
from ..chain_dp import chain_lengths, chain_lines, sacrifice_lines
from ..chain_graph import ChainGraph
from ..geometry import bits
from . import compiled
from .board import Tables
from .caches import DotsCaches
from .learned import model_for, resolve_evaluation
from .table import INF, PROVEN, TranspositionTable

#: Boards of more lines than this read the clock at every node (see :func:`build_node`).
SLOW_NODE_LINES = 128
# depths below this are iterative-deepening depths (heuristic leaves); proofs use PROVEN - k
_HEURISTIC_DEPTHS = PROVEN // 2


class SearchSession(SearcherBase):
    """One search session on one board size: its tables ``t``, its caches, its table ``tt``,
    its settings, counters and limits, and what the driver asks of a position besides its
    value, ``search(drawn, alpha, beta, depth)`` (which the subclasses provide).

    ``deadline`` / ``max_nodes`` and the counters: see :class:`~engine.search.SearcherBase`;
    reaching a limit raises :class:`~engine.search.SearchAborted` out of ``search``.
    ``etc_min_free``: enhanced transposition cutoffs at nodes with this many undrawn lines or
    more. ``loony_bound`` (from ``default_loony_bound``, on; benchmarks turn it off to
    measure it): skip a loony sacrifice whose bound cannot reach into the window
    (``Searcher.gen_sacrifices``). ``chain_graph`` (from ``default_chain_graph``): settle
    the positions with no safe line left by the chain graph (:mod:`~..chain_graph`) in
    ``node_leaf``. ``sized_proofs`` (from ``default_sized_proofs``, on): the compiled core
    stores a proof at ``PROVEN`` plus the bit length of its subtree's nodes, and its table
    replaces the smallest proofs first; the Python search stores ``PROVEN``.
    """

    default_loony_bound = True
    default_chain_graph = True
    default_sized_proofs = True

    def __init__(self, t: Tables, tt, symmetry: bool, deadline: float | None,
                 max_nodes: int | None, caches: DotsCaches) -> None:
        super().__init__(deadline, max_nodes)
        self.t = t
        self.caches = caches
        self.tt = tt
        self.symmetry = uses_symmetry(t, symmetry)
        self.etc_min_free = 10
        self.loony_bound = self.default_loony_bound
        self.chain_graph = self.default_chain_graph

    def close(self) -> None:
        """Drop the search function (the searcher is not used afterwards)."""
        self.search = None

    # ------------------------------------------------------------------ capture phase
    def capture_phase(self, drawn: int, vals: list[int]):
        """Take every forced capture; return (drawn, boxes taken, lines drawn,
        decision points as [(take_line, decline_line)]). ``vals`` must hold a 3."""
        t = self.t
        box_mask = t.box_mask
        other = t.other
        line_boxes = t.line_boxes
        gained = 0
        taken_lines = []
        nb = t.nb
        while True:
            took = False
            decisions = []
            # (every pass starts with a capturable box: the caller's and the loop's check)
            for x in range(vals.index(3), nb):
                if vals[x] != 3:
                    continue
                while True:
                    lx = (box_mask[x] & ~drawn).bit_length() - 1
                    y = other[lx][x]
                    if y >= 0 and vals[y] == 2:
                        mline = (box_mask[y] & ~drawn & ~(1 << lx)).bit_length() - 1
                        z = other[mline][y]
                        if z < 0 or vals[z] <= 1:
                            decisions.append((lx, mline))
                            break
                        if vals[z] == 2:
                            nline = (box_mask[z] & ~drawn & ~(1 << mline)).bit_length() - 1
                            w = other[nline][z]
                            if w >= 0 and vals[w] == 3:
                                decisions.append((lx, mline))
                                break
                    drawn |= 1 << lx
                    taken_lines.append(lx)
                    took = True
                    for b in line_boxes[lx]:
                        v = vals[b] + 1
                        vals[b] = v
                        if v == 4:
                            gained += 1
                    # follow the chain: the box across the line may have become capturable
                    if y < 0 or vals[y] != 3:
                        break
                    x = y
            if took and 3 not in vals:
                return drawn, gained, taken_lines, []
            if not took:
                if len(decisions) > 1:
                    seen = set()
                    uniq = []
                    for d in decisions:
                        if d[1] not in seen:
                            seen.add(d[1])
                            uniq.append(d)
                    decisions = uniq
                return drawn, gained, taken_lines, decisions

    # ------------------------------------------------------------------ helpers
    def child_value(self, drawn: int, line: int, alpha: int, beta: int, depth: int) -> int:
        """Value for the player to move in ``drawn`` of drawing ``line`` there."""
        c = self.t.completes(drawn, line)
        child = drawn | (1 << line)
        if c:
            return c + self.search(child, alpha - c, beta - c, depth)
        return -self.search(child, -beta, -alpha, depth)

    def best_line(self, drawn: int) -> int:
        """The TT's move for a position (actual frame), or -1."""
        t = self.t
        key, s = t.key(drawn, self.symmetry)
        e = self.tt.get(key)
        if e is None or e[3] < 0:
            return -1
        return t.from_key_frame(drawn, e[3], s)

    def principal_variation(self, drawn: int, first: int, max_len: int = 40) -> list[int]:
        """``first`` and then the forced captures and TT moves after it."""
        t = self.t
        pv = [first]
        drawn |= 1 << first
        while len(pv) < max_len and drawn != t.full:
            vals = t.valences(drawn)
            if 3 in vals:
                nd, _g, lines, decisions = self.capture_phase(drawn, vals[:])
                if lines:
                    pv.extend(lines)
                    drawn = nd
                    continue
            m = self.best_line(drawn)
            if m < 0 or drawn >> m & 1:
                break
            pv.append(m)
            drawn |= 1 << m
        return pv[:max_len]

    def root_order(self, drawn: int) -> list[int]:
        """Every legal line: captures first, then safe lines, then sacrifices smallest first."""
        t = self.t
        vals = t.valences(drawn)
        free = bits(t.full & ~drawn)
        caps = [ln for ln in free if any(vals[b] == 3 for b in t.line_boxes[ln])]
        rest = set(free) - set(caps)
        size = {}
        for _loop, n, lines, _ind in chain_lines(t, drawn, vals):
            for ln in lines:
                size[ln] = n
        safe = [ln for ln in free if ln in rest and ln not in size]
        sacs = sorted((ln for ln in free if ln in rest and ln in size), key=lambda x: size[x])
        return caps + safe + sacs


class Searcher(SearchSession):
    """A search session whose node is the Python reference node (:func:`build_node`), with
    the move ordering's history.

    ``caches``: the :class:`~engine.dots.search.caches.DotsCaches` of the board size (TT,
    evaluation and chain DP memos; default: a fresh one); ``tt``: a table to use instead of
    the caches' own. ``evaluation``: the horizon evaluation, ``"learned"`` or ``"fill"``
    (default: :func:`~.learned.resolve_evaluation`'s). ``record_keys`` (tests):
    ``handed_keys`` then lists (parent, {line: child's key as handed down}) of every
    enhanced transposition cutoff that went through
    all its lines.
    """

    def __init__(self, t: Tables, tt: TranspositionTable | None = None,
                 symmetry: bool = True, deadline: float | None = None,
                 max_nodes: int | None = None, record_keys: bool = False,
                 caches: DotsCaches | None = None, evaluation: str | None = None) -> None:
        caches = caches if caches is not None else DotsCaches(t, tt=tt)
        super().__init__(t, tt if tt is not None else caches.tt, symmetry, deadline,
                         max_nodes, caches)
        self.evaluation = resolve_evaluation(evaluation, t)
        caches.use_evaluation(self.evaluation)
        self.evaluator = (caches.learned_evaluator() if self.evaluation == "learned"
                          else caches.evaluator)
        # the key's tables: under the board's symmetries, or the identity only
        self.keys = t.sym_keys if self.symmetry else t.id_keys
        self.handed_keys: list[tuple[int, dict]] | None = [] if record_keys else None
        self.history = [0] * t.nl
        self.pruned = False
        self.graph = ChainGraph(caches.dp)
        # search(drawn, alpha, beta, depth, vals=None, km=None) -> value
        self.search = build_node(self)

    def close(self) -> None:
        """Drop the search function. It refers to itself (to recurse) and to this searcher;
        emptying its closure breaks both cycles, so the searcher and its table (unless
        shared) are freed as soon as they are unreferenced, without the cyclic GC."""
        fn = self.search
        self.search = None
        for cell in getattr(fn, "__closure__", None) or ():
            del cell.cell_contents

    # ------------------------------------------------------------------ move generation
    def gen_safe(self, drawn: int, vals: list[int],
                 proof: bool = False) -> tuple[list[int], int]:
        """The safe lines (no box reaches valence 3), best first, one per set of twins; and
        the mask of the other undrawn lines (the sacrifices, see ``gen_sacrifices``).

        Order in a heuristic search: lines next to fuller boxes first (they settle the
        structure), then central lines before outer ones, then the history score.

        In a ``proof``: central lines first, then those next to fuller boxes; no history
        (the orders compared: docs/benchmarks.md, the Dots-and-Boxes search)."""
        t = self.t
        free = t.full & ~drawn
        unsafe = 0
        box_mask = t.box_mask
        b = 0
        for v in vals:
            if v == 2:
                unsafe |= box_mask[b]
            b += 1
        unsafe &= free
        cand = free & ~unsafe
        # of twin lines (border lines of one box) only the lowest undrawn one
        for ma, sh in t.twin_pairs:
            cand &= ~((free & ma) << sh)
        if t.bit_tabs:
            safe = []
            cb = t.cbits
            cmask = (1 << cb) - 1
            for tab in t.bit_tabs:
                safe += tab[cand & cmask]
                cand >>= cb
        else:
            safe = bits(cand)
        if len(safe) > 1:
            line_boxes = t.line_boxes
            hist = self.history
            cen = t.centrality

            if proof:
                def key(ln):
                    lb = line_boxes[ln]
                    if len(lb) == 2:
                        return (cen[ln], vals[lb[0]] + vals[lb[1]])
                    return (cen[ln], vals[lb[0]])
            else:
                def key(ln):
                    lb = line_boxes[ln]
                    if len(lb) == 2:
                        return (vals[lb[0]] + vals[lb[1]], cen[ln], hist[ln])
                    return (vals[lb[0]], cen[ln], hist[ln])
            safe.sort(key=key, reverse=True)
        return safe, unsafe

    def gen_sacrifices(self, drawn: int, vals: list[int], prune_long: bool = False,
                       any_safe: bool = True) -> tuple[list[int], dict[int, int]]:
        """The sacrifices of ``chain_dp.sacrifice_lines`` (one line per chain or loop, one
        chain or loop per kind and length among the independent ones), smallest first, and the
        loony ones' bounds by line (the most each is worth to the mover).

        ``prune_long`` (depth-limited search only): while safe lines remain (``any_safe``),
        leave out sacrifices of 3+ chains and of loops (almost never right, and they double
        the width); ``self.pruned`` tells whether anything was left out (the result is then
        not proven)."""
        sacs = sacrifice_lines(self.t, drawn, vals)
        if prune_long and any_safe:
            n0 = len(sacs)
            sacs = [x for x in sacs if x[0] <= 2]
            self.pruned = len(sacs) != n0
        sacs.sort(key=lambda x: (x[0], x[1]))
        seen = 0
        out = []
        bounds = {}
        for _, ln, bound in sacs:
            if not seen >> ln & 1:
                seen |= 1 << ln
                out.append(ln)
                if bound is not None:
                    bounds[ln] = bound
        return out, bounds


class _InCore:
    """An attribute of a :class:`CompiledSearcher` that its compiled core keeps."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name
        self.__doc__ = f"``{name}``, kept by the compiled core"

    def __get__(self, searcher, owner=None):
        if searcher is None:
            return self
        return getattr(searcher.core, self.name)

    def __set__(self, searcher, value) -> None:
        setattr(searcher.core, self.name, value)


class CompiledSearcher(SearchSession):
    """A search session whose ``search(drawn, alpha, beta, depth)`` is the compiled core's
    (:mod:`compiled`): the Python node, node for node, without the GIL. Its table is the
    ``caches``' compiled one (``DotsCaches.compiled_table()``; a fresh ``DotsCaches`` when
    none is given). The counters, limits and settings live in the core (``core``) and are
    read and set through the usual attributes. ``threads``: the threads each ``search`` may
    run (1 to ``compiled.MAX_THREADS``; see :mod:`compiled`): with more than one, ``nodes``
    counts every thread's and the node budget is on that sum. ``evaluation``: as
    :class:`Searcher`'s. Raises ``ValueError`` when the core cannot search the board."""

    nodes = _InCore()
    tt_hits = _InCore()
    horizon = _InCore()
    deadline = _InCore()
    max_nodes = _InCore()
    etc_min_free = _InCore()
    loony_bound = _InCore()
    chain_graph = _InCore()
    sized_proofs = _InCore()

    def __init__(self, t: Tables, symmetry: bool = True, deadline: float | None = None,
                 max_nodes: int | None = None, caches: DotsCaches | None = None,
                 threads: int = 1, evaluation: str | None = None) -> None:
        caches = caches if caches is not None else DotsCaches(t)
        self.evaluation = resolve_evaluation(evaluation, t)
        caches.use_evaluation(self.evaluation)
        table = caches.compiled_table()
        table.new_search()
        self.core = compiled.core(t, table, uses_symmetry(t, symmetry), SearchAborted,
                                  time.perf_counter)
        self.core.threads = threads
        if self.evaluation == "learned":
            self.core.model = compiled.model(model_for(t))
        super().__init__(t, table, symmetry, deadline, max_nodes, caches)
        self.search = self.core.search


def uses_symmetry(t: Tables, symmetry: bool) -> bool:
    """Whether a search asked for ``symmetry`` keys ``t``'s positions under the board's
    symmetries (not where the board has none but the identity)."""
    return symmetry and len(t.syms) > 1


# ---------------------------------------------------------------------- the Python node

def build_node(s: Searcher):
    """The Python node of session ``s``: ``search(drawn, alpha, beta, depth, vals=None,
    km=None) -> value``, the phases of :mod:`phases` in order.

    Each phase is a closure made by the function of its name below, holding the board's
    tables and the session's table as closure variables: local loads make a node about a
    fifth cheaper than attribute loads would (why these are closures, not methods)."""
    check = s.check_limits
    box_mask = s.t.box_mask
    # On boards past the compiled core's (more than 128 lines) a node costs up to a
    # millisecond or two (20x20: the evaluation's fills walk 840 lines), so 16 nodes
    # between two looks at the clock overran a 200 ms deadline by 17 ms: there the clock
    # is read at every node (the node budget is still checked every 16 nodes).
    every_node = s.t.nl > SLOW_NODE_LINES
    perf = time.perf_counter
    node_captures = _node_captures(s)
    node_probe = _node_probe(s)
    node_leaf = _node_leaf(s)
    node_generate = _node_generate(s)
    node_etc = _node_etc(s)
    node_store = _node_store(s)

    def search(drawn: int, alpha: int, beta: int, depth: int,
               vals: list[int] | None = None, km: tuple | None = None) -> int:
        """Negamax value of ``drawn`` for the player to move, searched to ``depth``
        (``PROVEN``-based depths: to the end). ``vals``: the box valences of ``drawn``
        when the caller has them (the list is the callee's to change); ``km``: its
        ``(key, symmetry, images, sorted images)`` when the caller computed them (a
        safe line's child, by the enhanced transposition cutoff)."""
        n = s.nodes = s.nodes + 1
        if not n & 15:
            check()
        elif every_node:
            dl = s.deadline
            if dl is not None and perf() >= dl:
                raise SearchAborted
        if vals is None:
            vals = [(drawn & m).bit_count() for m in box_mask]
        drawn, gained, decisions, v = node_captures(drawn, alpha, beta, vals)
        if v is not None:
            return gained + v
        alpha -= gained
        beta -= gained
        key, sym, raw, srt, ttmove, v = node_probe(drawn, alpha, beta, depth, km)
        if v is not None:
            return gained + v
        v = node_leaf(drawn, depth, vals, decisions, key)
        if v is not None:
            return gained + v
        moves, safe, unsafe, tried = node_generate(drawn, depth, vals, decisions, ttmove)
        ckm, v = node_etc(drawn, beta, depth, decisions, key, sym, raw, srt, safe)
        if v is not None:
            return gained + v
        best, bestm, proven = node_children(drawn, alpha, beta, depth, vals, moves, unsafe,
                                            tried, ckm)
        node_store(key, sym, depth, alpha, beta, best, bestm, proven)
        return gained + best

    # (node_children recurses into search, so it is made once search exists)
    node_children = _node_children(s, search)
    return search


def _node_captures(s: Searcher):
    """``node_captures(drawn, alpha, beta, vals) -> (drawn, boxes taken, decision points,
    value)`` (the forced captures)."""
    capture_phase = s.capture_phase
    full = s.t.full
    nb = s.t.nb

    def node_captures(drawn, alpha, beta, vals):
        gained = 0
        decisions = None
        if 3 in vals:
            drawn, gained, _, decisions = capture_phase(drawn, vals)
            if drawn == full:
                return drawn, gained, decisions, 0
            alpha -= gained
            beta -= gained
        elif drawn == full:
            return drawn, 0, decisions, 0
        rem = nb - vals.count(4)
        if alpha >= rem:
            return drawn, gained, decisions, rem
        if beta <= -rem:
            return drawn, gained, decisions, -rem
        return drawn, gained, decisions, None
    return node_captures


def _node_probe(s: Searcher):
    """``node_probe(drawn, alpha, beta, depth, km) -> (key, symmetry, images, sorted images,
    TT move, value)`` (the table probe)."""
    table = s.tt.table
    ctabs, kswap, select, cb = s.keys.ctabs, s.keys.kswap, s.keys.select, s.keys.cbits
    cmask = (1 << cb) - 1
    from_key_frame = s.t.from_key_frame
    heuristic = _HEURISTIC_DEPTHS

    def node_probe(drawn, alpha, beta, depth, km):
        if km is not None:
            key, sym, raw, srt = km
        else:
            # ``t.key`` inlined: every image at once from the packed tables, twins sorted
            packed = 0
            d = drawn
            for tab in ctabs:
                packed |= tab[d & cmask]
                d >>= cb
            packed = raw = packed | drawn
            for ma, sh in kswap:
                c = (packed >> sh) & ma & ~packed
                if c:
                    packed ^= c | (c << sh)
            srt = packed
            key, sym = select(packed)
        e = table.get(key)
        ttmove = -1
        if e is not None:
            s.tt_hits += 1
            ed, lo, hi, m = e
            if ed >= depth:
                if lo >= beta or lo == hi:
                    if ed < PROVEN:
                        s.horizon += 1
                    return key, sym, raw, srt, ttmove, lo
                if hi <= alpha:
                    if ed < PROVEN:
                        s.horizon += 1
                    return key, sym, raw, srt, ttmove, hi
            # in a proof only a proven entry's move leads: the moves the shallow iterations
            # left near the root order a proof worse than the safe-line order
            # (docs/benchmarks.md, the Dots-and-Boxes search)
            if m >= 0 and (ed >= PROVEN or depth < heuristic):
                ttmove = from_key_frame(drawn, m, sym)
        return key, sym, raw, srt, ttmove, None
    return node_probe


def _node_leaf(s: Searcher):
    """``node_leaf(drawn, depth, vals, decisions, key) -> value or None`` (a loony endgame,
    a position with no safe line, or the horizon)."""
    t = s.t
    store = s.tt.store
    evaluate = s.evaluator.evaluate
    loony_value = s.caches.dp.value
    graph_value = s.graph.position_value

    def node_leaf(drawn, depth, vals, decisions, key):
        if decisions:
            return None
        if 0 not in vals and 1 not in vals:
            chains, loops = chain_lengths(t, drawn, vals)
            chains.sort()
            loops.sort()
            v = -loony_value(tuple(chains), tuple(loops))
            store(key, PROVEN, v, v, -1)
            return v
        if s.chain_graph:
            v = graph_value(t, drawn, vals)
            if v is not None:
                store(key, PROVEN, v, v, -1)
                return v
        if depth <= 0:
            s.horizon += 1
            return evaluate(drawn, vals)
        return None
    return node_leaf


def _node_generate(s: Searcher):
    """``node_generate(drawn, depth, vals, decisions, ttmove) -> (moves, the safe lines in
    generation order, the unsafe lines' mask, the unsafe TT move tried first or -1)``."""
    gen_safe = s.gen_safe
    heuristic = _HEURISTIC_DEPTHS

    def node_generate(drawn, depth, vals, decisions, ttmove):
        if decisions:
            moves = [d[0] for d in decisions]
            if len(decisions) == 1:
                moves.append(decisions[0][1])
            unsafe = 0
        else:
            # the sacrifices are generated only when no safe line has cut the node off
            moves, unsafe = gen_safe(drawn, vals, depth >= heuristic)
        safe = moves
        tried = -1
        if ttmove >= 0:
            if ttmove in moves:
                if moves[0] != ttmove:
                    moves = moves[:]
                    moves.remove(ttmove)
                    moves.insert(0, ttmove)
            elif unsafe >> ttmove & 1:
                moves = [ttmove, *moves]
                tried = ttmove
        return moves, safe, unsafe, tried
    return node_generate


def _node_etc(s: Searcher):
    """``node_etc(drawn, beta, depth, decisions, key, sym, raw, srt, safe) -> ({safe line:
    its child's km} or None, value)`` (the enhanced transposition cutoffs)."""
    t = s.t
    full = t.full
    syms = t.syms
    table = s.tt.table
    store = s.tt.store
    handed_keys = s.handed_keys
    line_imgs, kswap, select = s.keys.line_imgs, s.keys.kswap, s.keys.select
    twin_line = 0
    for g in t.twin_groups:
        for ln in g:
            twin_line |= 1 << ln

    def node_etc(drawn, beta, depth, decisions, key, sym, raw, srt, safe):
        if decisions or (full & ~drawn).bit_count() < s.etc_min_free:
            return None, None
        # a safe line whose position is already known to refute the window ends the node
        # without a search
        ckm = {}
        cdepth = depth - 1
        for ln in safe:   # no box of theirs reaches valence 3
            img = line_imgs[ln]
            craw = raw | img
            if twin_line >> ln & 1:
                packed = craw
                for ma, sh in kswap:
                    c = (packed >> sh) & ma & ~packed
                    if c:
                        packed ^= c | (c << sh)
            else:
                # a line of no twin group: its images are in none either, so the parent's
                # sorted images stay sorted
                packed = srt | img
            ck, cs = select(packed)
            # handed to the child when it is searched (a safe line takes nothing)
            ckm[ln] = (ck, cs, craw, packed)
            ce = table.get(ck)
            if ce is not None and ce[0] >= cdepth and -ce[2] >= beta:
                v = -ce[2]
                if ce[0] < PROVEN:
                    s.horizon += 1
                cm = syms[sym][ln] if sym else ln
                store(key, PROVEN if ce[0] >= PROVEN else depth, v, INF, cm)
                return ckm, v
        if handed_keys is not None and ckm:
            handed_keys.append((drawn, ckm))
        return ckm, None
    return node_etc


def _node_children(s: Searcher, search):
    """``node_children(drawn, alpha, beta, depth, vals, moves, unsafe, tried, ckm) -> (best
    value, best move, proven)``: the moves, then the sacrifices, each child by ``search``."""
    table = s.tt.table
    line_boxes = s.t.line_boxes
    history = s.history
    gen_sacrifices = s.gen_sacrifices
    heuristic = _HEURISTIC_DEPTHS

    def node_children(drawn, alpha, beta, depth, vals, moves, unsafe, tried, ckm):
        h0 = s.horizon
        best = -INF
        bestm = -1
        first = True
        bounds = None
        while True:
            for ln in moves:
                if bounds and ln in bounds and bounds[ln] <= alpha and s.loony_bound:
                    # a loony sacrifice whose bound cannot reach into the window
                    if bounds[ln] > best:
                        best = bounds[ln]
                        bestm = ln
                    continue
                km = ckm.get(ln) if ckm else None
                v = None
                c = 0
                if km is not None:
                    # a safe line whose child the cutoff loop keyed: when the table settles
                    # the child's window, its value is read here, without a call
                    ce = table.get(km[0])
                    if ce is not None and ce[0] >= depth - 1:
                        clo = ce[1]
                        chi = ce[2]
                        if clo == chi or clo >= -alpha:
                            v = -clo
                        elif chi <= (-beta if first else -alpha - 1):
                            v = -chi
                        if v is not None:
                            s.nodes += 1
                            s.tt_hits += 1
                            if ce[0] < PROVEN:
                                s.horizon += 1
                            if not first and alpha < v < beta and clo != chi:
                                v = -search(drawn | (1 << ln), -beta, -alpha, depth - 1,
                                            None, km)
                if v is None:
                    cv = vals[:]
                    for b in line_boxes[ln]:
                        vb = cv[b]
                        if vb == 3:
                            c += 1
                        cv[b] = vb + 1
                    child = drawn | (1 << ln)
                    # (a re-search recomputes the child's valences: the first used cv up)
                    if c:
                        if first:
                            v = c + search(child, alpha - c, beta - c, depth, cv)
                        else:
                            v = c + search(child, alpha - c, alpha + 1 - c, depth, cv)
                            if alpha < v < beta:
                                v = c + search(child, alpha - c, beta - c, depth)
                    elif first:
                        v = -search(child, -beta, -alpha, depth - 1, cv, km)
                    else:
                        v = -search(child, -alpha - 1, -alpha, depth - 1, cv, km)
                        if alpha < v < beta:
                            v = -search(child, -beta, -alpha, depth - 1, None, km)
                first = False
                if v > best:
                    best = v
                    bestm = ln
                    if v > alpha:
                        alpha = v
                        if v >= beta:
                            if not c and depth < heuristic:
                                history[ln] += depth * depth + 1
                            break
            else:
                if unsafe:
                    # no safe line cut the node off: now the sacrifices
                    any_safe = len(moves) > (tried >= 0)
                    unsafe = 0
                    if depth < heuristic:
                        s.pruned = False
                        moves, bounds = gen_sacrifices(drawn, vals, True, any_safe)
                        if s.pruned:
                            s.horizon += 1
                    else:
                        moves, bounds = gen_sacrifices(drawn, vals)
                    if tried >= 0 and tried in moves:
                        moves.remove(tried)
                    if moves:
                        continue
            break
        return best, bestm, s.horizon == h0
    return node_children


def _node_store(s: Searcher):
    """``node_store(key, sym, depth, alpha, beta, best, bestm, proven)``: the result into
    the table (``alpha``/``beta``: the node's window after the captures)."""
    syms = s.t.syms
    store = s.tt.store

    def node_store(key, sym, depth, alpha, beta, best, bestm, proven):
        if best <= alpha:
            lo, hi = -INF, best
        elif best >= beta:
            lo, hi = best, INF
        else:
            lo = hi = best
        cm = syms[sym][bestm] if sym and bestm >= 0 else bestm
        store(key, PROVEN if proven else depth, lo, hi, cm)
    return node_store


def solve(t: Tables, drawn: int, symmetry: bool = True, tt=None) -> tuple[int, Searcher]:
    """Exact value of a position for the player to move (no limits)."""
    s = Searcher(t, tt=tt, symmetry=symmetry)
    return s.search(drawn, -INF, INF, PROVEN), s
