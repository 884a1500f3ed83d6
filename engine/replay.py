"""Rebuild a state from move events.

An event is a ``(serial, move)`` pair; serials count 1, 2, 3, ... with no gap.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import IllegalMove, ReplayError
from .game import Game, State


def replay(game: Game, events: Iterable[tuple[int, object]], state: State | None = None) -> State:
    """Apply ``events`` in order and return the resulting state.

    Starts from ``state`` (which is mutated; its ``serial`` must precede the first event) or from
    a new game. Raises :class:`ReplayError` naming the serial for a gap, a repeated serial, a
    malformed event or an illegal move; the events before it have been applied to ``state``.
    """
    if state is None:
        state = game.new_state()
    elif state.game != game:
        raise ValueError(f"state belongs to {state.game!r}, not {game!r}")
    for event in events:
        try:
            serial, move = event
        except (TypeError, ValueError):
            raise ReplayError(None, "malformed",
                              f"event {event!r} is not a (serial, move) pair") from None
        if type(serial) is not int:
            raise ReplayError(None, "malformed", f"serial {serial!r} is not an int")
        expected = state.serial + 1
        if serial != expected:
            reason = "duplicate" if serial <= state.serial else "gap"
            raise ReplayError(serial, reason, f"expected serial {expected}, got {serial}")
        try:
            state.play(move)
        except IllegalMove as exc:
            raise ReplayError(serial, exc.reason, str(exc)) from exc
    return state
