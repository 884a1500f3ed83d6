"""The Extreme Tic-Tac-Toe search: forced wins, proofs, limits, the Analysis contract."""

from __future__ import annotations

import json
import random
import time

import pytest

from boxfish import engine
from boxfish.engine.xttt.search import POINT_UNIT, POINTS_WIN, PROVEN, WIN_VALUE

from .helpers import (
    DRAW_FILL,
    GAME,
    ROWS,
    Grid,
    cell,
    decided_grid,
    forced_win,
)
from .plain import PlainGame, result_order, solve_moves


def _wins_now(state, move) -> bool:
    c = state.copy()
    c.play(move)
    return c.ending == "pattern" and c.result()["winner"] == state.to_move


def _win_in_one():
    """x has won blocks (0, 0)-(0, 2) and needs (0, 3), where it is sent with a threat."""
    g = Grid()
    for b in [(0, 0), (0, 1), (0, 2)]:
        g.win(b, "x")
    g.put((0, 3), ROWS[0][:3], "x").put((0, 3), [(1, 0), (2, 1)], "o")
    g.put((2, 1), [(0, 3)], "o").put((1, 1), [(1, 1), (2, 2)], "o").put((2, 2), [(3, 3)], "x")
    return g.state(to_move=0, last_move=cell((2, 1), (0, 3)))


def _win_in_two_by_bonus():
    """x wins block (2, 2) with a mark at local (0, 3): the bonus move then wins (0, 3)."""
    g = Grid()
    for b in [(0, 0), (0, 1), (0, 2)]:
        g.win(b, "x")
    g.put((0, 3), ROWS[0][:3], "x")
    g.put((2, 2), ROWS[0][:3], "x").put((2, 2), [(1, 1), (3, 0)], "o")
    g.put((3, 0), [(2, 2)], "o")
    return g.state(to_move=0, last_move=cell((3, 0), (2, 2)))


def _win_in_three_plies():
    """x sends o into block (1, 1), whose only empty cell (local (0, 3)) sends x to (0, 3)."""
    g = Grid()
    for b in [(0, 0), (0, 1), (0, 2)]:
        g.win(b, "x")
    g.put((0, 3), ROWS[0][:3], "x")
    g.fill((1, 1), [DRAW_FILL[0][:3] + "."] + DRAW_FILL[1:])
    g.put((3, 0), [(2, 2)], "o")
    return g.state(to_move=0, last_move=cell((3, 0), (2, 2)))


def _random_position(seed: int, plies: int):
    rng = random.Random(seed)
    s = GAME.new_state()
    while s.serial < plies and not s.is_terminal():
        s.play(rng.choice(s.legal_moves()))
    return s


# ----------------------------------------------------------------- forced wins

@pytest.mark.parametrize("limit", [{"time_ms": None, "depth": 1}, {"time_ms": 3000}])
def test_finds_a_win_in_one(limit):
    s = _win_in_one()
    assert forced_win(s, 1)
    a = engine.analyse(s, **limit)
    assert _wins_now(s, a.best_move)
    assert a.proven == "win" and a.exact and a.value >= PROVEN
    assert a.pv[0] == a.best_move


def test_finds_a_win_in_two_moves_through_the_bonus():
    s = _win_in_two_by_bonus()
    assert not forced_win(s, 1) and forced_win(s, 2)
    a = engine.analyse(s, time_ms=None, depth=4)
    assert a.proven == "win"
    s.play(a.best_move)
    assert s.in_bonus and s.to_move == 0 and forced_win(s, 1)
    assert a.pv[:2][-1] in [m for m in s.legal_moves() if _wins_now(s, m)]


def test_finds_a_win_in_two_moves_through_a_forced_reply():
    s = _win_in_three_plies()
    assert not forced_win(s, 2)
    a = engine.analyse(s, time_ms=None, depth=4)
    assert a.proven == "win" and a.value >= PROVEN
    s.play(a.best_move)
    replies = s.legal_moves()
    assert replies  # every reply of o leaves x a winning move
    for r in replies:
        s.play(r)
        assert s.to_move == 0 and forced_win(s, 1)
        s.undo()


def test_sees_the_loss_coming_for_the_defender():
    s = _win_in_three_plies()
    s.play(cell((2, 2), (1, 1)))  # into the trap: o's only reply lets x win
    a = engine.analyse(s, time_ms=None, depth=4)
    assert a.proven == "loss" and a.value <= -PROVEN


