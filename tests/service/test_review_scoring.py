"""The scoring of a review's moves (:mod:`service.application.review_scoring`) on analyses made
by hand: signs when a move keeps the turn, proven bounds, estimates, and the players'
accuracy."""

from __future__ import annotations

from boxfish.service.application.review_scoring import judgement, score_move, score_players

DOTS = "dots-and-boxes"


def _analysis(value, moves, exact=True, lower=None, upper=None, best=None):
    if exact:
        lower = upper = value
    return {"value": value, "exact": exact, "lower": lower, "upper": upper,
            "best_move": best or (moves[0]["move"] if moves else None), "moves": moves}


def _move(move, value, exact=True, lower=None, upper=None):
    if exact:
        lower = upper = value
    return {"move": move, "value": value, "exact": exact, "lower": lower, "upper": upper}


def test_a_move_that_keeps_the_turn_is_valued_from_the_next_position_plus_its_boxes():
    before = _analysis(3, [_move([1, 1, 1], 3), _move([2, 1, 1], 0, False, None, 1)])
    after = _analysis(-1, [], exact=True)  # the mover moves again: 2 boxes, then -1
    m = score_move(DOTS, 5, [2, 1, 1], 0, before, completed=2, turn_passed=False, after=after)
    assert (m["value_before"], m["value_played"], m["loss"], m["exact"]) == (3, 1, 2, True)
    assert m["lower"] == m["upper"] == 2 and m["judgement"] == "mistake"
    assert m["best_moves"] == [[1, 1, 1]]


def test_a_move_that_passes_the_turn_is_the_next_position_negated():
    before = _analysis(2, [_move([1, 1, 1], 2), _move([2, 1, 1], -2, False, None, 0)])
    after = _analysis(4, [])
    m = score_move(DOTS, 1, [2, 1, 1], 1, before, after=after)
    assert (m["value_played"], m["loss"], m["exact"], m["judgement"]) == (-4, 6, True,
                                                                          "blunder")


def test_the_last_move_of_a_finished_game_is_worth_what_it_took():
    before = _analysis(1, [_move([1, 1, 1], 1)])
    m = score_move(DOTS, 24, [1, 1, 1], 0, before, completed=1, turn_passed=False,
                   terminal_after=True)
    assert (m["value_played"], m["loss"], m["exact"]) == (1, 0, True)


def test_bounds_and_estimates_never_give_a_negative_loss():
    # the engine estimates the move played above the position's estimate: the loss is 0
    before = _analysis(1, [_move([1, 1, 1], 1, False, -3, 5),
                           _move([2, 1, 1], 2, False, -5, 3)],
                       exact=False, lower=-3, upper=5)
    m = score_move(DOTS, 1, [2, 1, 1], 0, before)
    assert m["loss"] == 0 and not m["exact"] and m["lower"] == 0 and m["upper"] == 10
    # a proven gap: the position is at least 4, the move at most 1
    before = _analysis(4, [_move([1, 1, 1], 4), _move([2, 1, 1], 1, False, None, 1)],
                       exact=False, lower=4, upper=None)
    m = score_move(DOTS, 1, [2, 1, 1], 0, before)
    assert m["lower"] == 3 and m["upper"] is None and m["loss"] >= 3 and not m["exact"]


def test_judgements_and_accuracy():
    assert [judgement(x, DOTS) for x in (0, 0.5, 1, 2, 3, 4, 40)] == [
        "best", "best", "inaccuracy", "mistake", "mistake", "blunder", "blunder"]
    assert judgement(2499, "extreme-tictactoe") == "best"
    assert judgement(20000, "extreme-tictactoe") == "blunder"
    moves = [{"player": 0, "loss": 0, "exact": True, "judgement": "best"},
             {"player": 0, "loss": 2, "exact": True, "judgement": "mistake"},
             {"player": 1, "loss": 8, "exact": False, "judgement": "blunder"}]
    zero, one = score_players(DOTS, moves)
    assert (zero["moves"], zero["total_loss"], zero["accuracy"], zero["exact"]) == (
        2, 2, 75.0, True)
    assert (one["accuracy"], one["exact"], one["judgements"]["blunder"]) == (0.0, False, 1)
