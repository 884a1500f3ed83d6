"""The exact value of positions with no safe line left, joints included: the chain graph.

When no box can be taken and every undrawn line borders a box of valence 2 (no safe line),
every move opens a chain or a loop, as in the chain DP's endgames (:mod:`chain_dp`), but the
chains may still meet at *joints* (boxes of valence 0 or 1: three or four undrawn lines; the
words as in :mod:`chains`). Such a position is a small multigraph: its vertices are the
joints and the ground (the board's border, vertex 0), its edges the chains, each with its
length (boxes), besides the independent loops. No undrawn line joins two joints or a joint and
the border (it would be safe), so this graph is the whole strings-and-coins position.

A move opens one chain or loop, and the player in control (not to move) takes it all or
declines the last two boxes (four of a loop), as in the chain DP:

* a chain of ``n`` boxes between two vertices (or a chain from a joint ``J`` back to ``J``
  when ``J`` keeps two lines or more): removed, its ends lose a line each;
  ``n - f(G')`` for ``n <= 2``, else ``n - 2 + |2 - f(G')|``;
* a loop of ``n``: ``n - 4 + |4 - f(G')|``;
* a chain from ``J`` back to ``J`` when ``J`` has three lines: taking it leaves ``J`` with
  one, so ``J`` and the chain of its third line (``m`` boxes, to a vertex ``X``) are taken
  too: a chain of ``n + 1 + m`` boxes, ``X`` loses a line (opening the other chain instead is
  the first case);

and a joint left with two lines becomes a box of a chain: its two chains merge (into a loop
when they were one chain from it back to it). These are the choices the search's capture
rules leave (``Searcher.capture_phase``: every other capture is forced, and a chain of three
boxes or more can be declined wherever it is opened). ``f(G)`` (what the player not to move nets) is
the minimum over the moves; once no joint is left, the chain DP's ``f``. The graphs are
memoised under a normal form (the joints renumbered by their invariants), in the chain DP's
memo (:class:`~chain_dp.LoonyDP`,
whose bound and ``clear`` hold for them). The compiled core has the same solver
(``core/chain_graph.c``); tests/engine/dots/test_chain_graph.py checks both against the
reference solver.
"""

from __future__ import annotations

from .chain_dp import LoonyDP, chain_lines

#: Graphs of more chains and loops than this are not solved: the solve grows about 2x a part
#: (the compiled one took 0.1 s and 24,336 graphs for the largest of 600 positions of a 7x7
#: board played on to no safe line, of 21 parts; on 4x5 and 5x5 they had at most 12),
MAX_PARTS = 20
#: nor those of more joints (the compiled memo's key holds a joint in 4 bits).
MAX_JOINTS = 15


def position_graph(t, drawn: int, vals: list[int]):
    """``(edges, loops)`` of a position with no box to take, no safe line and a joint; None
    for any other. ``edges``: ``(a, b, n)`` per chain, ``a <= b`` its end vertices (0: the
    ground; joints numbered from 1 in box order), ``n`` its boxes; ``loops``: the lengths of
    the independent loops."""
    box_mask = t.box_mask
    unsafe = 0
    joint = {}
    b = 0
    for v in vals:
        if v == 2:
            unsafe |= box_mask[b]
        elif v < 2:
            joint[b] = len(joint) + 1
        elif v == 3:
            return None
        b += 1
    if not joint or t.full & ~drawn & ~unsafe:
        return None
    edges, loops = [], []
    line_boxes = t.line_boxes
    for is_loop, n, lines, _ind in chain_lines(t, drawn, vals):
        if is_loop:
            loops.append(n)
            continue
        # past each end line: a joint, or the border
        a, c = (next((joint[x] for x in line_boxes[ln] if x in joint), 0)
                for ln in (lines[0], lines[-1]))
        edges.append((min(a, c), max(a, c), n))
    return edges, loops


def _joints(edges) -> int:
    return max((b for _a, b, _n in edges), default=0)


def _degrees(edges) -> dict[int, int]:
    deg: dict[int, int] = {}
    for a, b, _n in edges:
        deg[a] = deg.get(a, 0) + 1
        deg[b] = deg.get(b, 0) + 1
    deg.pop(0, None)
    return deg


