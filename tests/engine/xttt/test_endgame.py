"""Points-only endings: detection, expected-points evaluation, forced concessions."""

from __future__ import annotations

import random

from boxfish import engine
from boxfish.engine.xttt.endgame import expected_points, has_live_pattern, points_only, send_loss
from boxfish.engine.xttt.evaluate import W_PTS, evaluate
from boxfish.engine.xttt.search import Searcher

from .helpers import PATTERNS, ROWS, Grid, cell

# Drawn edge blocks that spoil all 12 big-board patterns for both players.
DEAD = [(0, 1), (1, 3), (2, 0), (3, 2)]
# A block with two empty cells, local (0, 0) and (3, 3), and no threat for either player.
TWO_HOLES = [".xoo", "ooxx", "xxoo", "oox."]


def _mask(blocks) -> int:
    return sum(1 << (r * 4 + c) for r, c in blocks)


def _live(won_mine: int, spoilers: int) -> bool:
    return any(not _mask(p) & spoilers for p in PATTERNS)


def test_points_only_detection_matches_the_patterns():
    rng = random.Random(5)
    for _ in range(3000):
        owner = [rng.choice("xxoo..d") for _ in range(16)]
        wx = sum(1 << b for b in range(16) if owner[b] == "x")
        wo = sum(1 << b for b in range(16) if owner[b] == "o")
        dr = sum(1 << b for b in range(16) if owner[b] == "d")
        decided = wx | wo | dr
        live_x, live_o = _live(wx, wo | dr), _live(wo, wx | dr)
        assert has_live_pattern(wx, decided) == live_x
        assert has_live_pattern(wo, decided) == live_o
        assert points_only(wx, wo, decided) == (not live_x and not live_o)


def _dead_grid() -> Grid:
    g = Grid()
    for b in DEAD:
        g.draw(b)
    return g


def _static(state) -> int:
    return Searcher(state).static()


def test_points_only_evaluation_prefers_the_higher_value_block():
    corner = _dead_grid().win((0, 0), "x").win((1, 1), "o")  # x 6, o 3
    centre = _dead_grid().win((1, 1), "x").win((0, 0), "o")  # x 3, o 6
    for g in (corner, centre):
        g.put((2, 2), [(0, 0)], "o")  # o's last move sends x to won block (0, 0): open move
    a = corner.state(to_move=0, last_move=cell((2, 2), (0, 0)))
    b = centre.state(to_move=0, last_move=cell((2, 2), (0, 0)))
    for s in (a, b):
        assert points_only(s.won[0], s.won[1], s.decided)
    assert _static(a) > 0 > _static(b)
    assert _static(a) - _static(b) >= W_PTS * 6 - 2  # 3 points each way (int rounding)
    # o to move sees the same position from the other side
    a_o = corner.state(to_move=1, last_move=cell((2, 2), (0, 0)))
    assert _static(a_o) < 0


def test_points_only_value_is_expected_points_when_nothing_is_conceded():
    s = _dead_grid().win((3, 3), "x").put((1, 1), [(0, 0), (1, 1)], "o").state(to_move=0)
    sr = Searcher(s)
    assert sr.static() == int(W_PTS * expected_points(sr.px, sr.po))
    assert sr.static() == evaluate(sr.px, sr.po)  # the pattern products are all zero


def _sent_to_two_holes(o_threats) -> Grid:
    """x to move in centre block (1, 1) whose two empty cells send o to corner blocks (0, 0)
    and (3, 3); o holds a threat (three marks of row 0) in each block of ``o_threats``."""
    g = _dead_grid().fill((1, 1), TWO_HOLES)
    for b in o_threats:
        g.put(b, ROWS[0][:3], "o")
    g.put((2, 2), [(1, 1)], "o")  # o's last move, at local (1, 1): x goes to block (1, 1)
    return g


def test_send_loss_counts_only_an_unavoidable_concession():
    free = _sent_to_two_holes([(0, 0)]).state(to_move=0, last_move=cell((2, 2), (1, 1)))
    forced = _sent_to_two_holes([(0, 0), (3, 3)]).state(to_move=0,
                                                          last_move=cell((2, 2), (1, 1)))
    for s in (free, forced):
        assert points_only(s.won[0], s.won[1], s.decided)
        assert sorted(s.legal_moves()) == sorted([cell((1, 1), (0, 0)), cell((1, 1), (3, 3))])
    sf, sc = Searcher(free), Searcher(forced)
    assert send_loss(free.block_codes, free.marks, free.last_action, sf.px, sf.po, sf.thr[0],
                     sf.thr[1]) == 0.0
    loss = send_loss(forced.block_codes, forced.marks, forced.last_action, sc.px, sc.po, sc.thr[0],
                     sc.thr[1])
    # conceding a corner block (6 points) that o was already likely to win
    assert 0.0 < loss < 6.0
    assert loss == 6.0 * (1.0 - sc.po[0] + sc.px[0])
    assert sc.static() == int(W_PTS * (expected_points(sc.px, sc.po) - loss))
    assert sf.static() == int(W_PTS * expected_points(sf.px, sf.po))


def test_search_in_a_points_only_ending_keeps_the_contract():
    s = _sent_to_two_holes([(0, 0)]).state(to_move=0, last_move=cell((2, 2), (1, 1)))
    a = engine.analyse(s, time_ms=300)
    assert a.best_move in s.legal_moves()
    # sending o to the block where it has no threat is the better move
    assert a.best_move == cell((1, 1), (3, 3))
