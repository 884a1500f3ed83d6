"""One test (at least) per rule of Extreme Tic-Tac-Toe (numbered as in the project's rules
document)."""

from __future__ import annotations

import json

import pytest

from boxfish import engine
from boxfish.engine import IllegalMove, UnknownGame

from .helpers import (
    COLS,
    DIAGONALS,
    DIAMONDS,
    DRAW_FILL,
    GAME,
    PATTERNS,
    ROWS,
    WIN_ON_LAST,
    Grid,
    block_cells,
    blocks_of,
    cell,
    decided_grid,
)

ALL_CELLS = [(r, c) for r in range(16) for c in range(16)]


def open_cells(state) -> list[tuple[int, int]]:
    """Rule 9 computed by hand from the public view: empty cells of open blocks."""
    board = state.to_dict()["board"]
    blocks = state.block_status()
    return [(r, c) for r, c in ALL_CELLS
            if board[r][c] == "." and blocks[(r // 4) * 4 + c // 4] == "open"]


def snapshot(state) -> tuple:
    return (json.dumps(state.to_dict(), sort_keys=True), state.hash, state.history)


# ----------------------------------------------------------------- registry and protocol

def test_registry_returns_one_shared_game():
    assert engine.load_game("extreme-tictactoe") is engine.load_game("extreme-tictactoe")
    assert GAME.name == "extreme-tictactoe" and GAME.params() == {}
    with pytest.raises(UnknownGame):
        engine.load_game("extreme-tictactoe", size=4)


def test_to_dict_is_json_ready_and_complete():
    s = GAME.new_state()
    s.play((5, 9))
    d = json.loads(json.dumps(s.to_dict()))
    assert d["game"] == "extreme-tictactoe"
    assert d["serial"] == 1 and d["to_move"] == 1 and d["status"] == "in_progress"
    assert d["result"] is None and d["in_bonus"] is False and d["last_move"] == [5, 9]
    assert len(d["board"]) == 16 and all(len(row) == 16 for row in d["board"])
    assert d["board"][5][9] == "x" and d["board"][5].count(".") == 15
    assert d["blocks"] == ["open"] * 16 and d["scores"] == [0, 0]
    assert d["legal_moves"] == [list(m) for m in s.legal_moves()]


# ----------------------------------------------------------------- rules 1-4: the board

def test_rule1_board_is_16_by_16():
    s = GAME.new_state()
    assert sorted(s.legal_moves()) == ALL_CELLS
    for bad in [(16, 0), (0, 16), (-1, 3), (3, -1)]:
        with pytest.raises(IllegalMove) as e:
            s.play(bad)
        assert e.value.reason == "out_of_range"


@pytest.mark.parametrize("rc", [(0, 0), (5, 9), (15, 15), (7, 12), (12, 3)])
def test_rule2_cell_lies_in_block_at_local_position(rc):
    r, c = rc
    s = GAME.new_state()
    s.play(rc)
    # the mark shows at (r, c) and the next move is confined to block (r % 4, c % 4)
    assert s.to_dict()["board"][r][c] == "x"
    target = (r % 4, c % 4)
    expected = [m for m in block_cells(target) if m != rc]
    assert s.legal_moves() == sorted(expected)


def test_rule3_cells_and_blocks_have_the_spec_states():
    g = Grid().win((0, 0), "x").win((0, 1), "o").draw((0, 2))
    s = g.state()
    assert s.block_status()[:4] == ["x", "o", "drawn", "open"]
    assert set("".join(s.to_dict()["board"])) == {".", "x", "o"}


def test_rule4_x_moves_first_then_o():
    s = GAME.new_state()
    assert s.to_move == 0
    played = s.play((0, 0))
    assert played.player == 0 and played.turn_passed and s.to_move == 1
    assert s.play((1, 1)).player == 1 and s.to_move == 0
    assert s.to_dict()["board"][0][0] == "x" and s.to_dict()["board"][1][1] == "o"


# ----------------------------------------------------------------- rule 5: patterns

def _block_win_setup(shape, block=(0, 1)):
    """x holds all but the last cell of ``shape`` in ``block``; x to move there."""
    g = Grid().put(block, shape[:-1], "x")
    # an o mark elsewhere whose local position points at ``block``
    g.put((3, 3), [block], "o")
    return g.state(to_move=0, last_move=cell((3, 3), block)), cell(block, shape[-1])


@pytest.mark.parametrize("shape", PATTERNS, ids=[f"row{i}" for i in range(4)]
                         + [f"col{i}" for i in range(4)] + [f"diamond{i + 1}" for i in range(4)])
def test_rule5_each_pattern_wins_a_block(shape):
    s, move = _block_win_setup(shape)
    assert s.block_status()[1] == "open"
    played = s.play(move)
    assert s.block_status()[1] == "x"
    assert played.completed == 1 and s.to_dict()["scores"] == [1, 0]


@pytest.mark.parametrize("shape", DIAGONALS, ids=["main", "anti"])
def test_rule5_diagonals_do_not_win_a_block(shape):
    s, move = _block_win_setup(shape)
    played = s.play(move)
    assert s.block_status()[1] == "open" and played.completed == 0 and s.to_move == 1


def test_rule5_diamonds_are_the_neighbours_of_the_centre_cells():
    centres = [(1, 1), (1, 2), (2, 1), (2, 2)]
    for (cr, cc), diamond in zip(centres, DIAMONDS, strict=True):
        assert sorted(diamond) == sorted([(cr - 1, cc), (cr, cc - 1), (cr, cc + 1), (cr + 1, cc)])
    # the centre cell with three neighbours is not a pattern
    s, move = _block_win_setup([(0, 1), (1, 0), (1, 1), (1, 2)])
    s.play(move)
    assert s.block_status()[1] == "open"


def _big_win_setup(shape):
    """x has won three blocks of big ``shape`` and holds three cells of a row in the fourth."""
    g = Grid()
    for b in shape[:-1]:
        g.win(b, "x")
    last = shape[-1]
    g.put(last, ROWS[0][:3], "x")
    other = next(b for b in [blocks_of(i) for i in range(16)] if b not in shape)
    g.put(other, [last], "o")
    return g.state(to_move=0, last_move=cell(other, last)), cell(last, (0, 3))


@pytest.mark.parametrize("shape", PATTERNS, ids=[f"row{i}" for i in range(4)]
                         + [f"col{i}" for i in range(4)] + [f"diamond{i + 1}" for i in range(4)])
def test_rule5_11_each_pattern_of_blocks_wins_the_game(shape):
    s, move = _big_win_setup(shape)
    assert not s.is_terminal()
    played = s.play(move)
    assert s.is_terminal() and s.ending == "pattern"
    assert s.result() == {"winner": 0, "points": [68, 0]}
    assert s.legal_moves() == [] and not s.in_bonus and played.completed == 1
    assert s.to_dict()["status"] == "finished"


@pytest.mark.parametrize("shape", DIAGONALS, ids=["main", "anti"])
def test_rule5_diagonal_of_blocks_does_not_win_the_game(shape):
    s, move = _big_win_setup(shape)
    s.play(move)
    assert not s.is_terminal() and s.in_bonus and s.to_dict()["scores"] == [4, 0]


def test_rule11_drawn_blocks_count_for_nobody():
    g = Grid().win((0, 0), "x").win((0, 1), "x").draw((0, 2))
    g.put((0, 3), ROWS[0][:3], "x").put((3, 3), [(0, 3)], "o")
    s = g.state(to_move=0, last_move=cell((3, 3), (0, 3)))
    s.play(cell((0, 3), (0, 3)))
    assert s.block_status()[:4] == ["x", "x", "drawn", "x"] and not s.is_terminal()


# ----------------------------------------------------------------- rules 6-9: which cells

def test_rule8_9_first_move_is_open():
    assert len(GAME.new_state().legal_moves()) == 256


def test_rule7_8_correspondence():
    s = GAME.new_state()
    s.play((5, 9))  # block (1, 2), local (1, 1)
    assert s.legal_moves() == sorted(block_cells((1, 1)))
    s.play((6, 4))  # block (1, 1), local (2, 0)
    assert s.legal_moves() == sorted(block_cells((2, 0)))
    with pytest.raises(IllegalMove) as e:
        s.play((0, 0))
    assert e.value.reason == "wrong_block"


def test_rule7_target_can_be_the_block_just_played():
    s = GAME.new_state()
    s.play((5, 5))  # block (1, 1), local (1, 1): back to block (1, 1)
    assert s.legal_moves() == sorted(m for m in block_cells((1, 1)) if m != (5, 5))


def test_rule9_won_target_block_gives_an_open_move():
    g = Grid().win((1, 1), "o").put((0, 0), [(1, 1)], "x")
    s = g.state(to_move=1, last_move=cell((0, 0), (1, 1)))
    legal = s.legal_moves()
    assert legal == open_cells(s) and len(legal) == 256 - 16 - 1
    assert not any(m in legal for m in block_cells((1, 1)))


def test_rule9_full_target_block_gives_an_open_move():
    g = Grid().draw((1, 1)).put((0, 0), [(1, 1)], "x")
    s = g.state(to_move=1, last_move=cell((0, 0), (1, 1)))
    assert s.block_status()[5] == "drawn"
    assert s.legal_moves() == open_cells(s) and len(s.legal_moves()) == 256 - 16 - 1


def test_rule9_cells_of_a_won_block_are_never_legal():
    g = Grid().win((2, 2), "x").put((0, 0), [(2, 2)], "o")
    s = g.state(to_move=0, last_move=cell((0, 0), (2, 2)))  # target (2, 2) is won: open move
    empty_won = [m for m in block_cells((2, 2)) if s.to_dict()["board"][m[0]][m[1]] == "."]
    assert len(empty_won) == 12
    assert not set(empty_won) & set(s.legal_moves())
    before = snapshot(s)
    for m in empty_won:
        with pytest.raises(IllegalMove) as e:
            s.play(m)
        assert e.value.reason == "block_closed"
    assert snapshot(s) == before


# ----------------------------------------------------------------- rule 10: block results

def test_rule10_block_is_drawn_when_full_without_a_pattern():
    fill = [row if i < 3 else row[:3] + "." for i, row in enumerate(DRAW_FILL)]
    g = Grid().fill((0, 1), fill).put((3, 3), [(0, 1)], "o")
    s = g.state(to_move=0, last_move=cell((3, 3), (0, 1)))
    assert s.legal_moves() == [cell((0, 1), (3, 3))]
    played = s.play(cell((0, 1), (3, 3)))
    assert s.block_status()[1] == "drawn" and played.completed == 0 and s.to_move == 1
    # local (3, 3) sends o to block (3, 3), where x's setup left one o mark
    assert s.legal_moves() == sorted(m for m in block_cells((3, 3)) if m != (12, 13))


def test_rule10_filling_the_last_cell_with_a_pattern_wins_rather_than_draws():
    g = Grid().fill((0, 1), WIN_ON_LAST).put((3, 3), [(0, 1)], "o")
    s = g.state(to_move=0, last_move=cell((3, 3), (0, 1)))
    assert s.block_status()[1] == "open"
    s.play(cell((0, 1), (3, 3)))
    assert s.block_status()[1] == "x"


def test_rule10_only_the_block_played_changes():
    s = GAME.new_state()
    s.play((0, 0))
    assert s.block_status() == ["open"] * 16


# ----------------------------------------------------------------- rule 12: the draw

def _endgame(x_blocks, o_blocks, open_block=(3, 3)):
    """Every block decided except ``open_block``, which has one empty cell (local (3, 3))
    whose filling draws it; x to move there."""
    g = decided_grid(x_blocks, o_blocks, open_block)
    g.fill(open_block, [row if i < 3 else row[:3] + "." for i, row in enumerate(DRAW_FILL)])
    drawn = next(blocks_of(i) for i in range(16)
                 if blocks_of(i) not in x_blocks + o_blocks + [open_block])
    return g.state(to_move=0, last_move=cell(drawn, open_block)), cell(open_block, (3, 3))


def test_rule12_game_goes_on_until_every_block_is_decided():
    s, last = _endgame([(0, 0), (0, 1)], [(1, 1)])
    # nobody can complete a pattern any more, but one block is open
    assert not s.is_terminal() and s.result() is None
    assert s.legal_moves() == [last]
    s.play(last)
    assert s.is_terminal() and s.ending == "draw"


def test_rule12_open_move_when_all_but_one_block_decided():
    s, last = _endgame([(0, 0)], [(1, 1)])
    s2 = GAME.from_board(s.to_dict()["board"], to_move=0, last_move=None)
    assert s2.legal_moves() == [last]


def test_rule16_draw_points_corner_edge_centre():
    # x: corner (0, 0) = 6 and edge (0, 1) = 4; o: centre (1, 1) = 3
    s, last = _endgame([(0, 0), (0, 1)], [(1, 1)])
    s.play(last)
    assert s.result() == {"winner": 0, "points": [10, 3]}
    # o: corner (3, 0) + corner (0, 3) = 12 beats x: two centres = 6
    s, last = _endgame([(1, 1), (2, 2)], [(3, 0), (0, 3)])
    s.play(last)
    assert s.result() == {"winner": 1, "points": [6, 12]}


def test_rule16_equal_totals_are_a_tie():
    s, last = _endgame([(1, 2)], [(2, 1)])  # a centre each
    s.play(last)
    assert s.result() == {"winner": None, "points": [3, 3]}
    assert s.ending == "draw" and s.to_dict()["status"] == "finished"


def test_rule15_pattern_win_scores_68_to_0_for_o_too():
    s, move = _big_win_setup(COLS[2])
    flipped = [row.replace("x", "X").replace("o", "x").replace("X", "o")
               for row in s.to_dict()["board"]]
    s = GAME.from_board(flipped, to_move=1, last_move=s.last_move)
    s.play(move)
    assert s.result() == {"winner": 1, "points": [0, 68]}


# ----------------------------------------------------------------- rules 13-14: bonus

def test_rule13_block_win_gives_a_bonus_move():
    s, move = _block_win_setup(ROWS[1])  # winning cell local (1, 3): target block (1, 3)
    played = s.play(move)
    assert played.completed == 1 and not played.turn_passed
    assert s.to_move == 0 and s.in_bonus and s.last_move == move
    assert s.to_dict()["in_bonus"] is True
    # the bonus move follows the correspondence rule from the winning mark
    assert s.legal_moves() == sorted(block_cells((1, 3)))


def test_rule13_bonus_pointing_back_at_the_won_block_is_an_open_move():
    s, move = _block_win_setup(COLS[1])  # last cell local (3, 1)
    s, move = _block_win_setup([(1, 1), (2, 1), (3, 1), (0, 1)])  # ends at local (0, 1)
    assert move == cell((0, 1), (0, 1))
    s.play(move)
    assert s.in_bonus and s.legal_moves() == open_cells(s)


def test_rule14_bonus_move_that_wins_a_block_gives_no_second_bonus():
    # x just won block (0, 0) with a mark at local (0, 1) -> the bonus move goes to (0, 1),
    # where x can win again.
    g = Grid().win((0, 0), "x").put((0, 1), ROWS[2][:3], "x")
    s = g.state(to_move=0, last_move=cell((0, 0), (0, 1)), in_bonus=True)
    played = s.play(cell((0, 1), (2, 3)))
    assert s.block_status()[1] == "x" and played.completed == 1
    assert played.turn_passed and s.to_move == 1 and not s.in_bonus
    assert s.legal_moves() == sorted(block_cells((2, 3)))  # last = the bonus move


def test_rule14_after_a_quiet_bonus_move_the_opponent_plays_from_it():
    s, move = _block_win_setup(ROWS[1])
    s.play(move)
    played = s.play(cell((1, 3), (2, 2)))
    assert played.turn_passed and played.completed == 0 and s.to_move == 1
    assert not s.in_bonus and s.legal_moves() == sorted(block_cells((2, 2)))


def test_rule13_no_bonus_when_the_block_win_ends_the_game():
    s, move = _big_win_setup(ROWS[3])
    s.play(move)
    assert s.is_terminal() and not s.in_bonus


def test_bonus_move_is_undone_exactly():
    s, move = _block_win_setup(ROWS[1])
    before = snapshot(s)
    s.play(move)
    s.play(cell((1, 3), (2, 2)))
    s.undo()
    assert s.in_bonus and s.to_move == 0
    s.undo()
    assert snapshot(s) == before


# ----------------------------------------------------------------- illegal input

@pytest.mark.parametrize("bad", [None, 5, "a1", [1], [1, 2, 3], [1.0, 2], [True, 2], (0, False),
                                 {"r": 1}, ["1", "2"]])
def test_malformed_moves_are_refused(bad):
    s = GAME.new_state()
    with pytest.raises(IllegalMove) as e:
        s.play(bad)
    assert e.value.reason == "malformed"
    with pytest.raises(IllegalMove) as e:
        GAME.parse_move(bad)
    assert e.value.reason == "malformed"
    assert s.serial == 0


def test_parse_move():
    assert GAME.parse_move([3, 15]) == (3, 15)
    with pytest.raises(IllegalMove) as e:
        GAME.parse_move([3, 16])
    assert e.value.reason == "out_of_range"


def test_each_illegal_reason_changes_nothing():
    s = GAME.new_state()
    s.play((5, 9))
    before = snapshot(s)
    for move, reason in [((5, 9), "occupied"), ((0, 0), "wrong_block"),
                         ((20, 1), "out_of_range"), ([1], "malformed")]:
        with pytest.raises(IllegalMove) as e:
            s.play(move)
        assert e.value.reason == reason and e.value.move == move
        assert snapshot(s) == before
    s, move = _big_win_setup(ROWS[0])
    s.play(move)
    before = snapshot(s)
    with pytest.raises(IllegalMove) as e:
        s.play((15, 15))
    assert e.value.reason == "game_over" and snapshot(s) == before


def test_undo_with_nothing_played_raises_index_error():
    with pytest.raises(IndexError):
        GAME.new_state().undo()


def test_from_board_refuses_impossible_positions():
    with pytest.raises(ValueError):
        GAME.from_board(["." * 16] * 15)
    with pytest.raises(ValueError):
        Grid().win((0, 0), "x").put((0, 0), ROWS[1], "o").state()
    with pytest.raises(ValueError):
        Grid().state(last_move=(0, 0))  # empty cell
    with pytest.raises(ValueError):
        Grid().put((0, 0), [(0, 0)], "x").state(last_move=(0, 0), in_bonus=True)


def test_copy_is_independent():
    s = GAME.new_state()
    s.play((5, 9))
    c = s.copy()
    c.play((4, 4))
    assert s.serial == 1 and c.serial == 2 and s.to_dict()["board"][4][4] == "."
    assert c.undo() == (4, 4) and snapshot(c) == snapshot(s)


def test_scores_and_ascii_board():
    from boxfish.engine import load_game

    s = load_game("extreme-tictactoe").new_state()
    s.play((0, 0))
    s.play((1, 1))
    text = s.to_ascii().splitlines()
    assert len(text) == 19 and text[0].startswith("x...") and text[1].startswith(".O..")
    assert s.scores == (0, 0) and s.to_dict()["scores"] == [0, 0]
