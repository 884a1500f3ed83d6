"""Heuristic value of a Dots-and-Boxes position at the search horizon.

Guide: the long-chain rule. Whoever has to move when the safe lines run out must open a chain
or loop, and the other player keeps control and takes the controlled value of what is left.
So: fill the safe lines greedily in a fixed order (both players drawing safe lines), count them
(``k``), read the chains and loops of the loony position that is left and value it with the
chain DP (``f``, from :mod:`chain_dp`). The player to move at the leaf moves again at the loony
position when ``k`` is even, and loses ``f`` then; when ``k`` is odd he wins ``f``.

Boxes of valence 0/1 left after the fill (joints between chains) are counted with the longest
chain, a rough stand-in. The classic handout counts (one- and two-box handouts at face value,
long chains worth about ``length - 4``) are special cases of the DP.

Speed (most of a mid-game search's time is spent here): the fill walks only the lines it can
still draw, as the set bits of a mask in "order space" (bit i = the i-th line of the order;
the tables are the board's ``Tables.fills``); an :class:`Evaluator` remembers values by leaf
position and the loony value by the position a fill ends in, which different leaves often
share. A search's evaluator belongs to its caches (``caches.DotsCaches``), so a
``SearchCache`` keeps it between analyses, bounds it and empties it.
"""

from __future__ import annotations

from ..chain_dp import LoonyDP, chain_counts
from .board import FILLS, Tables

__all__ = ["FILLS", "TRUST_NUM", "TRUST_DEN", "PARITY_HORIZON", "PARITY_RAMP",
           "EVAL_MAX_ENTRIES", "Evaluator"]

# The fill's parity is a guess: the sign of ``f`` agrees with the exact value only part of
# the time (58-64% on solved 5x5 mid-game positions), so the expected value is nearer
# (2p - 1) f than f: ``f`` is scaled by NUM/DEN, the scale of least regret measured
# (docs/benchmarks.md, the Dots-and-Boxes search).
TRUST_NUM, TRUST_DEN = 1, 3
# Optional damping of the parity term while many safe lines are left: full weight with at most
# PARITY_HORIZON - PARITY_RAMP safe lines left, none with PARITY_HORIZON or more. Off: damping
# lost more games than it saved (docs/benchmarks.md, the Dots-and-Boxes search).
PARITY_HORIZON = 1 << 30
PARITY_RAMP = 1


# Values by position: a horizon position comes back in every deeper iteration, in zero-window
# re-searches and in the next move's search. Values of the loony positions the fills end in,
# by position: different leaves often fill to the same one. Each memo is kept small (emptied
# when full): growing or clearing a 2**18-entry dict takes 5-7 ms, enough to overrun a 200 ms
# deadline.
EVAL_MAX_ENTRIES = 1 << 16


class Evaluator:
    """The horizon evaluation of one board size (``t``) with its memos: ``values`` (the
    value of a leaf, by position) and ``ends`` (the loony value of where a fill ends, by
    position), each emptied when it holds ``max_entries`` values, and the chain DP ``dp``
    (a :class:`~engine.dots.chain_dp.LoonyDP`). The memos are pure: a value never depends
    on what they hold."""

    __slots__ = ("t", "values", "ends", "dp", "max_entries")

    def __init__(self, t: Tables, max_entries: int = EVAL_MAX_ENTRIES,
                 dp: LoonyDP | None = None) -> None:
        self.t = t
        self.values: dict[int, int] = {}
        self.ends: dict[int, int] = {}
        self.max_entries = max_entries
        self.dp = dp if dp is not None else LoonyDP()

    def evaluate(self, drawn: int, vals: list[int]) -> int:
        """Estimated future-box margin for the player to move (no box can be taken now).

        With ``FILLS`` > 1 the fill is repeated in other orders and the results averaged, so
        a parity that depends on the order counts for less than one every order agrees on."""
        values = self.values
        v = values.get(drawn)
        if v is not None:
            return v
        blocked = _blocked(self.t, drawn, vals)
        total = 0
        for i in range(FILLS):
            total += self.fill_value(drawn, vals, i, blocked)
        v = total * TRUST_NUM // (FILLS * TRUST_DEN)
        if len(values) >= self.max_entries:
            values.clear()
        values[drawn] = v
        return v

    def fill_value(self, drawn: int, vals: list[int], i: int,
                   blocked: int | None = None) -> int:
        """The fill in ``t.fill_orders[i]`` and the parity-signed value of where it ends
        (``blocked``: the lines no fill may draw, when the caller has them)."""
        if blocked is None:
            blocked = _blocked(self.t, drawn, vals)
        k, end, end_vals = self.fill(drawn, vals, i, blocked)
        f = self.loony(end, end_vals)
        # the parity of the fill is a guess that firms up as the safe lines run out: with
        # many left it is worth little (and must not pay for a real box sacrificed early on)
        weight = PARITY_HORIZON - k
        if weight <= 0:
            return 0
        if weight < PARITY_RAMP:
            f = f * weight // PARITY_RAMP
        return f if k & 1 else -f

    def fill(self, drawn: int, vals: list[int], i: int,
             blocked: int) -> tuple[int, int, list[int]]:
        """The greedy fill of safe lines in ``t.fill_orders[i]`` (``blocked``: the lines it
        may not draw): ``(lines drawn, position, valences)`` where it ends."""
        t = self.t
        fo = t.fills[i]
        vals = vals[:]
        line_boxes = t.line_boxes
        box_masks = fo.box_masks
        order = fo.order
        # the lines still to try, in order space
        todo = ~fo.to_order(blocked) & t.full
        k = 0
        while todo:
            low = todo & -todo
            todo ^= low
            ln = order[low.bit_length() - 1]
            drawn |= 1 << ln
            k += 1
            for b in line_boxes[ln]:
                v = vals[b] = vals[b] + 1
                if v == 2:
                    todo &= ~box_masks[b]
        return k, drawn, vals

    def loony(self, drawn: int, vals: list[int]) -> int:
        """The chain DP's value, for the player in control, of where a fill ends (boxes of
        valence 0 or 1 counted with the longest chain), remembered by position."""
        ends = self.ends
        f = ends.get(drawn)
        if f is None:
            chains, loops, joints = chain_counts(self.t, drawn, vals)
            if joints:
                if chains:
                    i = chains.index(max(chains))
                    chains[i] += joints
                else:
                    chains.append(joints)
            f = self.dp.fast(chains, loops)
            if len(ends) >= self.max_entries:
                ends.clear()
            ends[drawn] = f
        return f

    def clear(self) -> None:
        """Forget every remembered value (not the chain DP's: it has its own owner)."""
        self.values.clear()
        self.ends.clear()

    def __len__(self) -> int:
        return len(self.values) + len(self.ends)


def _blocked(t: Tables, drawn: int, vals: list[int]) -> int:
    """The lines no fill may draw: drawn, or next to a box of valence 2."""
    blocked = drawn
    for v, m in zip(vals, t.box_mask, strict=True):
        if v >= 2:
            blocked |= m
    return blocked
