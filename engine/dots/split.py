"""A Dots-and-Boxes position split into subproblems, for a solve spread over many workers
(``boxfish solve --distributed``; the coordinator is
:mod:`boxfish.service.application.distributed_solve`).

:class:`Split` unfolds the tree of the position to ``depth`` plies, each position named by
its search key (``Tables.key``: the smallest twin-sorted image under the board's
symmetries, itself a position of the same value), so mirrored and transposed positions are
one node. A position with a box to take is never unfolded (the search's capture rules take
it whole), nor the end of the game; the positions at the frontier (the leaves) are the
subproblems. No move of an unfolded position completes a box, so every edge passes the
turn: an inner node's value is the best of its children's values negated (a value is the
margin of the boxes still to come for the player to move).

A subproblem is a zero-window test, "is value(leaf) >= beta?", answered by
:func:`prove_leaf` with a proven bound. The coordinator keeps every leaf's proven bounds;
:meth:`Split.bounds` carries them up the tree, and :meth:`Split.tests` says which leaf tests
the answer to "is value(node) >= beta?" waits for, with alpha-beta's pruning (a child that
refutes a test ends it) and the young brothers wait rule (a node's other children are tested
only once its first one has failed to refute, then all at once, in parallel). The root
value comes from MTD(f) over these tests (:func:`next_beta`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .search.board import Tables, tables
from .search.driver import _mtd_beta
from .search.node import CompiledSearcher
from .search.table import PROVEN


@dataclass(frozen=True, slots=True)
class SplitNode:
    """A position of the split (``key``: its search key, a position), the boxes still to
    come (``rem``), its children's keys (empty: a leaf) and, for each, the line drawn."""

    key: int
    rem: int
    children: tuple[int, ...]
    lines: tuple[int, ...]

    @property
    def leaf(self) -> bool:
        return not self.children


