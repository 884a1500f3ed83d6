"""Extreme Tic-Tac-Toe (the rules are numbered as in the project's rules document).

``load_game("extreme-tictactoe")`` returns the shared :class:`XtttGame`; its states
(:class:`XtttState`, whose docstring lists what they offer) have moves ``(row, col)``, 0..15,
and action ids ``row * 16 + col``. ``Game.analyse`` runs the alpha-beta search of
:mod:`engine.xttt.search`.

Modules: ``tables`` (geometry, pattern masks), ``zobrist`` (hash keys), ``state`` (rules on
bitboards), ``evaluate`` (heuristic), ``endgame`` (points-only endings), ``symmetry`` (root
move classes), ``search`` (iterative-deepening alpha-beta), ``game``.
"""

from __future__ import annotations

from ..game import register
from .game import GAME, NAME, XtttGame, factory
from .state import Ending, XtttState

register(NAME, factory)

__all__ = ["GAME", "NAME", "XtttGame", "XtttState", "Ending", "factory"]
