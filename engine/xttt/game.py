"""The Extreme Tic-Tac-Toe :class:`Game`: one shared, parameterless, immutable instance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import IllegalMove
from ..game import Game, Move
from .state import XtttState, coerce_move

NAME = "extreme-tictactoe"


class XtttGame(Game):
    """Extreme Tic-Tac-Toe (4x4 board of 4x4 blocks, rows, columns and diamonds, bonus move)."""

    name = NAME

    def new_state(self) -> XtttState:
        return XtttState(self)

    def from_board(self, board, to_move: int = 0, last_move=None,
                   in_bonus: bool = False) -> XtttState:
        """A position set up from a board; see :meth:`XtttState.from_board`."""
        return XtttState.from_board(self, board, to_move, last_move, in_bonus)

    def params(self) -> dict[str, Any]:
        return {}

    def parse_move(self, obj: Any) -> Move:
        """``[row, col]`` (a JSON list or tuple of two ints 0..15) as a ``(row, col)`` tuple.

        Raises IllegalMove ``malformed`` for any other shape or type (bools are not ints) and
        ``out_of_range`` for coordinates off the board.
        """
        return coerce_move(obj)

    @property
    def num_actions(self) -> int:
        """256: one action id per cell."""
        return 256

    def move_to_action(self, move: Any) -> int:
        """Move ``(row, col)`` -> its cell ``row * 16 + col`` (raises IllegalMove for a
        malformed or off-board move)."""
        r, c = coerce_move(move)
        return r * 16 + c

    def action_to_move(self, action: int) -> Move:
        """Cell ``row * 16 + col`` -> move ``(row, col)`` (raises IllegalMove for an id off
        the board)."""
        if type(action) is not int or not 0 <= action < 256:
            raise IllegalMove("out_of_range", action, "action ids run from 0 to 255")
        return divmod(action, 16)

    def analyse(self, state, limit, multipv: int | None = None,
                on_progress: Callable | None = None, cache=None, start=None, core=None,
                threads=1):
        """Alpha-beta search of ``state``; see :func:`engine.xttt.search.analyse`. There is
        no compiled core for this game: ``core`` must be None or ``"python"``, and the search
        runs on one thread whatever ``threads`` says."""
        if core not in (None, "python"):
            raise ValueError(f"Extreme Tic-Tac-Toe has only the Python search, got core={core!r}")
        if not isinstance(state, XtttState):
            raise TypeError(f"not an Extreme Tic-Tac-Toe state: {state!r}")
        from .search import analyse
        return analyse(state, limit, multipv, on_progress, cache=cache, start=start)


GAME = XtttGame()


def factory(**params: Any) -> XtttGame:
    """The registry factory: no parameters; raises UnknownGame for any."""
    if params:
        from ..errors import UnknownGame
        raise UnknownGame(f"{NAME} takes no parameters, got {sorted(params)}")
    return GAME


__all__ = ["XtttGame", "GAME", "NAME", "factory", "IllegalMove"]
