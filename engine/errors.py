"""Every exception the engine raises on purpose, in one place.

- :class:`IllegalMove`, :class:`ReplayError`, :class:`UnknownGame`, :class:`RecordError`: bad
  input (a move, an event list, a game name or parameters, a game record); ``ValueError``
  subclasses, so callers that only care about "bad input" can catch ``ValueError``; the
  attributes say exactly what was wrong. Also importable from :mod:`boxfish.engine`.
- :class:`SearchAborted`: inside a search, its deadline or node budget is reached (the
  searches catch it; also importable from :mod:`boxfish.engine.search`).
- :class:`CheckpointMismatch`: a solve's checkpoint file is not this solve's (a
  ``ValueError``; also importable from :mod:`boxfish.engine.dots.solve`).
"""

from __future__ import annotations

import json

ILLEGAL_MOVE_REASONS = (
    "out_of_range",
    "already_drawn",
    "occupied",
    "wrong_block",
    "block_closed",
    "game_over",
    "malformed",
)


def format_move(move: object) -> str:
    """A move as messages write it: its JSON form, ``[x, y, o]`` (``[row, col]``), the way
    the API takes it, whether it came as a tuple or a list; ``repr`` for what has no JSON form."""
    try:
        return json.dumps(list(move) if isinstance(move, tuple) else move, allow_nan=False)
    except (TypeError, ValueError):
        return repr(move)


class IllegalMove(ValueError):
    """A move that cannot be played in the given state.

    ``reason`` is one of :data:`ILLEGAL_MOVE_REASONS`; ``move`` is the offending input as given.
    Raising it never changes the state. The message writes the move in its JSON form,
    ``[x, y, o]`` (:func:`format_move`).
    """

    def __init__(self, reason: str, move: object, detail: str = "") -> None:
        self.reason = reason
        self.move = move
        self.detail = detail
        text = f"illegal move {format_move(move)}: {reason}"
        if detail:
            text += f" ({detail})"
        super().__init__(text)


class ReplayError(ValueError):
    """An event list that cannot be replayed.

    ``serial`` is the serial number of the offending event, ``reason`` one of ``gap``,
    ``duplicate``, ``malformed`` or an :class:`IllegalMove` reason.
    """

    def __init__(self, serial: int | None, reason: str, detail: str) -> None:
        self.serial = serial
        self.reason = reason
        self.detail = detail
        super().__init__(f"event serial {serial}: {reason}: {detail}")


#: The ``reason`` of a :class:`RecordError`.
RECORD_ERROR_REASONS = (
    "syntax",        # not the record's grammar (a stray character, a turn marker out of order)
    "truncated",     # the text ends inside a header, a comment or a turn
    "header",        # a header missing, repeated, or with a value that is not allowed
    "notation",      # a move written in no notation of the record's game
    "illegal_move",  # a move the rules refuse (``move_reason``: the engine's reason)
    "turn",          # a turn that is not the player's, or that goes on when it must end
    "result",        # Result, Score or Position disagree with the moves
    "too_large",     # more text than a record may have
)


class RecordError(ValueError):
    """A game record that cannot be read (:mod:`engine.records`).

    ``reason`` is one of :data:`RECORD_ERROR_REASONS`; ``move`` the number of the move the
    problem is at (1 for the first move, as its serial in a game's log; None for a problem
    before the moves or of the whole record), ``line`` the 1-based line of the text (None when
    not known), ``move_reason`` the engine's :class:`IllegalMove` reason of an illegal move
    (None otherwise) and ``detail`` what is wrong, in words.
    """

    def __init__(self, reason: str, detail: str, move: int | None = None,
                 line: int | None = None, move_reason: str | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.move = move
        self.line = line
        self.move_reason = move_reason
        where = []
        if move is not None:
            where.append(f"move {move}")
        if line is not None:
            where.append(f"line {line}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{reason}: {detail}")


class UnknownGame(ValueError):
    """``load_game`` was given a game name or parameters it does not know."""


class SearchAborted(Exception):
    """Raised inside a search when its deadline or node budget is reached."""


class CheckpointMismatch(ValueError):
    """A checkpoint file is not one of this solve (another board or position, or not a
    checkpoint at all)."""
