"""The Dots-and-Boxes game: board size, move parsing, OpenSpiel interchange."""

from __future__ import annotations

from functools import cache

from ..errors import IllegalMove, UnknownGame
from ..game import Game, Move
from .geometry import HORIZONTAL, MAX_SIZE, VERTICAL, geometry
from .state import DotsState

NAME = "dots-and-boxes"


class DotsGame(Game):
    """Dots and Boxes on ``width`` x ``height`` boxes (1..20 each). Immutable; shared per size."""

    name = NAME

    def __init__(self, width: int, height: int) -> None:
        for label, v in (("width", width), ("height", height)):
            if type(v) is not int or not 1 <= v <= MAX_SIZE:
                raise UnknownGame(f"{label} must be an int from 1 to {MAX_SIZE}, got {v!r}")
        self.width = width
        self.height = height
        self.geometry = geometry(width, height)
        self.num_lines = self.geometry.num_lines
        self.num_boxes = self.geometry.num_boxes

    def params(self) -> dict:
        return {"width": self.width, "height": self.height}

    def new_state(self) -> DotsState:
        return DotsState(self)

    def parse_move(self, obj) -> Move:
        """``[x, y, o]`` (ints; bools refused) -> ``(x, y, o)``; raises IllegalMove
        (``malformed`` or ``out_of_range``)."""
        if not isinstance(obj, (list, tuple)) or len(obj) != 3 or any(
                type(v) is not int for v in obj):
            raise IllegalMove("malformed", obj, "a move is three ints [x, y, o]")
        x, y, o = obj
        if o != HORIZONTAL and o != VERTICAL:
            raise IllegalMove("malformed", obj, "orientation must be 1 (horizontal) or 2 "
                              "(vertical)")
        if not self.geometry.in_range(x, y, o):
            raise IllegalMove("out_of_range", obj,
                              f"no such line on a {self.width}x{self.height} board")
        return (x, y, o)

    @property
    def num_actions(self) -> int:
        """The number of lines: action ids run from 0 to ``num_lines - 1``."""
        return self.num_lines

    def move_to_action(self, move) -> int:
        """Move ``(x, y, o)`` -> its line id, the OpenSpiel action id (raises IllegalMove for a
        malformed or off-board move)."""
        x, y, o = self.parse_move(move)
        return self.geometry.line_id(x, y, o)

    def action_to_move(self, action: int) -> Move:
        """OpenSpiel action id -> move ``(x, y, o)`` (raises IllegalMove for an id off the
        board)."""
        if type(action) is not int or not 0 <= action < self.num_lines:
            raise IllegalMove("out_of_range", action,
                              f"action ids run from 0 to {self.num_lines - 1}")
        return self.geometry.moves[action]

    def from_lines(self, lines: str, to_move: int = 0, scores=(0, 0)) -> DotsState:
        """A state from an OpenSpiel line string; see :meth:`DotsState.from_lines`."""
        return DotsState.from_lines(self, lines, to_move, scores)

    def analyse(self, state, limit, multipv, on_progress, cache=None, start=None, core=None,
                threads=1, evaluation=None):
        from .search.driver import analyse
        return analyse(state, limit, multipv, on_progress, cache=cache, start=start, core=core,
                       threads=threads, evaluation=evaluation)


@cache
def dots_and_boxes(width: int = 5, height: int = 5) -> DotsGame:
    """``load_game("dots-and-boxes", width=W, height=H)``; one shared instance per size."""
    return DotsGame(width, height)


def _factory(**params) -> DotsGame:
    unknown = set(params) - {"width", "height"}
    if unknown:
        raise UnknownGame(f"dots-and-boxes takes width and height, not {sorted(unknown)}")
    for label in ("width", "height"):
        v = params.get(label, 5)
        # checked before the cache, where True would pass for 1 and 2.0 for 2
        if type(v) is not int or not 1 <= v <= MAX_SIZE:
            raise UnknownGame(f"{label} must be an int from 1 to {MAX_SIZE}, got {v!r}")
    return dots_and_boxes(**params)
