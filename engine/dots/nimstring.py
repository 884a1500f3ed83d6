"""Nimstring values: who can make the other player open the first long chain.

Nimstring (Berlekamp, *The Dots and Boxes Game*, chapters 4-6) is Dots and Boxes played for
the last move instead of boxes: completing a box obliges another move, and a player who cannot
move loses. Its theory, which :class:`Nimstring` computes:

- A *loony* move offers boxes in a way that lets the opponent choose between taking them all
  and declining the last two (a loop's last four). One of the two choices wins for him, so a
  loony move loses: it is left out of every mex.
- Boxes that can be taken without such a choice are taken at once: that changes no value.
- A position's value (its nimber) is the mex of the values of its other moves, and the parts
  of a position that share no undrawn line (components of the strings-and-coins graph) add:
  their values combine by XOR.

A value other than 0 means the player to move wins Nimstring. In Dots and Boxes that is
control: he can leave the first loony move, and with it the long chains, to the opponent.
That is what the fill evaluation's parity guesses, and what this decides exactly, within a
budget of component values to compute.
"""

from __future__ import annotations

from .geometry import Geometry, geometry

__all__ = ["NIMSTRING_MAX_ENTRIES", "Nimstring", "NimstringBudgetExceeded", "count_non_loony",
           "loony_or_settled", "non_loony_moves"]

#: Component values a :class:`Nimstring` remembers before it empties its memo.
NIMSTRING_MAX_ENTRIES = 1 << 21


class NimstringBudgetExceeded(Exception):
    """A value needed more new component values than its budget allowed."""


def loony_or_settled(geo: Geometry, undrawn: int, boxes) -> int | None:
    """Settle the captures around ``boxes`` (the boxes of a line just drawn) in the position
    whose undrawn lines are ``undrawn``: None when the position is loony (the taker may decline
    the last boxes), else the undrawn lines once every box that can be taken is taken."""
    box_mask, line_boxes = geo.box_mask, geo.line_boxes
    todo = [b for b in boxes if (box_mask[b] & undrawn).bit_count() == 1]
    while todo:
        c = todo.pop()
        last = box_mask[c] & undrawn
        if last.bit_count() != 1:
            continue  # taken with its neighbour already
        s = last.bit_length() - 1
        d = next((b for b in line_boxes[s] if b != c), None)
        if d is not None and (box_mask[d] & undrawn).bit_count() == 2:
            # c hangs on d, whose other line x leads to the border or to a box that cannot be
            # taken: the taker may draw x instead, handing c and d over (declining them)
            x = (box_mask[d] & undrawn & ~last).bit_length() - 1
            e = next((b for b in line_boxes[x] if b != d), None)
            if e is None or (box_mask[e] & undrawn).bit_count() >= 2:
                return None
        undrawn &= ~last
        if d is not None and (box_mask[d] & undrawn).bit_count() == 1:
            todo.append(d)
    return undrawn


def count_non_loony(geo: Geometry, drawn: int, limit: int) -> int:
    """The moves of position ``drawn`` (no box can be taken) that are not loony, counted up to
    ``limit + 1``."""
    undrawn = geo.all_lines & ~drawn
    n = 0
    rest = undrawn
    while rest and n <= limit:
        low = rest & -rest
        rest ^= low
        if loony_or_settled(geo, undrawn & ~low, geo.line_boxes[low.bit_length() - 1]) is not None:
            n += 1
    return n


def non_loony_moves(geo: Geometry, drawn: int) -> list[int]:
    """The lines of position ``drawn`` (no box can be taken) whose drawing is not loony."""
    undrawn = geo.all_lines & ~drawn
    out = []
    rest = undrawn
    while rest:
        low = rest & -rest
        rest ^= low
        ln = low.bit_length() - 1
        if loony_or_settled(geo, undrawn & ~low, geo.line_boxes[ln]) is not None:
            out.append(ln)
    return out


class Nimstring:
    """Nimstring values on one board, with a memo of component values (by the component's
    undrawn lines) that it bounds (``max_entries``) and empties (:meth:`clear`)."""

    __slots__ = ("geo", "memo", "max_entries", "_left")

    def __init__(self, width: int, height: int,
                 max_entries: int = NIMSTRING_MAX_ENTRIES) -> None:
        self.geo = geometry(width, height)
        self.memo: dict[int, int] = {}
        self.max_entries = max_entries
        self._left = 0

    def value(self, drawn: int, budget: int | None = None) -> int:
        """The nimber of the position ``drawn`` (lines as bits), which must have no box that
        can be taken (``ValueError`` otherwise). ``budget``: at most this many component
        values newly computed, else :class:`NimstringBudgetExceeded`."""
        geo = self.geo
        undrawn = geo.all_lines & ~drawn
        if any((m & undrawn).bit_count() == 1 for m in geo.box_mask):
            raise ValueError(f"a box can be taken in position {drawn:#x}")
        self._left = -1 if budget is None else budget
        return self._sum(undrawn)

    def components(self, undrawn: int) -> list[int]:
        """The undrawn lines split into components: lines that share a box are together."""
        geo = self.geo
        box_mask, line_boxes = geo.box_mask, geo.line_boxes
        out = []
        while undrawn:
            comp = frontier = undrawn & -undrawn
            while frontier:
                low = frontier & -frontier
                frontier ^= low
                for b in line_boxes[low.bit_length() - 1]:
                    new = box_mask[b] & undrawn & ~comp
                    comp |= new
                    frontier |= new
            undrawn &= ~comp
            out.append(comp)
        return out

    def _sum(self, undrawn: int) -> int:
        v = 0
        for comp in self.components(undrawn):
            v ^= self._component(comp)
        return v

    def _component(self, comp: int) -> int:
        memo = self.memo
        v = memo.get(comp)
        if v is not None:
            return v
        if self._left == 0:
            raise NimstringBudgetExceeded
        self._left -= 1
        geo = self.geo
        line_boxes = geo.line_boxes
        seen = set()
        rest = comp
        while rest:
            low = rest & -rest
            rest ^= low
            after = loony_or_settled(geo, comp & ~low, line_boxes[low.bit_length() - 1])
            if after is not None:
                seen.add(self._sum(after))
        v = 0
        while v in seen:
            v += 1
        if len(memo) >= self.max_entries:
            memo.clear()
        memo[comp] = v
        return v

    def clear(self) -> None:
        """Forget every remembered component value."""
        self.memo.clear()

    def __len__(self) -> int:
        return len(self.memo)
