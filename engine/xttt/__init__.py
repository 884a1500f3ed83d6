"""Extreme Tic-Tac-Toe (rules: /work/shared/spec/extreme-tictactoe.md).

``load_game("extreme-tictactoe")`` returns the shared :class:`XtttGame`. Its states
(:class:`XtttState`) implement the engine's State protocol with moves ``(row, col)``, 0..15:

* ``legal_moves()``, ``play(move) -> Played`` (``completed`` 1 when the move won a block,
  ``turn_passed`` False when a bonus move follows), ``undo()``, ``copy()``, ``serial``,
  ``to_move`` (0 = x, 1 = o), ``is_terminal()``, ``history``;
* ``block_status()`` (16 of ``"open"``, ``"x"``, ``"o"``, ``"drawn"``, row-major),
  ``in_bonus``, ``last_move``, ``ending`` (``"pattern"`` / ``"draw"`` / None), ``hash``;
* ``result()``: None while the game goes on, else ``{"winner", "points"}``: 68 - 0 for a
  pattern win, rule-16 block values when every block is decided (the winner is then the player
  with more points, None on a tie);
* ``to_dict()``: game, serial, to_move, status (``"in_progress"`` / ``"finished"``), result,
  ending, board (16 strings of ``.``, ``x``, ``o``), blocks, in_bonus, last_move, legal_moves,
  scores (blocks won by each player).

Bad moves raise :class:`~engine.errors.IllegalMove` (``malformed``, ``out_of_range``,
``game_over``, ``occupied``, ``block_closed``, ``wrong_block``) and change nothing.
``XtttGame.from_board`` sets up any position. ``Game.analyse`` runs the alpha-beta search of
:mod:`engine.xttt.search`.

Modules: ``tables`` (geometry, pattern masks), ``zobrist`` (hash keys), ``state`` (rules on
bitboards), ``evaluate`` (heuristic), ``search`` (iterative-deepening alpha-beta), ``game``.
"""

from __future__ import annotations

from ..game import register
from .game import GAME, NAME, XtttGame, factory
from .state import XtttState

register(NAME, factory)

__all__ = ["GAME", "NAME", "XtttGame", "XtttState", "factory"]