def normal_form(edges, loops) -> tuple[tuple, tuple]:
    """The normal ``(edges, loops)`` of a graph: joints of two lines merged into their chains,
    the joints renumbered by their invariants (:func:`_relabel`), both sorted. Isomorphic
    graphs share it unless joints of equal invariants are numbered in other orders (then
    each is still the key of its own graph only)."""
    edges = list(edges)
    loops = list(loops)
    while True:
        j = next((v for v, d in _degrees(edges).items() if d == 2), None)
        if j is None:
            break
        at = [e for e in edges if j in (e[0], e[1])]
        for e in at:
            edges.remove(e)
        if len(at) == 1:  # a chain from j back to j: with j, a loop
            loops.append(at[0][2] + 1)
            continue
        (a1, b1, n1), (a2, b2, n2) = at
        x = b1 if a1 == j else a1
        y = b2 if a2 == j else a2
        edges.append((min(x, y), max(x, y), n1 + 1 + n2))
    return _relabel(edges), tuple(sorted(loops))


def _relabel(edges) -> tuple:
    """The edges with the joints renumbered 1.. by their invariants (a joint's chains: their
    lengths and what is at their other end, then the same of its neighbours), tied joints in
    their order. (Trying every order of tied joints, up to 24 orders, gave the same memo hits
    and graphs solved on three positions of the 4x5-36 set: 91.7%, 43,746.)"""
    deg = _degrees(edges)
    inc: dict[int, list] = {j: [] for j in deg}
    for a, b, n in edges:
        for u, v in ((a, b), (b, a)):
            if u:
                inc[u].append((n, v))
    sig0 = {j: tuple(sorted((n, 0 if v == 0 else 1 if v == j else 2) for n, v in lst))
            for j, lst in inc.items()}
    sig = {j: (sig0[j], tuple(sorted((n, sig0[v] if v else ()) for n, v in lst if v != j)))
           for j, lst in inc.items()}
    label = {0: 0}
    for j in sorted(deg, key=lambda j: (sig[j], j)):
        label[j] = len(label)
    return tuple(sorted((min(label[a], label[b]), max(label[a], label[b]), n)
                        for a, b, n in edges))


class ChainGraph:
    """The chain-graph solver of one search: ``f`` of a graph, memoised in ``dp``'s memo
    (bounded and emptied with it). Counts its work: ``calls`` (positions asked),
    ``hits`` (of them, answered by the memo) and ``solved`` (graphs solved, each once)."""

    __slots__ = ("dp", "calls", "hits", "solved")

    def __init__(self, dp: LoonyDP | None = None) -> None:
        self.dp = dp if dp is not None else LoonyDP()
        self.calls = self.hits = self.solved = 0

    def position_value(self, t, drawn: int, vals: list[int]) -> int | None:
        """The exact value for the player to move of a position :func:`position_graph`
        reads as a graph small enough (``MAX_PARTS``, ``MAX_JOINTS``), else None."""
        g = position_graph(t, drawn, vals)
        if g is None or len(g[0]) + len(g[1]) > MAX_PARTS or _joints(g[0]) > MAX_JOINTS:
            return None
        edges, loops = normal_form(*g)
        self.calls += 1
        if ("g", edges, loops) in self.dp.memo:
            self.hits += 1
        return -self.f(edges, loops)

    def f(self, edges: tuple, loops: tuple) -> int:
        """What the player not to move nets from a graph in normal form (see
        :func:`normal_form`) when the player to move must open a chain or a loop."""
        if not _joints(edges):
            # no joint: independent chains and loops
            return self.dp.value(tuple(sorted(n for _a, _b, n in edges)), loops)
        memo = self.dp.memo
        key = ("g", edges, loops)
        v = memo.get(key)
        if v is not None:
            return v
        self.solved += 1
        deg = _degrees(edges)
        best = 1 << 30
        for i, e in enumerate(edges):
            if i and e == edges[i - 1]:
                continue
            a, b, n = e
            rest = list(edges[:i] + edges[i + 1:])
            if a and a == b and deg[a] == 3:
                # the loop through joint a: a and the chain of its third line go with it
                stem = next(x for x in rest if a in (x[0], x[1]))
                rest.remove(stem)
                n += 1 + stem[2]
            r = self.f(*normal_form(rest, loops))
            v = n - r if n <= 2 else n - 2 + abs(2 - r)
            if v < best:
                best = v
        for i, n in enumerate(loops):
            if i and n == loops[i - 1]:
                continue
            r = self.f(edges, loops[:i] + loops[i + 1:])
            v = n - 4 + abs(4 - r)
            if v < best:
                best = v
        if len(memo) >= self.dp.max_entries:
            memo.clear()
        memo[key] = best
        return best

