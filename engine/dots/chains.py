"""The chain state: boxes of valence 2 or 3 joined through undrawn lines, and the phase.

A chain is a path or a cycle (a box of valence 2 has two undrawn lines, one of valence 3 has
one, so no box has more than two chain neighbours). Its kind follows from its "exits", the
undrawn lines that leave it for the border or for a box outside it:

- ``closed``: a path with no exit (both ends valence 3);
- ``half-open``: a path with one exit (one end valence 3, the other valence 2);
- ``open``: a path with two exits (both ends valence 2, not a cycle);
- ``loop``: a cycle.

A chain is keyed by its smallest box id, which makes the decomposition canonical: the same
position always gives the same keys, whatever order the moves came in.

The phase of a game (:class:`Phase`) goes with it: ``start`` until boxes have been taken and
no capture is left on the board, then ``middle``, and ``end`` from the move after that on.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .geometry import Geometry


class ChainKind(StrEnum):
    """The kind of a chain (compares equal to, and serialises as, its string)."""

    CLOSED = "closed"        #: a path with no exit
    HALF_OPEN = "half-open"  #: a path with one exit
    OPEN = "open"            #: a path with two exits
    LOOP = "loop"            #: a cycle


class Phase(StrEnum):
    """The phase of a Dots-and-Boxes game (see the module docstring)."""

    START = "start"
    MIDDLE = "middle"
    END = "end"


_KIND_BY_EXITS = (ChainKind.CLOSED, ChainKind.HALF_OPEN, ChainKind.OPEN)


@dataclass(frozen=True, slots=True)
class Chain:
    """One chain: its kind, its boxes as ``(x, y)`` top-left dots in path order, its length."""

    kind: ChainKind
    boxes: tuple
    length: int

    def to_dict(self) -> dict:
        return {"kind": str(self.kind), "length": self.length,
                "boxes": [list(b) for b in self.boxes]}


@dataclass(frozen=True, slots=True)
class ChainState:
    """Valence of every box (rows top to bottom), the chains, which chain each box is in
    (``chain_of[(x, y)]`` = index into ``chains``), and the phase."""

    valence: tuple
    chains: tuple
    chain_of: dict
    phase: Phase

    def to_dict(self) -> dict:
        return {
            "phase": str(self.phase),
            "valence": [list(r) for r in self.valence],
            "chains": [c.to_dict() for c in self.chains],
        }


def flood(geo: Geometry, drawn: int, valence: list[int],
          start: int) -> tuple[ChainKind, tuple]:
    """The chain through box ``start`` (valence 2 or 3): its kind and its boxes in path order."""
    nbrs = geo.box_neighbours
    members = {start}
    stack = [start]
    while stack:
        b = stack.pop()
        for ln, nb in nbrs[b]:
            if nb >= 0 and not (drawn >> ln) & 1 and nb not in members and 2 <= valence[nb] <= 3:
                members.add(nb)
                stack.append(nb)
    links: dict[int, list[int]] = {}
    exits = 0
    for b in members:
        inside = []
        for ln, nb in nbrs[b]:
            if (drawn >> ln) & 1:
                continue
            if nb in members:
                inside.append(nb)
            else:
                exits += 1
        links[b] = sorted(inside)
    ends = sorted(b for b, ln in links.items() if len(ln) < 2)
    if not ends:
        kind = ChainKind.LOOP
        first = min(members)
    else:
        kind = _KIND_BY_EXITS[exits]
        first = ends[0]
    order = [first]
    prev, cur = -1, first
    while True:
        nxt = [n for n in links[cur] if n != prev]
        if not nxt or nxt[0] == first:
            break
        prev, cur = cur, nxt[0]
        order.append(cur)
    return kind, tuple(order)


class ChainTracker:
    """The chain decomposition of a position, kept current by re-flooding only what changed.

    Callers report boxes whose valence changed with ``touch(box_mask)`` (an int of box bits);
    ``sync(drawn, valence)`` then dissolves the chains that can have changed (those holding a
    touched box or one of its neighbours) and floods them again. Between the two nothing is
    recomputed, so play and undo stay cheap.
    """

    __slots__ = ("geo", "chain_of", "chains", "dirty")

    def __init__(self, geo: Geometry) -> None:
        self.geo = geo
        self.chain_of = [-1] * geo.num_boxes
        self.chains: dict[int, tuple[ChainKind, tuple]] = {}
        self.dirty = (1 << geo.num_boxes) - 1

    def copy(self) -> ChainTracker:
        other = ChainTracker.__new__(ChainTracker)
        other.geo = self.geo
        other.chain_of = self.chain_of[:]
        other.chains = dict(self.chains)
        other.dirty = self.dirty
        return other

    def sync(self, drawn: int, valence: list[int]) -> None:
        dirty = self.dirty
        if not dirty:
            return
        self.dirty = 0
        nbrs = self.geo.box_neighbours
        chain_of, chains = self.chain_of, self.chains
        region = set()
        while dirty:
            low = dirty & -dirty
            b = low.bit_length() - 1
            dirty ^= low
            region.add(b)
            for _ln, nb in nbrs[b]:
                if nb >= 0:
                    region.add(nb)
        for key in {chain_of[b] for b in region if chain_of[b] >= 0}:
            for b in chains.pop(key)[1]:
                chain_of[b] = -1
                region.add(b)
        for b in sorted(region):
            if chain_of[b] == -1 and 2 <= valence[b] <= 3:
                kind, boxes = flood(self.geo, drawn, valence, b)
                key = min(boxes)
                chains[key] = (kind, boxes)
                for m in boxes:
                    chain_of[m] = key

    def snapshot(self, valence: list[int], phase: Phase) -> ChainState:
        """The public view; call ``sync`` first."""
        geo = self.geo
        w = geo.width
        xy = geo.box_xy
        keys = sorted(self.chains)
        position = {k: i for i, k in enumerate(keys)}
        chains = tuple(Chain(kind, tuple(xy[b] for b in boxes), len(boxes))
                       for kind, boxes in (self.chains[k] for k in keys))
        chain_of = {xy[b]: position[k] for b, k in enumerate(self.chain_of) if k >= 0}
        rows = tuple(tuple(valence[r * w:(r + 1) * w]) for r in range(geo.height))
        return ChainState(rows, chains, chain_of, phase)


def decompose(geo: Geometry, drawn: int,
              valence: list[int]) -> dict[int, tuple[ChainKind, tuple]]:
    """The whole decomposition from scratch (the reference the tracker must agree with)."""
    seen = [False] * geo.num_boxes
    out = {}
    for b in range(geo.num_boxes):
        if not seen[b] and 2 <= valence[b] <= 3:
            kind, boxes = flood(geo, drawn, valence, b)
            for m in boxes:
                seen[m] = True
            out[min(boxes)] = (kind, boxes)
    return out
