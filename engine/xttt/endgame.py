"""Points-only endings of Extreme Tic-Tac-Toe.

Once every big-board pattern holds a block won by the opponent or drawn, for both players, no
pattern win is possible any more and the game is decided on rule-16 block points alone
(:func:`points_only`, two look-ups in the ``IS_WIN`` table). The static value is then the
expected points difference: each open block's value weighted by the players' chances to win
it (the block potentials of :mod:`engine.xttt.evaluate`), minus what the side to move must
concede because of where its move sends the opponent (:func:`send_loss`): when every cell of
its target block sends the opponent to a block the opponent can win at once (or hands it an
open move while it holds a threat somewhere), the cheapest such concession is counted.
"""

from __future__ import annotations

from .evaluate import W_PTS
from .tables import BLOCK_CELLS, BLOCK_VALUE, CELL_LOCAL, FULL, IS_WIN, OPEN

_VALUES = tuple(float(v) for v in BLOCK_VALUE)
SEND_WEIGHT = 1.0  # weight of the forced concession (points) in the static value


def has_live_pattern(won_mine: int, decided: int) -> bool:
    """Whether some big-board pattern holds no block won by the opponent and none drawn.

    ``won_mine`` is the mask of blocks the player won, ``decided`` the mask of won or drawn
    blocks; the blocks that spoil the player's patterns are ``decided & ~won_mine``.
    """
    return bool(IS_WIN[FULL & ~(decided & ~won_mine)])


def points_only(won_x: int, won_o: int, decided: int) -> bool:
    """Whether neither player can still complete a big-board pattern (only points matter)."""
    return not IS_WIN[FULL & ~(decided & ~won_x)] and not IS_WIN[FULL & ~(decided & ~won_o)]


def expected_points(px, po) -> float:
    """Expected rule-16 points of x minus o for the block values ``px`` / ``po``."""
    e = 0.0
    for v, x, o in zip(_VALUES, px, po, strict=True):
        e += v * (x - o)
    return e


def points_static(state, px, po, thr) -> int:
    """The points-only static value for the side to move, in evaluation units: expected
    points (as :func:`engine.xttt.evaluate.evaluate` scores them) minus :func:`send_loss`."""
    e = expected_points(px, po)
    if state.to_move:
        e = -e
        loss = send_loss(state.block_codes, state.marks, state.last_action, po, px, thr[1],
                         thr[0])
    else:
        loss = send_loss(state.block_codes, state.marks, state.last_action, px, po, thr[0],
                         thr[1])
    return int(W_PTS * (e - SEND_WEIGHT * loss))


def send_loss(status, bits, last: int, pme, pop, thr_me, thr_op) -> float:
    """The points the side to move ``me`` must concede with its next move (0 if it can avoid
    it, or when it moves freely, or wins a block now: that is left to the search).

    ``status`` / ``bits`` are the state's ``block_codes`` and ``marks``, ``last`` its
    ``last_action`` (the last cell),
    ``pme`` / ``pop`` the 16 block values of the side to move and of the opponent,
    ``thr_me`` / ``thr_op`` their 16 masks of threats (cells that win the block at once).
    Conceding a block ``b`` costs ``value(b) * (1 - pop[b] + pme[b])``: its expected share
    becomes a sure loss.
    """
    if last < 0:
        return 0.0
    t_blk = CELL_LOCAL[last]
    if status[t_blk] != OPEN or thr_me[t_blk]:
        return 0.0
    occupied = bits[0][t_blk] | bits[1][t_blk]
    free = FULL & ~occupied
    open_gain = -1.0  # the opponent's best block win on an open move, computed when needed
    best = None
    cells = BLOCK_CELLS[t_blk]
    for loc in range(16):
        bit = 1 << loc
        if not free & bit:
            continue
        t = CELL_LOCAL[cells[loc]]  # == loc: the block the opponent is sent to
        if t == t_blk:
            if free == bit:  # the move fills the block: drawn, so an open move
                t = -1
            else:
                op = thr_op[t] & ~bit
                loss = _VALUES[t] * (1.0 - pop[t] + pme[t]) if op else 0.0
        if t != t_blk:
            if t >= 0 and status[t] == OPEN:
                loss = _VALUES[t] * (1.0 - pop[t] + pme[t]) if thr_op[t] else 0.0
            else:
                if open_gain < 0.0:
                    open_gain = 0.0
                    for b in range(16):
                        if status[b] == OPEN and b != t_blk and thr_op[b]:
                            g = _VALUES[b] * (1.0 - pop[b] + pme[b])
                            if g > open_gain:
                                open_gain = g
                loss = open_gain
                if free != bit and thr_op[t_blk] & ~bit:  # the target block stays open
                    g = _VALUES[t_blk] * (1.0 - pop[t_blk] + pme[t_blk])
                    if g > loss:
                        loss = g
        if best is None or loss < best:
            best = loss
            if best <= 0.0:
                return 0.0
    return best if best is not None else 0.0
