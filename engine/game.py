"""The game-independent part of the engine: the Game/State protocol and the game registry.

Every game (Dots and Boxes, Extreme Tic-Tac-Toe) implements :class:`Game` and :class:`State`.
Code that works for any game (replay, the service, the workers) only uses what is declared here.

A move is always a tuple of ints, :data:`Move` (``(x, y, o)`` for Dots and Boxes, ``(row, col)``
for Extreme Tic-Tac-Toe); ``Game.parse_move`` turns JSON input into one, raising
``IllegalMove("malformed")``. Every move also has a dense integer *action id*,
``0 <= action < Game.num_actions`` (``Game.move_to_action`` / ``Game.action_to_move``): the
OpenSpiel action id for Dots and Boxes, ``row * 16 + col`` for Extreme Tic-Tac-Toe.

Two ways to play, the same in both games (as in python-chess):

* ``State.play(move) -> Played`` checks its input and raises :class:`IllegalMove` without
  changing anything; ``State.undo() -> Move`` takes the last move back.
* ``State.play_unchecked(action) -> int`` takes an action id from ``State.legal_actions()`` and
  checks nothing (for searches and bulk replay of trusted data); ``State.undo_unchecked() ->
  int`` takes the last move back. Either undo is the exact inverse of either play.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from .errors import IllegalMove, UnknownGame

#: A move: a tuple of ints, ``(x, y, o)`` in Dots and Boxes, ``(row, col)`` in Extreme
#: Tic-Tac-Toe.
Move: TypeAlias = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Played:
    """What happened when a move was played.

    ``completed``: boxes (Dots and Boxes) or blocks (Extreme Tic-Tac-Toe) the move won for the
    mover. ``turn_passed``: whether the other player moves next.
    """

    serial: int
    move: Move
    player: int
    completed: int
    turn_passed: bool


class State(ABC):
    """A mutable game position with an undo stack.

    ``play`` validates and raises :class:`IllegalMove` without changing anything on bad input;
    ``play_unchecked`` is its fast path for legal action ids. ``undo`` and ``undo_unchecked``
    are the exact inverse of the last ``play`` or ``play_unchecked``.
    """

    game: Game

    @property
    @abstractmethod
    def serial(self) -> int:
        """Number of moves played so far (the serial of the last move, 0 at the start)."""

    @property
    @abstractmethod
    def to_move(self) -> int:
        """The player to move: 0 or 1."""

    @abstractmethod
    def legal_moves(self) -> list[Move]:
        """The legal moves; empty when the game is over."""

    @abstractmethod
    def legal_actions(self) -> list[int]:
        """The action ids of the legal moves, each once, in an order the game defines (Dots
        and Boxes: ascending); empty when the game is over."""

    @abstractmethod
    def check(self, move: Iterable[int]) -> int:
        """The action id of ``move`` when it is legal here; raises :class:`IllegalMove`
        (which says why) otherwise. Changes nothing."""

    def is_legal(self, move: Iterable[int]) -> bool:
        """Whether ``move`` is legal here (:meth:`check` without the exception)."""
        try:
            self.check(move)
        except IllegalMove:
            return False
        return True

    @abstractmethod
    def play(self, move: Iterable[int]) -> Played:
        """Play ``move``; raises :class:`IllegalMove` and changes nothing when it is not
        legal here."""

    @abstractmethod
    def play_unchecked(self, action: int) -> int:
        """Play the move with action id ``action`` WITHOUT any check, and return the boxes
        (Dots and Boxes: 0, 1 or 2) or blocks (Extreme Tic-Tac-Toe: 0 or 1) it completed.

        ``action`` must be one of :meth:`legal_actions`; anything else corrupts the state.
        """

    @abstractmethod
    def undo(self) -> Move:
        """Take back the last move and return it; ``IndexError`` when nothing was played."""

    @abstractmethod
    def undo_unchecked(self) -> int:
        """Take back the last move and return its action id, WITHOUT checking that there is
        one (the fast path of :meth:`undo`)."""

    @abstractmethod
    def copy(self) -> State: ...

    @abstractmethod
    def is_terminal(self) -> bool: ...

    def status(self) -> str:
        """``"finished"`` when the game is over, else ``"in_progress"`` (as in ``to_dict``)."""
        return "finished" if self.is_terminal() else "in_progress"

    @abstractmethod
    def result(self) -> dict | None:
        """None while the game goes on, else ``{"winner": 0 | 1 | None, "points": [p0, p1]}``."""

    @property
    @abstractmethod
    def history(self) -> list[Move]:
        """The moves played so far, in order (a copy)."""

    @abstractmethod
    def to_dict(self) -> dict:
        """A JSON-ready summary of the position (what the service shows for a game)."""


class Game(ABC):
    """A game with fixed parameters; immutable and shareable between threads."""

    name: str

    @abstractmethod
    def new_state(self) -> State: ...

    @property
    @abstractmethod
    def num_actions(self) -> int:
        """How many action ids there are: every move's id is in ``range(num_actions)``."""

    @abstractmethod
    def move_to_action(self, move: Any) -> int:
        """The action id of ``move`` (what ``State.play_unchecked`` takes and
        ``State.legal_actions`` lists), whether or not the move is legal in some position.

        Raises :class:`IllegalMove` (``malformed`` or ``out_of_range``, as
        :meth:`parse_move`) for a value that names no move of this game.
        """

    @abstractmethod
    def action_to_move(self, action: int) -> Move:
        """The move with action id ``action`` (the inverse of :meth:`move_to_action`).

        Raises :class:`IllegalMove` (``out_of_range``) for anything but an int in
        ``range(num_actions)``.
        """

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The parameters ``load_game`` was called with (JSON-ready)."""

    @abstractmethod
    def parse_move(self, obj: Any) -> Move:
        """Turn a JSON value (a list of ints) into a move tuple.

        Raises :class:`IllegalMove` with reason ``malformed`` for a value of the wrong shape or
        type, ``out_of_range`` for coordinates off the board.
        """

    @abstractmethod
    def analyse(self, state: State, limit: Any, multipv: int | None,
                on_progress: Callable | None, cache: Any = None,
                start: float | None = None, core: str | None = None,
                threads: int = 1) -> Any:
        """Search ``state`` within ``limit``; see :func:`engine.analysis.analyse`
        (``cache``: an ``engine.analysis.SearchCache`` or None; ``start``: the
        ``time.perf_counter()`` the time limit counts from, default now; ``core``: the search
        to run, None for the best available, ValueError for one the game has not;
        ``threads``: the threads the search may run, at least 1, which a search that runs
        on one thread only ignores)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.params() == self.params()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.params().items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"load_game({self.name!r}{', ' if args else ''}{args})"


_REGISTRY: dict[str, Callable[..., Game]] = {}


def register(name: str, factory: Callable[..., Game]) -> None:
    """Make ``load_game(name, **params)`` call ``factory(**params)``."""
    _REGISTRY[name] = factory


def game_names() -> list[str]:
    return sorted(_REGISTRY)


def load_game(name: str, **params: Any) -> Game:
    """Return the game called ``name`` with the given parameters.

    Raises :class:`UnknownGame` (a ``ValueError``) for an unknown name or bad parameters.
    Games are cached: the same name and parameters give the same object.
    """
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UnknownGame(f"unknown game {name!r}; known: {', '.join(game_names())}") from None
    return factory(**params)


__all__ = ["Game", "State", "Played", "Move", "register", "load_game", "game_names",
           "IllegalMove"]
