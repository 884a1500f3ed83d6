"""The errors of the service: the domain errors every layer raises, defined in one place.

========================  =============================================================
error                     raised when
========================  =============================================================
:class:`NotFound`         no such thing (an analysis, ...); :class:`GameNotFound`: no game
:class:`Unauthorized`     a request that must carry a game's write token carries none
:class:`Forbidden`        it carries another game's token
:class:`GameIdTaken`      a new game's id is taken already (the games service retries)
:class:`SerialConflict`   the log has moved on (:class:`StaleHead`: to another history)
:class:`SeatTaken`        a client's move for the side the engine plays
:class:`IdempotencyKeyReused`  an Idempotency-Key used before with another body
:class:`ImportKeyReused`  an import's Idempotency-Key used before with another record
:class:`NotReplicated`    an append stored, but not confirmed by enough replicas in time
:class:`QueueFull`        the analysis queue holds its maximum
:class:`NothingToReview`  a review of a game that has no moves yet
:class:`WebhookLimit`     a game has as many webhooks as allowed
:class:`UrlRefused`       a webhook or callback URL the service will not call
:class:`ConfigurationError`  the service cannot start with its settings (never an answer)
:class:`SubproblemFailed`  a distributed solve's job failed too often (never an answer)
:class:`FeedPositionInvalid`  a feed position that cannot be parsed
:class:`FeedRewritten`    a feed read from a position whose history the feed no longer has
========================  =============================================================

The application and store layers raise these and know nothing of HTTP; the HTTP layer
answers each with its RFC 9457 problem (:mod:`service.http.errors`). This module imports no
layer, no Flask and no Redis: every layer and the workers import it.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError", "FeedPositionInvalid", "FeedRewritten", "Forbidden", "GameIdTaken",
    "GameNotFound", "IdempotencyKeyReused", "ImportKeyReused", "NothingToReview", "NotFound",
    "NotReplicated", "QueueFull", "SeatTaken", "SerialConflict", "StaleHead", "SubproblemFailed",
    "Unauthorized", "UrlRefused", "WebhookLimit",
]


class NotFound(LookupError):
    """There is no such thing; ``detail`` names what was looked for (``no analysis 'x'``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class GameNotFound(NotFound):
    """No game with the id ``game_id`` (also ``args[0]``)."""

    def __init__(self, game_id: str) -> None:
        LookupError.__init__(self, game_id)
        self.game_id = game_id
        self.detail = f"no game {game_id!r}"


class Unauthorized(Exception):
    """A request that must carry the game's write token carries none (no ``Authorization``
    header, or one that is not ``Bearer <token>``); ``detail`` says which."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Forbidden(Exception):
    """A request carries a write token, but not this game's (or, with ``title``
    ``Operators only``, not the operator token)."""

    def __init__(self, detail: str = "the token does not belong to this game",
                 title: str = "Wrong write token") -> None:
        super().__init__(detail)
        self.detail = detail
        self.title = title


class GameIdTaken(ValueError):
    """A game with the id ``game_id`` exists already (a recorder's ``create_game``). A
    ``ValueError``, as the recorders' contract has always said."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"game {game_id!r} exists")
        self.game_id = game_id


class SerialConflict(Exception):
    """The log has moved on: the expected serial is not the current serial + 1."""

    def __init__(self, current_serial: int) -> None:
        self.current_serial = current_serial
        super().__init__(f"the current serial is {current_serial}")


class StaleHead(SerialConflict):
    """The expected serial is current + 1, but the log's head at the current serial is not the
    head the caller built its state to: the caller's state has a history the log no longer has
    (a failover lost moves and others were appended at their serials). The caller must rebuild
    from the log. A subclass of :class:`SerialConflict`, so that code that does not know it
    answers a conflict rather than accepting a move judged on the wrong position."""


class SeatTaken(Exception):
    """The side to move at ``current_serial`` (the log's current serial) is played by the
    engine: a client may not move for it."""

    def __init__(self, current_serial: int, seat: int) -> None:
        self.current_serial = current_serial
        self.seat = seat
        super().__init__(f"player {seat} is the engine's seat and is to move at serial "
                         f"{current_serial}")


class IdempotencyKeyReused(Exception):
    """The idempotency key was already used with a different request body."""

    def __init__(self, serial: int) -> None:
        self.serial = serial
        super().__init__(f"idempotency key already used for serial {serial} with another body")


class ImportKeyReused(Exception):
    """An import's Idempotency-Key already made the game ``game_id`` from another record
    (another game, size or moves)."""

    def __init__(self, game_id: str) -> None:
        self.game_id = game_id
        super().__init__(f"this Idempotency-Key already imported game {game_id!r} from "
                         "another record")


class NotReplicated(Exception):
    """The event with ``serial`` is in the log, but fewer replicas than required
    (``required``) confirmed having it in time: only ``acked`` did.

    Nothing is rolled back: the move stays in the log (readers see it, the serial is taken).
    What is missing is the promise that it survives the loss of the server that took it. A
    retry with the same idempotency key and body finds the record, waits for the replicas
    again and returns the event (``Appended(..., replayed=True)``) once they have it, or
    raises ``NotReplicated`` again.
    """

    def __init__(self, serial: int, acked: int, required: int | None = None) -> None:
        self.serial = serial
        self.acked = acked
        self.required = required
        wanted = f" of {required}" if required is not None else ""
        super().__init__(f"move {serial} is stored but only {acked}{wanted} replicas "
                         "confirmed it in time")


class QueueFull(Exception):
    """The analysis queue holds ``queued`` jobs, its maximum: nothing more is enqueued."""

    def __init__(self, queued: int) -> None:
        super().__init__(f"{queued} analyses are waiting")
        self.queued = queued


class NothingToReview(Exception):
    """A review of the game ``game_id``, which has no moves yet (the API answers 409)."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"game {game_id!r} has no moves to review yet")
        self.game_id = game_id


class WebhookLimit(Exception):
    """The game has as many webhooks as allowed (``limit``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a game may have at most {limit} webhooks")
        self.limit = limit


class UrlRefused(ValueError):
    """A URL the service will not call: ``reason`` is ``invalid_url`` or
    ``private_address``; the message says why, for the client."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ConfigurationError(ValueError):
    """The service cannot start with these settings (the message says why and what to set)."""


class SubproblemFailed(RuntimeError):
    """A distributed solve's subproblem (``position``, a search key in hex) failed
    ``failures`` times, with ``error`` (the last one's last traceback line): not a dead
    worker, which is redone, but a job that raises."""

    def __init__(self, position: str, failures: int, error: str) -> None:
        super().__init__(f"the subproblem {position} failed {failures} times: {error}")
        self.position, self.failures, self.error = position, failures, error


class FeedPositionInvalid(ValueError):
    """A feed position (``service.store.feed.FeedPosition``) that cannot be parsed."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"feed position {text!r}: {reason}")


class FeedRewritten(Exception):
    """A partition of the feed no longer has the entry a reader's position names (a failover
    lost entries, and others may have taken their serials): read that partition from its
    start again, and check what was derived from its games."""

    def __init__(self, partition: int, serial: int) -> None:
        self.partition = partition
        self.serial = serial
        super().__init__(f"feed partition {partition} no longer has the entry read at serial "
                         f"{serial}")
