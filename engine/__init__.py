"""Boxfish engine: game rules, move replay and time-bounded search, in Python, with a compiled
C core for the Dots-and-Boxes search (:mod:`engine.dots.search`; the Python search runs where
the core was not built, and on boards it does not take). Its one dependency is cachetools.

Public API::

    from boxfish.engine import load_game, replay, analyse, IllegalMove
    game = load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    state.play((1, 1, 1))                                  # checked: raises IllegalMove
    state.play_unchecked(game.move_to_action((2, 1, 1)))  # unchecked, by action id
    result = analyse(state, time_ms=500)

``Move`` (a tuple of ints), ``Bound`` and ``Proven`` (string enums) are the value types of
the API; :mod:`engine.search` holds what the games' searches share.
"""

from . import dots, xttt  # noqa: F401  (registers the games)
from .analysis import (
    Analysis,
    Bound,
    Limit,
    MoveValue,
    Progress,
    Proven,
    SearchCache,
    analyse,
    analyze,
)
from .errors import ILLEGAL_MOVE_REASONS, IllegalMove, RecordError, ReplayError, UnknownGame
from .game import Game, Move, Played, State, game_names, load_game
from .replay import replay

__all__ = [
    "load_game", "game_names", "replay", "analyse", "analyze",
    "Game", "State", "Played", "Move", "Analysis", "MoveValue", "Limit", "Progress",
    "SearchCache", "Bound", "Proven",
    "IllegalMove", "ReplayError", "UnknownGame", "RecordError", "ILLEGAL_MOVE_REASONS",
]
