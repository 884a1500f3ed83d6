"""Chains: the words for them, the one walk along them, and the chain state of a game.

The words, which :mod:`chain_dp` and the search use too:

- A *chain* is a maximal string of boxes joined through undrawn lines, each box joined to at
  most two others: a path, or a cycle, called a *loop*. Where chains are set against loops
  (the chain DP's ``chains, loops``), "chains" means the paths.
- Its boxes have valence 2 (two undrawn lines: one in, one out), and at a path's end possibly
  3 (a capturable box ends its chain). The game state's chains (:class:`ChainState`) take
  both; the search's (:mod:`chain_dp`) take valence 2 only, as it reads chains where no box
  can be taken, or leaves the capturable ones to its capture rules.
- A path's *exits* are the undrawn lines that leave it, for the border or a box outside it.
  Its *kind* follows: ``closed`` (no exit: both ends valence 3), ``half-open`` (one exit: one
  end valence 3, the other valence 2), ``open`` (two exits); a cycle is of kind ``loop``.
- *Joints* are the boxes of valence 0 or 1, where chains meet. A chain is *independent* when
  both of its ends lead to the border (a loop always is).

:func:`walk` follows a chain from one of its boxes out through one of its lines; every walk
along a chain in the engine's Python code is one of its walks (the compiled core has its own).

The chain state of a game (:class:`ChainState`) keys a chain by its smallest box id, which
makes the decomposition canonical: the same position always gives the same keys, whatever
order the moves came in. The phase of a game (:class:`Phase`) goes with it: ``start`` until
boxes have been taken and no capture is left on the board, then ``middle``, and ``end`` from
the move after that on.
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


def walk(box_mask, other, drawn: int, vals, start: int, line: int,
         lines: list[int] | None = None) -> tuple[int, int, int, int]:
    """Follow a chain from box ``start`` out through its undrawn ``line``, from box to box
    while the box entered has valence 2 (in through one undrawn line, out by the other).

    ``box_mask`` and ``other`` are the board's tables (``Geometry``'s, or the search's
    aliases); ``vals`` the valences of ``drawn``. Returns ``(n, end, last, seen)``: the boxes
    of valence 2 entered (``start`` not counted), the box the walk stopped at (-1: the border;
    ``start``: the chain is a loop; else a box of another valence), the last line crossed
    (the one towards ``end``), and the boxes entered as bits. ``lines``, when given, receives
    every line crossed, in order."""
    box = start
    n = 0
    seen = 0
    while True:
        if lines is not None:
            lines.append(line)
        nb = other[line][box]
        if nb < 0 or vals[nb] != 2 or nb == start:
            return n, nb, line, seen
        seen |= 1 << nb
        n += 1
        line = (box_mask[nb] & ~drawn & ~(1 << line)).bit_length() - 1
        box = nb


def flood(geo: Geometry, drawn: int, valence: list[int],
          start: int) -> tuple[ChainKind, tuple]:
    """The chain through box ``start`` (valence 2 or 3): its kind and its boxes in path order
    (a path from its smaller end; a loop from its smallest box towards the smaller of that
    box's two neighbours)."""
    box_mask, other = geo.box_mask, geo.other
    free = box_mask[start] & ~drawn
    sides = []
    exits = 0
    while free:  # one side through each undrawn line of ``start``
        low = free & -free
        free ^= low
        crossed: list[int] = []
        n, end, _last, _seen = walk(box_mask, other, drawn, valence, start,
                                    low.bit_length() - 1, crossed)
        side = []
        box = start
        for ln in crossed[:n]:
            box = other[ln][box]
            side.append(box)
        if end == start:
            return ChainKind.LOOP, _loop_order([start, *side])
        if end >= 0 and valence[end] == 3:
            side.append(end)  # a capturable box ends the chain, inside it
        else:
            exits += 1
        sides.append(side)
    path = [*reversed(sides[0]), start, *(sides[1] if len(sides) > 1 else ())]
    if path[0] > path[-1]:
        path.reverse()
    return _KIND_BY_EXITS[exits], tuple(path)


def _loop_order(cycle: list[int]) -> tuple:
    """The boxes of a loop (in cycle order) from the smallest, towards its smaller
    neighbour."""
    i = cycle.index(min(cycle))
    cycle = cycle[i:] + cycle[:i]
    if cycle[1] > cycle[-1]:
        cycle[1:] = cycle[:0:-1]
    return tuple(cycle)


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