class Split:
    """The tree of ``drawn`` on a ``w`` x ``h`` board unfolded ``depth`` plies (see the
    module docstring). ``root``: the root's key; ``nodes``: every node by key; ``leaves``:
    the leaves' keys (depth first, children in the search's order)."""

    def __init__(self, w: int, h: int, drawn: int, depth: int) -> None:
        if depth < 0:
            raise ValueError(f"the split depth must be >= 0, not {depth}")
        t = self.t = tables(w, h)
        if drawn & ~t.full:
            raise ValueError(f"drawn has lines outside a {w}x{h} board")
        self.w, self.h, self.drawn, self.depth = w, h, drawn, depth
        self.root = t.key(drawn)[0]
        self.nodes: dict[int, SplitNode] = {}
        level = [self.root]
        for d in range(depth + 1):
            nxt: dict[int, None] = {}
            for key in level:
                kids = {} if d == depth else _children(t, key)
                nxt.update(dict.fromkeys(kids))
                self.nodes[key] = SplitNode(key, _remaining(t, key), tuple(kids),
                                            tuple(kids.values()))
            level = list(nxt)
        # every edge adds one line: the deepest nodes (most lines) first is children first
        self.bottom_up = sorted(self.nodes, key=lambda k: -k.bit_count())
        self.leaves = [k for k in self._depth_first() if self.nodes[k].leaf]

    def _depth_first(self) -> list[int]:
        seen: dict[int, None] = {}
        stack = [self.root]
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen[key] = None
            stack.extend(reversed(self.nodes[key].children))
        return list(seen)

    def root_children(self) -> dict[int, int]:
        """Every legal line of the root position (its own frame) -> its child's key (lines
        of a mirrored or twin child share a key); empty when the root is a leaf."""
        if self.nodes[self.root].leaf:
            return {}
        return {ln: self.t.key(self.drawn | 1 << ln)[0]
                for ln in range(self.t.nl) if not self.drawn >> ln & 1}

    def initial(self, key: int) -> tuple[int, int]:
        """What is known of a position before any search: its value lies within the boxes
        still to come."""
        rem = self.nodes[key].rem
        return -rem, rem

    def bounds(self, leaf_bounds: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """Proven (lower, upper) bounds of every node from those of the leaves
        (``leaf_bounds``; a leaf missing there: only :meth:`initial`)."""
        out: dict[int, tuple[int, int]] = {}
        for key in self.bottom_up:
            node = self.nodes[key]
            if node.leaf:
                lo, hi = self.initial(key)
                if key in leaf_bounds:
                    slo, shi = leaf_bounds[key]
                    lo, hi = max(lo, slo), min(hi, shi)
                out[key] = (lo, hi)
            else:
                out[key] = (max(-out[c][1] for c in node.children),
                            max(-out[c][0] for c in node.children))
        return out

    def tests(self, bounds: dict[int, tuple[int, int]], key: int, beta: int,
              out: dict[int, int], seen: set | None = None, eager: int = 0) -> None:
        """Add to ``out`` (leaf key -> beta, in the order they are wanted; a leaf already
        there keeps its first beta) the leaf tests that "value(key) >= beta?" waits for,
        given ``bounds`` (:meth:`bounds`'). Nothing when the bounds decide it. ``eager``:
        while ``out`` holds fewer tests, the younger brothers of an undecided first child
        are added too, after it (speculative work for idle workers)."""
        seen = set() if seen is None else seen
        lo, hi = bounds[key]
        if lo >= beta or hi < beta or (key, beta) in seen:
            return
        seen.add((key, beta))
        node = self.nodes[key]
        if node.leaf:
            out.setdefault(key, beta)
            return
        # value(key) >= beta iff some child has value < 1 - beta. The children proven
        # lowest first (the search's order among equals): the likeliest refutations.
        cb = 1 - beta
        kids = sorted(node.children, key=lambda c: bounds[c][1])
        # while the first child may still refute, the others wait (unless ``eager``)
        first_open = bounds[kids[0]][0] < cb
        if first_open:
            self.tests(bounds, kids[0], cb, out, seen, eager)
        for child in kids[1:]:
            if first_open and len(out) >= eager:
                return
            self.tests(bounds, child, cb, out, seen, eager)


def next_beta(lo: int, hi: int, rem: int) -> int:
    """The next MTD(f) test "value >= beta?" of a value proven to lie in [``lo``, ``hi``]
    (``lo < hi``, out of ``rem`` boxes to come): from 0 at first, then from the bound proven
    last; it proves a new bound whichever way it goes."""
    guess = lo if lo > -rem else hi if hi < rem else 0
    return _mtd_beta(guess, lo, hi)


def prove_leaf(searcher: CompiledSearcher, drawn: int, beta: int) -> tuple[int, int]:
    """Proven (lower, upper) bounds of the value of ``drawn`` that answer "is it >=
    ``beta``?" (one zero-window search to the end of the game with ``searcher``; the other
    bound is the boxes still to come)."""
    rem = _remaining(searcher.t, drawn)
    v = searcher.search(drawn, beta - 1, beta, PROVEN)
    return (v, rem) if v >= beta else (-rem, v)


def _remaining(t: Tables, drawn: int) -> int:
    return sum(1 for m in t.box_mask if drawn & m != m)


def _children(t: Tables, drawn: int) -> dict[int, int]:
    """The children of ``drawn`` to unfold (child key -> the line drawn; the first line of
    each key), safe lines first, the most central first, then the rest; none when a box can
    be taken or the game is over."""
    vals = t.valences(drawn)
    if 3 in vals or drawn == t.full:
        return {}
    free = [ln for ln in range(t.nl) if not drawn >> ln & 1]

    def order(ln: int) -> tuple[bool, int]:
        sacrifice = any(vals[b] == 2 for b in t.line_boxes[ln])
        return sacrifice, -t.centrality[ln]

    out: dict[int, int] = {}
    for ln in sorted(free, key=order):
        out.setdefault(t.key(drawn | 1 << ln)[0], ln)
    return out


__all__ = ["Split", "SplitNode", "next_beta", "prove_leaf"]
