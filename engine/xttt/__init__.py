"""Extreme Tic-Tac-Toe (the rules are numbered as in the project's rules document).

``load_game("extreme-tictactoe")`` returns the shared :class:`XtttGame`. Its states
(:class:`XtttState`) implement the engine's State protocol with moves ``(row, col)``, 0..15,
and action ids ``row * 16 + col`` (``XtttGame.move_to_action`` / ``action_to_move``):

* ``legal_moves()``, ``check(move)``, ``play(move) -> Played`` (``completed`` 1 when the move
  won a block, ``turn_passed`` False when a bonus move follows), ``undo()``, ``copy()``,
  ``serial``, ``to_move`` (0 = x, 1 = o), ``is_terminal()``, ``history``;
* the unchecked fast path: ``legal_actions()``, ``play_unchecked(action)``,
  ``undo_unchecked()``, and the read-only attributes the search reads (``marks``,
  ``block_codes``, ``won``, ``decided``, ``last_action``, ``over``, ``hash``);
* ``block_status()`` (16 of ``"open"``, ``"x"``, ``"o"``, ``"drawn"``, row-major),
  ``in_bonus``, ``last_move``, ``ending`` (an :class:`Ending`, ``"pattern"`` / ``"draw"``, or
  None);
* ``result()``: None while the game goes on, else ``{"winner", "points"}``: 68 - 0 for a
  pattern win, rule-16 block values when every block is decided (the winner is then the player
  with more points, None on a tie);
* ``to_dict()``: game, serial, to_move, status (``"in_progress"`` / ``"finished"``), result,
  ending, board (16 strings of ``.``, ``x``, ``o``), blocks, in_bonus, last_move, legal_moves,
  scores (blocks won by each player).

Bad moves raise :class:`~engine.errors.IllegalMove` (``malformed``, ``out_of_range``,
``game_over``, ``occupied``, ``block_closed``, ``wrong_block``) and change nothing.
``XtttGame.from_board`` sets up any position. ``Game.analyse`` runs the alpha-beta search of
:mod:`engine.xttt.search`, which reports a forced pattern win with its distance in
``mate_in``.

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
