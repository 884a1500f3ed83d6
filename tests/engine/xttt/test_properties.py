"""Property tests over random games: undo, incremental hashing, replay, copy, evaluation."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from boxfish import engine
from boxfish.engine.xttt.evaluate import evaluate_state

from .helpers import GAME


@st.composite
def _choices(draw):
    """Move picks for a game prefix of 0..260 moves (games last about 200 moves)."""
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    length = draw(st.integers(min_value=0, max_value=260))
    rng = random.Random(seed)
    return [rng.randrange(10_000) for _ in range(length)]


choices = _choices()


def _view(s) -> tuple:
    return (json.dumps(s.to_dict(), sort_keys=True), s.hash, s.history, s.in_bonus,
            s.block_status(), s.last_move)


def _play(picks):
    s = GAME.new_state()
    for k in picks:
        moves = s.legal_moves()
        if not moves:
            break
        s.play(moves[k % len(moves)])
    return s


@settings(max_examples=60, deadline=None)
@given(choices)
def test_undo_restores_everything(picks):
    s = GAME.new_state()
    views = [_view(s)]
    for k in picks:
        moves = s.legal_moves()
        if not moves:
            break
        s.play(moves[k % len(moves)])
        views.append(_view(s))
    while s.serial:
        views.pop()
        s.undo()
        assert _view(s) == views[-1]
    assert _view(s) == _view(GAME.new_state())


@settings(max_examples=60, deadline=None)
@given(choices)
def test_incremental_hash_equals_hash_from_scratch(picks):
    s = GAME.new_state()
    assert s.hash == s.full_hash()
    for k in picks:
        moves = s.legal_moves()
        if not moves:
            break
        s.play(moves[k % len(moves)])
        assert s.hash == s.full_hash()
        # a position set up from the same board, player, target and bonus hashes the same
        same = GAME.from_board(s.to_dict()["board"], s.to_move, s.last_move, s.in_bonus)
        assert same.hash == s.hash and same.legal_moves() == s.legal_moves()
        assert same.block_status() == s.block_status() and same.result() == s.result()


@settings(max_examples=60, deadline=None)
@given(choices)
def test_replay_equals_incremental_play(picks):
    s = _play(picks)
    events = [(n + 1, list(m)) for n, m in enumerate(s.history)]
    r = engine.replay(GAME, events)
    assert _view(r) == _view(s)
    # replaying in two halves from a partial state gives the same
    half = len(events) // 2
    r2 = engine.replay(GAME, events[:half])
    engine.replay(GAME, events[half:], state=r2)
    assert _view(r2) == _view(s)


@settings(max_examples=40, deadline=None)
@given(choices, st.integers(min_value=0, max_value=255))
def test_copy_is_independent_of_the_original(picks, extra):
    s = _play(picks)
    before = _view(s)
    c = s.copy()
    moves = c.legal_moves()
    if moves:
        c.play(moves[extra % len(moves)])
        assert _view(s) == before
        c.undo()
    assert _view(c) == before


@settings(max_examples=40, deadline=None)
@given(choices)
def test_evaluation_is_colour_symmetric(picks):
    s = _play(picks)
    swapped = [row.replace("x", "X").replace("o", "x").replace("X", "o")
               for row in s.to_dict()["board"]]
    t = GAME.from_board(swapped, 1 - s.to_move, s.last_move)
    assert evaluate_state(t) == -evaluate_state(s)
