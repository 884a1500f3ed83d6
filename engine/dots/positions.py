"""Generators of Dots-and-Boxes positions reached by play, for tests and benchmarks.

Each generator plays random moves from the empty ``width`` x ``height`` board until exactly
``undrawn`` lines are left, following the rules (a line that completes a box keeps the turn),
and returns a :class:`GeneratedPosition`: the drawn lines as a bitmask (bit ``i`` = line ``i``,
OpenSpiel's action ids), the player to move (0 or 1, player 0 moves first) and the lines in
the order they were played, so the position can be replayed through the engine's rules.

Both are deterministic for a given ``random.Random`` (the same state gives the same
position) and depend on the board's geometry only, not on the search.

* :func:`safe_play`: plausible mid-game positions: take every box offered, else draw a line
  that gives no box its third side, else sacrifice as few boxes as possible; the position
  returned has no box with three sides drawn.
* :func:`biased_play`: noisier play: with probability ``p_safe`` a move that gives nothing
  away (a capture or a safe line) when there is one, else any line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .geometry import Geometry, geometry

__all__ = ["GeneratedPosition", "biased_play", "safe_play"]


@dataclass(frozen=True, slots=True)
class GeneratedPosition:
    """A position reached by play from the empty ``width`` x ``height`` board.

    ``drawn``: bit ``i`` set for each drawn line ``i``; ``to_move``: the player to move (0
    moved first); ``moves``: the line ids in the order played (``drawn`` is their union)."""

    width: int
    height: int
    drawn: int
    to_move: int
    moves: tuple[int, ...]

    @property
    def undrawn(self) -> int:
        """How many lines are left."""
        return (self.height + 1) * self.width + self.height * (self.width + 1) \
            - len(self.moves)


class _Play:
    """A game in progress on bitmasks: the drawn lines, box valences and the player to
    move."""

    __slots__ = ("geo", "drawn", "val", "to_move", "moves")

    def __init__(self, geo: Geometry) -> None:
        self.geo = geo
        self.drawn = 0
        self.val = [0] * geo.num_boxes
        self.to_move = 0
        self.moves: list[int] = []

    def free(self) -> list[int]:
        d = self.drawn
        return [ln for ln in range(self.geo.num_lines) if not d >> ln & 1]

    def completes(self, ln: int) -> int:
        """Boxes that drawing ``ln`` completes."""
        return sum(1 for b in self.geo.line_boxes[ln] if self.val[b] == 3)

    def gives(self, ln: int) -> int:
        """Boxes that drawing ``ln`` brings to three sides (0: a safe line)."""
        return sum(1 for b in self.geo.line_boxes[ln] if self.val[b] == 2)

    def play(self, ln: int) -> None:
        done = 0
        for b in self.geo.line_boxes[ln]:
            self.val[b] += 1
            done += self.val[b] == 4
        self.drawn |= 1 << ln
        self.moves.append(ln)
        if not done:
            self.to_move ^= 1

    def undo(self) -> None:
        ln = self.moves.pop()
        done = 0
        for b in self.geo.line_boxes[ln]:
            done += self.val[b] == 4
            self.val[b] -= 1
        self.drawn &= ~(1 << ln)
        if not done:
            self.to_move ^= 1

    def boxes_handed_over(self, ln: int) -> int:
        """Boxes the opponent can take in a row after the mover draws ``ln`` (which completes
        none): the line is drawn, every box with three sides is taken until none is left,
        and the board is put back."""
        played = 1
        self.play(ln)
        taken = 0
        while True:
            caps = [x for x in self.free() if self.completes(x)]
            if not caps:
                break
            taken += self.completes(caps[0])
            self.play(caps[0])
            played += 1
        for _ in range(played):
            self.undo()
        return taken

    def position(self) -> GeneratedPosition:
        return GeneratedPosition(self.geo.width, self.geo.height, self.drawn, self.to_move,
                                 tuple(self.moves))


def _check(w: int, h: int, undrawn: int) -> Geometry:
    geo = geometry(w, h)
    if not 0 <= undrawn <= geo.num_lines:
        raise ValueError(f"undrawn must be 0..{geo.num_lines} on {w}x{h}, got {undrawn}")
    return geo


def safe_play(rng: random.Random, w: int, h: int, undrawn: int,
              max_tries: int = 100) -> GeneratedPosition:
    """A position of a ``w`` x ``h`` board with exactly ``undrawn`` undrawn lines, reached by
    random play that never hands a box over while it need not:

    * when a line completes a box, draw one of those (chosen uniformly; the turn is kept);
    * else, when safe lines exist (lines that give no box its third side), draw one of them
      uniformly;
    * else sacrifice: draw a line after which the opponent can take the fewest boxes in a
      row (ties uniformly).

    The position returned is quiet: no box has exactly three sides drawn (the board minus
    ``undrawn`` lines is not in the middle of a capture). A game that reaches the count in
    such a state is played again from the empty board, up to ``max_tries`` games; then
    ``ValueError`` (as for an ``undrawn`` outside ``0..lines``)."""
    geo = _check(w, h, undrawn)
    for _ in range(max_tries):
        g = _Play(geo)
        target = geo.num_lines - undrawn
        while len(g.moves) < target:
            free = g.free()
            caps = [ln for ln in free if g.completes(ln)]
            if caps:
                g.play(rng.choice(caps))
                continue
            safe = [ln for ln in free if not g.gives(ln)]
            if safe:
                g.play(rng.choice(safe))
                continue
            cost = {ln: g.boxes_handed_over(ln) for ln in free}
            least = min(cost.values())
            g.play(rng.choice([ln for ln in free if cost[ln] == least]))
        if 3 not in g.val:
            return g.position()
    raise ValueError(f"no quiet position with {undrawn} undrawn lines on {w}x{h} in "
                     f"{max_tries} games")


def biased_play(rng: random.Random, w: int, h: int, undrawn: int,
                p_safe: float) -> GeneratedPosition:
    """A position of a ``w`` x ``h`` board with exactly ``undrawn`` undrawn lines, reached by
    random play: at each move, with probability ``p_safe`` (when there is such a move) one of
    the moves that give nothing away (a line that completes a box, or a safe line: one that
    gives no box its third side), chosen uniformly; otherwise any undrawn line, uniformly.
    The position may have boxes with three sides (a capture pending). ``ValueError`` for an
    ``undrawn`` outside ``0..lines`` or a ``p_safe`` outside [0, 1]."""
    geo = _check(w, h, undrawn)
    if not 0.0 <= p_safe <= 1.0:
        raise ValueError(f"p_safe must be in [0, 1], got {p_safe}")
    g = _Play(geo)
    target = geo.num_lines - undrawn
    while len(g.moves) < target:
        free = g.free()
        good = [ln for ln in free if g.completes(ln) or not g.gives(ln)]
        # one draw per move whatever the position, so the stream of choices stays aligned
        if rng.random() < p_safe and good:
            g.play(rng.choice(good))
        else:
            g.play(rng.choice(free))
    return g.position()
