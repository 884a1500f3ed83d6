"""The Dots-and-Boxes game: board size, move parsing, OpenSpiel interchange."""

from __future__ import annotations

from functools import cache

from ..errors import IllegalMove, UnknownGame
from ..game import Game
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

    def parse_move(self, obj) -> tuple:
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

    def move_to_action(self, move) -> int:
        """Seed triple -> OpenSpiel action id (raises IllegalMove for a bad triple)."""
        x, y, o = self.parse_move(move)
        return self.geometry.line_id(x, y, o)

    def action_to_move(self, action: int) -> tuple:
        """OpenSpiel action id -> seed triple (raises IllegalMove for an id off the board)."""
        if type(action) is not int or not 0 <= action < self.num_lines:
            raise IllegalMove("out_of_range", action,
                              f"action ids run from 0 to {self.num_lines - 1}")
        return self.geometry.moves[action]

    def from_lines(self, lines: str, to_move: int = 0, scores=(0, 0)) -> DotsState:
        """A state from an OpenSpiel line string (one '0'/'1' per action id).

        The string says nothing about who took which box: ``scores`` may account for at most
        the completed boxes; ``serial`` becomes the number of drawn lines, the index gives them
        serial 0, and ``undo`` cannot go back past this position. Raises ``ValueError`` for a
        string of the wrong length or characters, a bad ``to_move`` or impossible scores.
        """
        geo = self.geometry
        if not isinstance(lines, str) or len(lines) != geo.num_lines or set(lines) - {"0", "1"}:
            raise ValueError(f"a line string for {self.width}x{self.height} is "
                             f"{geo.num_lines} characters of '0'/'1', got {lines!r}")
        if to_move not in (0, 1) or type(to_move) is not int:
            raise ValueError(f"to_move must be 0 or 1, got {to_move!r}")
        try:
            s0, s1 = scores
        except (TypeError, ValueError):
            raise ValueError(f"scores must be a pair of ints, got {scores!r}") from None
        if type(s0) is not int or type(s1) is not int or s0 < 0 or s1 < 0:
            raise ValueError(f"scores must be non-negative ints, got {scores!r}")
        state = DotsState(self)
        for line, ch in enumerate(lines):
            if ch == "1":
                state.play_line(line)
        done = sum(1 for v in state._val if v == 4)
        if s0 + s1 > done:
            raise ValueError(f"scores {scores!r} exceed the {done} completed boxes")
        for ys in state._index.values():
            for os_ in ys.values():
                for o in os_:
                    os_[o] = 0
        state._stack.clear()
        state._owner = [-1] * self.num_boxes
        state._scores = [s0, s1]
        state._to_move = to_move
        state._base = state._serial
        return state

    def analyse(self, state, limit, multipv, on_progress, cache=None, start=None):
        from .search import analyse
        return analyse(state, limit, multipv, on_progress, cache=cache, start=start)


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
