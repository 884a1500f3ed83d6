"""The errors of the service, and the one table that answers each with its RFC 9457 problem.

Every exception the service's own layers raise on purpose is defined (or, for the engine's
and for two that belong to a module's own contract, re-exported) here, so that a reader finds
them in one place:

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
:class:`NotReplicated`    an append stored, but not confirmed by enough replicas in time
:class:`QueueFull`        the analysis queue holds its maximum
:class:`WebhookLimit`     a game has as many webhooks as allowed
:class:`UrlRefused`       a webhook or callback URL the service will not call
:class:`ConfigurationError`  the service cannot start with its settings (never an answer)
========================  =============================================================

The service layer (games, analyses, the recorders, webhooks) raises these and knows nothing
of HTTP. :data:`PROBLEMS` maps each to its problem (status, type, title, members), in one
place; :func:`to_problem` looks an exception up there. Flask and Werkzeug's own HTTP errors
(404, 405, 413, 415, ...) keep their status with ``type`` ``about:blank``; any other exception
is logged and answered with a 500 problem that reveals nothing internal
(:func:`register_error_handlers`).

Redis that cannot serve now (down, restarting, loading its data, a Redis Cluster in failover
or without a master for a slot, a replica that was a master a moment ago, out of memory) is a
503 ``store-unavailable`` with ``Retry-After``, never a 500: :func:`store_unavailable` knows
every error redis-py raises for it. An append stored but not confirmed by the replicas
``BOXFISH_MIN_REPLICAS_ACK`` asks for is a 503 ``not-replicated`` (``reason``
``not_replicated``) with ``Retry-After``: the move is in the log; a retry with the same
Idempotency-Key answers 201 once it is replicated.

This module imports no Flask (the workers import it, through the service layer, for its
exceptions); :func:`register_error_handlers` loads Flask when it is called.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis
from pydantic import ValidationError

from boxfish.engine import IllegalMove, ReplayError, UnknownGame

from .application.webhook_urls import UrlRefused
from .http.problems import Problem, field_error, invalid
from .store.connections import ConfigurationError

if TYPE_CHECKING:
    from flask import Flask, Response

__all__ = [
    "ConfigurationError", "Forbidden", "GameIdTaken", "GameNotFound", "IdempotencyKeyReused",
    "NotFound", "NotReplicated", "PROBLEMS", "QueueFull", "SeatTaken", "SerialConflict",
    "StaleHead", "Unauthorized", "UrlRefused", "WebhookLimit", "register_error_handlers",
    "store_unavailable", "to_problem",
]

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

#: Seconds a client is asked to wait after a 503 of the store, after ``not_replicated`` and
#: after a full analysis queue.
STORE_RETRY_AFTER_S = 2
NOT_REPLICATED_RETRY_AFTER_S = 1
QUEUE_FULL_RETRY_AFTER_S = 5


# -- the errors -------------------------------------------------------------------------------


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
    """A request carries a write token, but not this game's."""

    def __init__(self, detail: str = "the token does not belong to this game") -> None:
        super().__init__(detail)
        self.detail = detail


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


class WebhookLimit(Exception):
    """The game has as many webhooks as allowed (``limit``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a game may have at most {limit} webhooks")
        self.limit = limit


# -- the problem of each ------------------------------------------------------------------


def validation_problem(exc: ValidationError) -> Problem:
    """The 422 of a request body that fails its pydantic model, with pydantic's ``errors``."""
    errors = [field_error(list(e["loc"]), e["msg"], e["type"])
              for e in exc.errors(include_url=False, include_input=False)]
    where = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors)
    return invalid(where, errors)


def _illegal_move(exc: IllegalMove) -> Problem:
    move = exc.move if isinstance(exc.move, (list, int, str, type(None))) else (
        list(exc.move) if isinstance(exc.move, tuple) else repr(exc.move))
    return Problem(422, "illegal-move", "Illegal move", str(exc), reason=exc.reason,
                   move=move)


def _not_replicated(exc: NotReplicated) -> Problem:
    wanted = f" of the {exc.required} required" if exc.required is not None else ""
    return Problem(503, "not-replicated", "Not replicated",
                   f"move {exc.serial} is in the game's log, but only {exc.acked}{wanted} "
                   "replicas confirmed it in time; retry with the same Idempotency-Key and "
                   "body, which answers 201 once it is replicated",
                   headers={"Retry-After": str(NOT_REPLICATED_RETRY_AFTER_S)},
                   reason="not_replicated", serial=exc.serial, replicas_acked=exc.acked)


_UNAUTHORIZED_HEADERS = {"WWW-Authenticate": 'Bearer realm="boxfish"'}

