"""The conventions both games share: checked and unchecked play by action id, the shared search
types and limits, the value enums."""

from __future__ import annotations

import json
import random

import pytest

from boxfish import engine
from boxfish.engine import Bound, IllegalMove, Proven, load_game
from boxfish.engine.game import Game, State
from boxfish.engine.search import (
    DEADLINE_MARGIN,
    DepthResult,
    RootMove,
    SearchAborted,
    SearcherBase,
    deadline_of,
)

GAMES = [("dots-and-boxes", {"width": 3, "height": 2}), ("extreme-tictactoe", {})]


def _random_game(game, rng, plies):
    state = game.new_state()
    moves = []
    while len(moves) < plies and not state.is_terminal():
        m = rng.choice(state.legal_moves())
        state.play(m)
        moves.append(m)
    return state, moves


@pytest.mark.parametrize("name, params", GAMES)
def test_actions_and_moves_correspond(name, params):
    game = load_game(name, **params)
    assert isinstance(game, Game) and isinstance(game.new_state(), State)
    for action in range(game.num_actions):
        move = game.action_to_move(action)
        assert type(move) is tuple and game.move_to_action(move) == action
    for bad in (-1, game.num_actions, True, "0", None):
        with pytest.raises(IllegalMove) as exc:
            game.action_to_move(bad)
        assert exc.value.reason == "out_of_range"
    with pytest.raises(IllegalMove):
        game.move_to_action("nonsense")


@pytest.mark.parametrize("name, params", GAMES)
def test_unchecked_play_is_checked_play_by_action_id(name, params):
    game = load_game(name, **params)
    rng = random.Random(11)
    for _ in range(20):
        checked = game.new_state()
        unchecked = game.new_state()
        history = []
        while not checked.is_terminal():
            actions = unchecked.legal_actions()
            assert sorted(game.move_to_action(m) for m in checked.legal_moves()) == \
                sorted(actions)
            assert len(set(actions)) == len(actions)
            action = rng.choice(actions)
            move = game.action_to_move(action)
            assert checked.check(move) == action and checked.is_legal(move)
            played = checked.play(move)
            assert unchecked.play_unchecked(action) == played.completed
            assert unchecked.to_dict() == checked.to_dict()
            history.append(move)
        assert unchecked.legal_actions() == []
        assert unchecked.history == checked.history == history
        # either undo takes back either play
        assert unchecked.undo_unchecked() == game.move_to_action(history[-1])
        assert checked.undo() == history[-1]
        assert unchecked.to_dict() == checked.to_dict()


@pytest.mark.parametrize("name, params", GAMES)
def test_check_refuses_and_changes_nothing(name, params):
    game = load_game(name, **params)
    state, moves = _random_game(game, random.Random(3), 4)
    before = state.to_dict()
    with pytest.raises(IllegalMove) as exc:
        state.check(moves[0])  # already played
    assert exc.value.reason in ("already_drawn", "occupied", "block_closed", "wrong_block")
    assert not state.is_legal(moves[0]) and not state.is_legal([1])
    assert state.to_dict() == before


def test_dots_line_ids_are_openspiel_action_ids():
    game = load_game("dots-and-boxes", width=3, height=2)
    state = game.new_state()
    state.play((2, 1, 1))
    assert state.legal_actions() == [a for a in range(game.num_actions) if a != 1]
    assert state.drawn == 1 << game.move_to_action((2, 1, 1))
    assert state.to_lines()[game.move_to_action((2, 1, 1))] == "1"


def test_dots_state_from_lines_is_a_classmethod():
    from boxfish.engine.dots import DotsState

    game = load_game("dots-and-boxes", width=2, height=2)
    state = DotsState.from_lines(game, "110000000000", to_move=1, scores=(0, 0))
    assert state.to_lines() == "110000000000" and state.to_move == 1 and state.serial == 2
    assert game.from_lines("110000000000", to_move=1).to_dict() == state.to_dict()
    with pytest.raises(IndexError):
        state.undo()


def test_xttt_copy_without_history():
    game = load_game("extreme-tictactoe")
    state, moves = _random_game(game, random.Random(5), 9)
    bare = state.copy(history=False)
    assert bare.to_dict() == state.to_dict() and bare.hash == state.hash
    assert bare.serial == state.serial == 9 and bare.history == []
    with pytest.raises(IndexError):
        bare.undo()
    assert state.copy().history == moves


# ----------------------------------------------------------------- value types

def test_value_enums_are_their_strings():
    assert Bound.EXACT == "exact" and Proven.WIN == "win"
    assert [str(b) for b in Bound] == ["exact", "lower", "upper", "estimate"]
    assert json.dumps([Bound.UPPER, Proven.DRAW]) == '["upper", "draw"]'
    assert engine.Bound is Bound and engine.Proven is Proven and engine.Move == tuple[int, ...]


def test_to_dict_holds_plain_strings():
    state = load_game("extreme-tictactoe").new_state()
    d = engine.analyse(state, time_ms=None, depth=1).to_dict()
    assert type(d["bound"]) is str and all(type(m["bound"]) is str for m in d["moves"])
    dots = load_game("dots-and-boxes", width=1, height=2).new_state()
    dots.play((1, 1, 1))
    chains = dots.to_dict()["chains"]
    assert type(chains["phase"]) is str
    a = engine.analyse(load_game("dots-and-boxes", width=2, height=1).new_state(), time_ms=None)
    assert type(a.to_dict()["bound"]) is str and a.bound is Bound.EXACT


# ----------------------------------------------------------------- the shared search module

def test_deadline_keeps_the_margin():
    assert deadline_of(10.0, None) is None
    assert deadline_of(10.0, 1000) == pytest.approx(11.0 - DEADLINE_MARGIN)
    assert deadline_of(10.0, 0) == 10.0


def test_both_searchers_share_limits_and_results():
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.driver import iterate
    from boxfish.engine.dots.search.node import Searcher as DotsSearcher
    from boxfish.engine.xttt.search import Searcher as XtttSearcher

    dots = DotsSearcher(tables(3, 3), max_nodes=10_000)
    xttt = XtttSearcher(load_game("extreme-tictactoe").new_state(), max_nodes=10_000)
    for searcher, results in ((dots, iterate(dots, 0, max_depth=3)),
                              (xttt, xttt.iterate(max_depth=3))):
        assert isinstance(searcher, SearcherBase) and searcher.max_nodes == 10_000
        results = list(results)
        assert [r.depth for r in results] == [1, 2, 3]
        for r in results:
            assert isinstance(r, DepthResult) and not r.refined
            assert all(isinstance(m, RootMove) and isinstance(m.bound, Bound) for m in r.moves)
            assert r.best is r.moves[0] and r.best.bound == Bound.EXACT
            assert set(r.searched) <= {m.action for m in r.moves}
        assert results[-1].nodes == searcher.nodes
    # past the budget both raise the one abort type
    for searcher in (dots, xttt):
        searcher.max_nodes = searcher.nodes
        with pytest.raises(SearchAborted):
            searcher.check_limits()


def test_the_block_cache_belongs_to_the_searcher_and_is_bounded():
    from boxfish.engine.xttt.evaluate import BlockInfoCache, block_info
    from boxfish.engine.xttt.search import Searcher

    cache = BlockInfoCache(max_entries=3)
    for mx in range(1, 6):
        assert cache.info(mx, 0) == block_info(mx, 0)
        assert 1 <= len(cache) <= 3
    state = load_game("extreme-tictactoe").new_state()
    a, b = Searcher(state), Searcher(state)
    assert a.blocks is not b.blocks
    shared = Searcher(state, blocks=cache)
    assert shared.blocks is cache