def test_finds_the_winning_move_in_random_game_endings():
    found = 0
    for seed in range(60):
        rng = random.Random(seed)
        s = GAME.new_state()
        while not s.is_terminal():
            wins = [m for m in s.legal_moves() if _wins_now(s, m)]
            if wins:
                a = engine.analyse(s, time_ms=None, depth=1)
                assert a.best_move in wins and a.proven == "win"
                found += 1
                break
            s.play(rng.choice(s.legal_moves()))
        if found >= 8:
            break
    assert found >= 8


# ----------------------------------------------------------------- proofs of the ending

def _last_cell_endgame(x_blocks, o_blocks):
    g = decided_grid(x_blocks, o_blocks, (3, 3))
    g.fill((3, 3), DRAW_FILL[:3] + [DRAW_FILL[3][:2] + ".."])
    return g.state(to_move=0, last_move=cell((2, 0), (3, 3)))


def test_proves_a_tie_on_points_as_a_draw():
    s = _last_cell_endgame([(1, 2)], [(2, 1)])
    a = engine.analyse(s, time_ms=None)
    assert a.proven == "draw" and a.exact and a.value == 0
    assert a.best_move in s.legal_moves()


def test_proves_a_win_on_points():
    s = _last_cell_endgame([(0, 0)], [(1, 1)])  # 6 against 3 whatever happens
    a = engine.analyse(s, time_ms=None)
    assert a.proven == "win" and a.value >= PROVEN
    s.play(a.best_move)
    assert engine.analyse(s, time_ms=None).proven in ("win", "loss")


def test_analysis_of_a_finished_game():
    s = _win_in_one()
    s.play(next(m for m in s.legal_moves() if _wins_now(s, m)))
    a = engine.analyse(s, time_ms=100)
    assert a.best_move is None and a.proven == "loss" and a.exact  # o to move, lost


# ----------------------------------------------------------------- limits and contract

def test_deadline_is_kept_and_the_move_is_legal():
    """The search stops at its deadline with a legal move. Measured in the CPU time of this
    thread (the search runs in it): never more than the wall-clock time the deadline counts,
    so another process's load cannot make it miss; a search that ran on past its deadline
    would use the CPU time it ran for."""
    checked = 0
    for seed, plies in [(1, 0), (2, 9), (3, 40), (4, 90), (5, 150)]:
        s = _random_position(seed, plies)
        assert not s.is_terminal() and s.serial == plies
        for time_ms in (0, 1, 15, 120):
            t0 = time.thread_time()
            a = engine.analyse(s, time_ms=time_ms)
            cpu_ms = (time.thread_time() - t0) * 1000
            assert a.best_move in s.legal_moves()
            assert cpu_ms < time_ms + 400  # generous margin: the contract, not a speed test
            checked += 1
    assert checked == 20


def test_depth_and_node_limits_are_honoured():
    s = _random_position(7, 30)
    a = engine.analyse(s, time_ms=None, depth=2)
    assert a.depth == 2 and a.best_move in s.legal_moves()
    b = engine.analyse(s, time_ms=None, nodes=300)
    assert b.nodes <= 300 + 1 and b.best_move in s.legal_moves()


def test_analysis_lists_every_move_and_leaves_the_state_alone():
    s = _random_position(8, 25)
    before = (json.dumps(s.to_dict()), s.hash, s.history)
    progress = []
    a = engine.analyse(s, time_ms=None, depth=3, on_progress=progress.append)
    assert (json.dumps(s.to_dict()), s.hash, s.history) == before
    assert [p.depth for p in progress] == [1, 2, 3]
    assert progress[-1].best_move == a.best_move and progress[-1].value == a.value
    assert sorted(m.move for m in a.moves) == s.legal_moves()
    assert a.moves[0].move == a.best_move and a.moves[0].value == a.value
    assert all(m.value <= a.value for m in a.moves)
    assert a.game == "extreme-tictactoe" and a.nodes > 0 and a.depth == 3
    json.dumps(a.to_dict())
    # the pv is a legal line from the position
    c = s.copy()
    for m in a.pv:
        c.play(m)


def test_multipv_at_depth_two_gives_the_values_of_a_search_of_every_move():
    """At a fixed depth (heuristic values), ``multipv=3`` gives the three best moves no upper
    bound, best first, with the three best values of a search asked for every move's."""
    s = _random_position(9, 12)
    a = engine.analyse(s, time_ms=None, depth=2, multipv=3)
    assert len(a.moves) == 3
    assert all(m.bound != "upper" for m in a.moves)
    values = [m.value for m in a.moves]
    assert values == sorted(values, reverse=True) and a.moves[0].move == a.best_move
    b = engine.analyse(s, time_ms=None, depth=2, multipv=400)
    assert [m.value for m in b.moves[:3]] == values


