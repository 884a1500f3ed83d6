"""The engine against a deliberately plain reimplementation of the spec (the rules oracle).

``PlainGame`` uses lists of lists and re-derives everything from scratch at every step, the way
the tournament's reference simulator does; it shares no code or tables with the engine.
Random games are played in both side by side, comparing legal moves, block statuses, the
player to move, the bonus flag, the result and the points after every move.
"""

from __future__ import annotations

import random

import pytest

from .helpers import GAME

# Winning shapes in local (row, col), written out again on purpose.
SHAPES = (
    [[(r, 0), (r, 1), (r, 2), (r, 3)] for r in range(4)]
    + [[(0, c), (1, c), (2, c), (3, c)] for c in range(4)]
    + [[(0, 1), (1, 0), (1, 2), (2, 1)], [(0, 2), (1, 1), (1, 3), (2, 2)],
       [(1, 1), (2, 0), (2, 2), (3, 1)], [(1, 2), (2, 1), (2, 3), (3, 2)]]
)
VALUES = [[6, 4, 4, 6], [4, 3, 3, 4], [4, 3, 3, 4], [6, 4, 4, 6]]


class PlainGame:
    def __init__(self) -> None:
        self.board = [["-"] * 16 for _ in range(16)]
        self.blocks = [["-"] * 4 for _ in range(4)]  # '-', 'x', 'o', 'd'
        self.last = None
        self.player = "x"
        self.bonus_next = False
        self.outcome = None  # None, 'x', 'o' or 'draw'

    def legal(self):
        if self.outcome is not None:
            return []
        if self.last is not None:
            br, bc = self.last[0] % 4, self.last[1] % 4
            if self.blocks[br][bc] == "-":
                return [(br * 4 + i, bc * 4 + j) for i in range(4) for j in range(4)
                        if self.board[br * 4 + i][bc * 4 + j] == "-"]
        out = []
        for r in range(16):
            for c in range(16):
                if self.board[r][c] == "-" and self.blocks[r // 4][c // 4] == "-":
                    out.append((r, c))
        return out

    def holds(self, grid, sym):
        return any(all(grid[i][j] == sym for i, j in shape) for shape in SHAPES)

    def play(self, r, c):
        assert (r, c) in self.legal()
        sym = self.player
        self.board[r][c] = sym
        self.last = (r, c)
        br, bc = r // 4, c // 4
        small = [[self.board[br * 4 + i][bc * 4 + j] for j in range(4)] for i in range(4)]
        won_block = False
        if self.holds(small, sym):
            self.blocks[br][bc] = sym
            won_block = True
        elif all(small[i][j] != "-" for i in range(4) for j in range(4)):
            self.blocks[br][bc] = "d"
        if self.holds(self.blocks, sym):
            self.outcome = sym
        elif all(self.blocks[i][j] != "-" for i in range(4) for j in range(4)):
            self.outcome = "draw"
        if won_block and self.outcome is None and not self.bonus_next:
            self.bonus_next = True
        else:
            self.bonus_next = False
            self.player = "o" if sym == "x" else "x"

    def statuses(self):
        names = {"-": "open", "x": "x", "o": "o", "d": "drawn"}
        return [names[self.blocks[i][j]] for i in range(4) for j in range(4)]

    def result(self):
        if self.outcome is None:
            return None
        if self.outcome in ("x", "o"):
            return {"winner": "xo".index(self.outcome),
                    "points": [68, 0] if self.outcome == "x" else [0, 68]}
        pts = [sum(VALUES[i][j] for i in range(4) for j in range(4) if self.blocks[i][j] == s)
               for s in "xo"]
        winner = None if pts[0] == pts[1] else (0 if pts[0] > pts[1] else 1)
        return {"winner": winner, "points": pts}


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