#: Each error and how it is answered: the first row whose class the error is an instance of
#: (a subclass before its base). Errors not here (and not :func:`store_unavailable`) are 500s.
PROBLEMS: tuple[tuple[type[BaseException], Callable[[Any], Problem]], ...] = (
    (Problem, lambda exc: exc),
    (ValidationError, validation_problem),
    (IllegalMove, _illegal_move),
    (ReplayError, lambda exc: Problem(
        422, "illegal-move", "Illegal move", f"move {exc.serial}: {exc.detail}",
        reason=exc.reason, serial=exc.serial)),
    (SeatTaken, lambda exc: Problem(
        409, "engine-seat", "The engine's turn",
        f"player {exc.seat} is played by the engine, and it is to move at serial "
        f"{exc.current_serial}: its move will arrive in the game's log",
        reason="engine_seat", current_serial=exc.current_serial)),
    (SerialConflict, lambda exc: Problem(
        409, "serial-conflict", "Serial conflict",
        f"the game is at serial {exc.current_serial}; the next move must carry serial "
        f"{exc.current_serial + 1}", current_serial=exc.current_serial)),
    (IdempotencyKeyReused, lambda exc: invalid(
        f"this Idempotency-Key was already used (for serial {exc.serial}) with a different "
        "request body", reason="idempotency_key_reused")),
    (NotFound, lambda exc: Problem(404, "not-found", "Not found", exc.detail)),
    (Unauthorized, lambda exc: Problem(401, "unauthorized", "Missing write token",
                                       exc.detail, headers=dict(_UNAUTHORIZED_HEADERS))),
    (Forbidden, lambda exc: Problem(403, "forbidden", "Wrong write token", exc.detail)),
    (UnknownGame, lambda exc: invalid(str(exc), reason="unknown_game")),
    (WebhookLimit, lambda exc: invalid(f"{exc}; delete one first", reason="limit_exceeded")),
    (QueueFull, lambda exc: Problem(
        503, "queue-full", "Analysis queue full", f"{exc.queued} analyses are waiting; retry "
        "later", headers={"Retry-After": str(QUEUE_FULL_RETRY_AFTER_S)},
        queue_length=exc.queued)),
    (NotReplicated, _not_replicated),
)


# -- a store that cannot serve now ------------------------------------------------------------

#: redis-py's errors for a Redis (or a Redis Cluster) that cannot serve now. ConnectionError
#: covers a refused or broken connection, ``LOADING`` (BusyLoadingError), a full client pool
#: and a refused login; ClusterError covers ``CLUSTERDOWN`` and ``MASTERDOWN`` and a command
#: redirected too often (slots moving); RedisClusterException what the cluster client raises
#: when no node answers or a slot has no node (SlotNotCoveredError).
_UNAVAILABLE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.RedisClusterException,
)
#: Cluster-client errors that are a mistake of the code, not an outage.
_CLUSTER_MISUSE = (redis.exceptions.CrossSlotTransactionError,
                   redis.exceptions.InvalidPipelineStack)
#: Error replies (first word) of a server that cannot serve now, for a client that has no
#: class of its own for them (a plain ResponseError): ``NOREPLICAS`` (min-replicas-to-write),
#: ``UNBLOCKED`` (a blocking read ended by a failover), ``BUSY`` (a script running long).
_UNAVAILABLE_REPLIES = frozenset({"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
                                  "READONLY", "NOREPLICAS", "UNBLOCKED", "BUSY", "OOM"})

#: At most one warning about an unavailable store per this many seconds (per process).
_LOG_EVERY_S = 10.0
_last_logged = 0.0


def store_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says that Redis cannot serve now (a 503, not a bug)."""
    if isinstance(exc, _CLUSTER_MISUSE):
        return False
    if isinstance(exc, _UNAVAILABLE):
        return True
    if isinstance(exc, redis.exceptions.ResponseError):
        words = str(exc).split(None, 1)
        return bool(words) and words[0] in _UNAVAILABLE_REPLIES
    return False


def _log_unavailable(exc: BaseException) -> None:
    global _last_logged
    now = time.monotonic()
    if now - _last_logged >= _LOG_EVERY_S:
        _last_logged = now
        log.warning("Redis unavailable, answering 503: %s: %s", type(exc).__name__, exc)


# -- answering ------------------------------------------------------------------------------


def to_problem(exc: BaseException) -> Problem | None:
    """The problem that answers ``exc``: its row of :data:`PROBLEMS`, or a 503
    ``store-unavailable`` for a Redis that cannot serve now; None for any other exception
    (an unexpected one: a 500)."""
    for error_type, build in PROBLEMS:
        if isinstance(exc, error_type):
            return build(exc)
    if store_unavailable(exc):
        _log_unavailable(exc)
        return Problem(503, "store-unavailable", "Store unavailable",
                       "Redis cannot serve this request now (down, restarting or failing "
                       "over); retry later",
                       headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
                       reason="store_unavailable")
    return None


def problem_response(problem: Problem) -> Response:
    """``problem`` as an ``application/problem+json`` response with its headers."""
    from flask import Response  # not at the top: see the module docstring

    resp = Response(json.dumps(problem.to_dict()), status=problem.status,
                    mimetype=PROBLEM_JSON)
    for k, v in problem.headers.items():
        resp.headers[k] = v
    return resp


def register_error_handlers(app: Flask) -> None:
    """Answer every exception a view raises with its problem (:func:`to_problem`); Werkzeug's
    HTTP errors with ``about:blank`` and their status; anything else with a logged 500."""
    from werkzeug.exceptions import HTTPException  # not at the top: see the module docstring

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
        return problem_response(Problem(exc.code or 500, "", exc.name, exc.description or "",
                                        headers=headers))

    @app.errorhandler(Exception)
    def any_error(exc: Exception):
        problem = to_problem(exc)
        if problem is None:
            app.logger.exception("unexpected error")
            problem = Problem(500, "internal-error", "Internal server error",
                              "an unexpected error occurred; it has been logged")
        return problem_response(problem)