def _late_position(seed: int, max_empty: int):
    """A random game whose players avoid winning a block while they can (so that it goes on
    to a crowded board), stopped at the first position with at most ``max_empty`` empty cells
    in open blocks and at least three legal moves."""
    rng = random.Random(seed)
    s = GAME.new_state()
    while not s.is_terminal():
        moves = s.legal_moves()
        status, board = s.block_status(), s.board()
        empty = sum(board[r][c] == "." and status[r // 4 * 4 + c // 4] == "open"
                    for r in range(16) for c in range(16))
        if empty <= max_empty and len(moves) >= 3:
            return s
        quiet = [m for m in moves if not s.copy().play(m).completed]
        s.play(rng.choice(quiet or moves))
    raise AssertionError(f"seed {seed}: the game ended before {max_empty} empty cells")


def _reported(result) -> tuple[float, int | None]:
    """``(value, mate_in)`` that an analysis reports for a brute-force result (the scale of
    ``engine.xttt.search``: a pattern win is its 68-0 result, its distance in ``mate_in``)."""
    kind, n = result
    if kind == "mate":
        return (float(WIN_VALUE if n > 0 else -WIN_VALUE), n)
    return (float((POINTS_WIN if n > 0 else -POINTS_WIN if n < 0 else 0) + POINT_UNIT * n),
            None)


#: (seed, what the three best moves' results show): late positions the search solves to the
#: end, each with at least two different results among its three best moves.
SOLVED_ENDINGS = [
    (4, "pattern wins at three distances"),
    (5, "a pattern win in one, then a longer one, then a win on points"),
    (14, "wins and losses on points by different margins"),
    (94, "pattern losses, the later one best"),
]


@pytest.mark.parametrize("seed, shows", SOLVED_ENDINGS)
def test_multipv_gives_exact_values_for_the_best_moves(seed, shows):
    """Solved to the end (no limit), ``multipv=3`` gives the three best moves, each with its
    exact value and pattern-win distance: those of a brute force over every line to the end
    of the game in the plain reimplementation of the rules (``plain.py``), not the engine."""
    s = _late_position(seed, 10)
    truth = solve_moves(PlainGame.from_board(s.board(), s.to_move, s.last_move, s.in_bonus))
    assert sorted(truth) == s.legal_moves()
    best = sorted(truth.values(), key=result_order, reverse=True)[:3]
    kinds = {(kind, n > 0) for kind, n in best}
    assert len(set(best)) >= 2, best
    assert {"pattern wins at three distances": len(set(best)) == 3 and kinds == {("mate", True)},
            "a pattern win in one, then a longer one, then a win on points":
                best[0] == ("mate", 1) and best[1][0] == "mate" and best[2][0] == "points",
            "wins and losses on points by different margins":
                len(set(best)) == 3 and kinds == {("points", True), ("points", False)},
            "pattern losses, the later one best": kinds == {("mate", False)}}[shows], best
    a = engine.analyse(s, time_ms=None, multipv=3)
    assert len(a.moves) == 3 and a.moves[0].move == a.best_move
    for m in a.moves:
        assert m.exact and m.bound == "exact", m
        assert (m.value, m.mate_in) == _reported(truth[m.move]), (m, truth[m.move])
    assert [(m.value, m.mate_in) for m in a.moves] == [_reported(r) for r in best]
    assert (a.value, a.mate_in) == _reported(best[0]) and a.exact


# ----------------------------------------------------------------- symmetry at the root

def test_symmetries_preserve_correspondence_and_patterns():
    from boxfish.engine.xttt.symmetry import BLOCK_SYM, CELL_SYM
    from boxfish.engine.xttt.tables import CELL_BLOCK, CELL_LOCAL, PATTERNS

    for k in range(8):
        assert sorted(CELL_SYM[k]) == list(range(256))
        for i in range(256):
            assert CELL_LOCAL[CELL_SYM[k][i]] == BLOCK_SYM[k][CELL_LOCAL[i]]
            assert CELL_BLOCK[CELL_SYM[k][i]] == BLOCK_SYM[k][CELL_BLOCK[i]]
        images = {sum(1 << BLOCK_SYM[k][b] for b in range(16) if p >> b & 1) for p in PATTERNS}
        assert images == set(PATTERNS)


@pytest.mark.parametrize("moves", [[], [(9, 9)], [(0, 5), (1, 4)], [(3, 3), (15, 15)]])
def test_root_symmetry_gives_the_same_values_as_searching_every_move(moves):
    from boxfish.engine.xttt.search import Searcher
    from boxfish.engine.xttt.symmetry import move_classes

    s = GAME.new_state()
    for m in moves:
        s.play(m)
    with_sym = list(Searcher(s).iterate(max_depth=2, multipv=300))[-1]
    without = list(Searcher(s, symmetry=False).iterate(max_depth=2, multipv=300))[-1]
    assert {m.action: m.value for m in with_sym.moves} == {m.action: m.value for m in without.moves}
    if not moves:
        assert len(move_classes(s, s.legal_actions())) == 36


# ----------------------------------------------------------------- unfinished last depth

@pytest.mark.parametrize("seed, plies, nodes", [(0, 30, 2000), (0, 50, 5000), (1, 10, 5000),
                                                (2, 30, 5000)])
def test_a_move_that_beat_the_previous_best_in_the_unfinished_depth_is_played(seed, plies,
                                                                              nodes):
    from boxfish.engine.xttt.search import Searcher
    s = _random_position(seed, plies)
    sr = Searcher(s, max_nodes=nodes)
    results = list(sr.iterate())
    last = results[-1]
    part = sr.partial
    # the budget (nodes, deterministic) was chosen to end inside a depth after a new best move
    assert part is not None and part[0] == last.depth + 1, (part, last.depth)
    depth, cell_, value = part
    # another move than the previous best, searched first at that depth, beat its exact value
    assert depth == last.depth + 1 and cell_ != last.best.action
    a = engine.analyse(s, time_ms=None, nodes=nodes)
    assert a.best_move == divmod(cell_, 16) and a.value == value and a.depth == last.depth
    assert a.moves[0].move == a.best_move and a.moves[0].value == a.value
    assert sorted(m.move for m in a.moves) == s.legal_moves()
    assert a.proven in (None, "win") and a.best_move in s.legal_moves()


# ----------------------------------------------------------------- mate distances

def _assert_on_the_value_scale(a):
    from boxfish.engine.xttt.evaluate import MAX_EVAL
    from boxfish.engine.xttt.search import WIN_VALUE

    for value, mate_in in [(a.value, a.mate_in)] + [(m.value, m.mate_in) for m in a.moves]:
        assert abs(value) <= WIN_VALUE
        if mate_in is not None:
            assert value == (WIN_VALUE if mate_in > 0 else -WIN_VALUE)
        elif abs(value) < PROVEN:
            assert abs(value) <= MAX_EVAL


@pytest.mark.parametrize("position, plies", [(_win_in_one, 1), (_win_in_two_by_bonus, 2),
                                             (_win_in_three_plies, 3)])
def test_a_forced_pattern_win_reports_its_distance_in_plies(position, plies):
    from boxfish.engine.xttt.search import WIN_VALUE

    s = position()
    progress = []
    a = engine.analyse(s, time_ms=None, depth=4, on_progress=progress.append)
    assert a.proven == "win" and a.exact and a.mate_in == plies
    assert a.value == WIN_VALUE  # the 68-0 result, not a distance
    assert a.moves[0].move == a.best_move and a.moves[0].mate_in == plies
    assert progress[-1].mate_in == plies and progress[-1].value == a.value
    _assert_on_the_value_scale(a)
    d = a.to_dict()
    assert d["mate_in"] == plies and d["moves"][0]["mate_in"] == plies
    assert json.loads(json.dumps(d)) == d


def test_the_losing_side_gets_a_negative_distance():
    from boxfish.engine.xttt.search import WIN_VALUE

    s = _win_in_three_plies()
    s.play(cell((2, 2), (1, 1)))  # o to move: its reply, then x's winning move
    a = engine.analyse(s, time_ms=None, depth=4)
    assert a.proven == "loss" and a.mate_in == -2 and a.value == -WIN_VALUE
    assert all(m.mate_in == -2 for m in a.moves)
    _assert_on_the_value_scale(a)


def test_a_game_a_pattern_has_ended_has_distance_zero():
    s = _win_in_one()
    s.play(next(m for m in s.legal_moves() if _wins_now(s, m)))
    a = engine.analyse(s, time_ms=100)
    assert a.proven == "loss" and a.mate_in == 0 and a.best_move is None


def test_heuristic_and_points_values_have_no_distance():
    s = _last_cell_endgame([(0, 0)], [(1, 1)])  # won on points, not by a pattern
    a = engine.analyse(s, time_ms=None)
    assert a.proven == "win" and a.mate_in is None
    b = engine.analyse(_random_position(3, 20), time_ms=None, depth=2)
    assert b.mate_in is None and all(m.mate_in is None for m in b.moves)
    _assert_on_the_value_scale(b)
