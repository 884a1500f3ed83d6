"""Boxfish engine: game rules, move replay and time-bounded search. Pure Python, stdlib only.

Public API::

    from boxfish.engine import load_game, replay, analyse, IllegalMove
    game = load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    state.play((1, 1, 1))
    result = analyse(state, time_ms=500)
"""

from . import dots, xttt  # noqa: F401  (registers the games)
from .analysis import Analysis, Limit, MoveValue, Progress, SearchCache, analyse, analyze
from .errors import ILLEGAL_MOVE_REASONS, IllegalMove, ReplayError, UnknownGame
from .game import Game, Played, State, game_names, load_game
from .replay import replay

__all__ = [
    "load_game", "game_names", "replay", "analyse", "analyze",
    "Game", "State", "Played", "Analysis", "MoveValue", "Limit", "Progress", "SearchCache",
    "IllegalMove", "ReplayError", "UnknownGame", "ILLEGAL_MOVE_REASONS",
]
