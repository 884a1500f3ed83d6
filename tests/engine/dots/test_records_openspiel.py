"""OpenSpiel's dots_and_boxes action sequences read as game records (engine.records), with
pyspiel as the oracle: random games played by OpenSpiel import to the same moves and final
scores, in both of the forms read (serialize_game_and_state's text, a bare action list)."""

from __future__ import annotations

import random

import pyspiel
import pytest

from boxfish.engine import RecordError, load_game
from boxfish.engine.records import parse_openspiel, parse_record, write_record

SIZES = [(1, 1), (2, 2), (3, 2), (2, 3), (4, 4), (5, 5)]


def spiel_game(width, height):
    return pyspiel.load_game(f"dots_and_boxes(num_rows={height},num_cols={width})")


def spiel_scores(state):
    """Boxes per player: OpenSpiel's board text writes each taken box's owner (1 or 2)."""
    text = str(state)
    return (text.count("1"), text.count("2"))


def random_spiel_game(width, height, rng, finish=True):
    game = spiel_game(width, height)
    state = game.new_initial_state()
    length = None if finish else rng.randrange(0, (width + 1) * height + width * (height + 1))
    while not state.is_terminal() and (length is None or len(state.history()) < length):
        state.apply_action(rng.choice(state.legal_actions()))
    return game, state


@pytest.mark.parametrize("width,height", SIZES)
def test_openspiel_games_import_to_the_same_moves_and_scores(width, height):
    rng = random.Random(width * 10 + height)
    ours = load_game("dots-and-boxes", width=width, height=height)
    for i in range(12):
        game, state = random_spiel_game(width, height, rng, finish=i % 3 != 2)
        actions = state.history()
        for record in (parse_openspiel(pyspiel.serialize_game_and_state(game, state)),
                       parse_openspiel(" ".join(map(str, actions)), ours),
                       parse_openspiel(str(actions), ours)):
            assert record.game == ours
            assert [ours.move_to_action(m) for m in record.moves] == actions
            assert record.state.is_terminal() == state.is_terminal()
            assert tuple(record.state.scores) == spiel_scores(state)
            if state.is_terminal():
                s0, s1 = record.state.scores
                r0, r1 = state.returns()
                assert (s0 > s1) - (s0 < s1) == (r0 > r1) - (r0 < r1)
            # and on into a Boxfish record and back
            again = parse_record(write_record(record.game, record.moves))
            assert again.moves == record.moves


def test_openspiel_refusals_name_the_move():
    ours = load_game("dots-and-boxes", width=2, height=2)
    with pytest.raises(RecordError) as caught:
        parse_openspiel("0 1 1", ours)
    assert (caught.value.reason, caught.value.move, caught.value.move_reason) == (
        "illegal_move", 3, "already_drawn")
    with pytest.raises(RecordError) as caught:
        parse_openspiel("0 99", ours)
    assert (caught.value.reason, caught.value.move) == ("illegal_move", 2)
    with pytest.raises(RecordError) as caught:
        parse_openspiel("0 x", ours)
    assert (caught.value.reason, caught.value.move) == ("notation", 2)
    with pytest.raises(RecordError) as caught:
        parse_openspiel("0 1")
    assert caught.value.reason == "header"
    with pytest.raises(RecordError) as caught:
        parse_openspiel("[Game]\ntic_tac_toe()\n[State]\n0\n")
    assert caught.value.reason == "header"
    with pytest.raises(RecordError) as caught:
        parse_openspiel("[Game]\ndots_and_boxes(num_rows=2,num_cols=2)\n[State]\n0\n",
                        load_game("dots-and-boxes", width=3, height=3))
    assert caught.value.reason == "header"
