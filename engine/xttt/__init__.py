"""Extreme Tic-Tac-Toe (spec: /work/shared/spec/extreme-tictactoe.md).

``load_game("extreme-tictactoe")`` returns the shared :class:`XtttGame`; its states are
:class:`XtttState` (rules, bitboards, Zobrist hash, undo) and ``Game.analyse`` runs the
alpha-beta search of :mod:`engine.xttt.search`.
"""

from __future__ import annotations

from ..game import register
from .game import GAME, NAME, XtttGame, factory
from .state import XtttState

register(NAME, factory)

__all__ = ["GAME", "NAME", "XtttGame", "XtttState", "factory"]
