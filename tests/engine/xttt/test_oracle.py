"""The engine against a deliberately plain reimplementation of the spec (the rules oracle).

``PlainGame`` (``plain.py``) uses lists of lists and re-derives everything from scratch at every
step, the way the tournament's reference simulator does; it shares no code or tables with the
engine.
Random games are played in both side by side, comparing legal moves, block statuses, the
player to move, the bonus flag, the result and the points after every move.
"""

from __future__ import annotations

import random

import pytest

from .helpers import GAME, WIN_ON_LAST, cell, decided_grid
from .plain import PlainGame, solve_moves


def _compare(engine_state, plain):
    assert engine_state.legal_moves() == sorted(plain.legal())
    assert engine_state.block_status() == plain.statuses()
    assert engine_state.to_move == "xo".index(plain.player)
    assert engine_state.in_bonus == plain.bonus_next
    assert engine_state.is_terminal() == (plain.outcome is not None)
    assert engine_state.result() == plain.result()


def _play_random(seed: int, draw_bias: bool = False):
    """One random game in both implementations; returns the outcome and bonus count.

    With ``draw_bias`` the players avoid block-winning moves when they can, which makes
    full-board draws (and drawn blocks) common.
    """
    rng = random.Random(seed)
    s = GAME.new_state()
    plain = PlainGame()
    bonuses = 0
    _compare(s, plain)
    while not s.is_terminal():
        moves = s.legal_moves()
        if draw_bias:
            quiet = []
            for m in moves:
                if not s.copy().play(m).completed:
                    quiet.append(m)
            moves = quiet or moves
        m = rng.choice(moves)
        played = s.play(m)
        plain.play(*m)
        bonuses += not played.turn_passed and not s.is_terminal()
        _compare(s, plain)
    return plain.outcome, bonuses


def test_random_games_match_the_plain_simulator():
    outcomes = set()
    bonuses = 0
    for seed in range(150):
        outcome, b = _play_random(seed)
        outcomes.add(outcome)
        bonuses += b
    assert outcomes >= {"x", "o"} and bonuses > 0


@pytest.mark.parametrize("seed", range(8))
def test_draw_leaning_games_match_the_plain_simulator(seed):
    _play_random(1000 + seed, draw_bias=True)


def test_draw_leaning_games_do_reach_full_board_draws():
    outcomes = [_play_random(2000 + seed, draw_bias=True)[0] for seed in range(6)]
    assert "draw" in outcomes


def test_the_brute_force_gives_hand_worked_results():
    """The solver the search's exact values are checked against (``plain.solve_moves``), on
    endings worked out by hand: every block decided but one, whose last empty cell completes
    a column for x (``WIN_ON_LAST``), and fills it without a pattern for o."""
    def ending(x_blocks, o_blocks, to_move):
        g = decided_grid(x_blocks, o_blocks, (3, 3)).fill((3, 3), WIN_ON_LAST)
        return PlainGame.from_board(g.rows(), to_move)

    last = cell((3, 3), (3, 3))
    # x takes the corner block and with it column 3 of the big board: a pattern win in one
    assert solve_moves(ending([(0, 3), (1, 3), (2, 3)], [(1, 1)], 0)) == {last: ("mate", 1)}
    # no pattern: the board is full, x has 3 + 6 points (block (1, 2), the corner), o 3
    assert solve_moves(ending([(1, 2)], [(2, 1)], 0)) == {last: ("points", 6)}
    # o's mark there wins nothing: the corner is drawn, o has 3 points against x's 14
    assert solve_moves(ending([(0, 3), (1, 3), (2, 3)], [(1, 1)], 1)) == {last: ("points", -11)}
