"""How the API answers each error: the one table from the domain errors of
:mod:`service.errors` to their RFC 9457 problems, and the Flask error handlers.

:data:`PROBLEMS` maps each error to its problem (status, type, title, members), in one place;
:func:`to_problem` looks an exception up there. Flask and Werkzeug's own HTTP errors (404, 405,
413, 415, ...) keep their status with ``type`` ``about:blank``; any other exception is logged
and answered with a 500 problem that reveals nothing internal
(:func:`register_error_handlers`).

Redis that cannot serve now (:func:`service.store.connections.store_unavailable`) is a 503
``store-unavailable`` with ``Retry-After``, never a 500. An append stored but not confirmed by
the replicas ``BOXFISH_MIN_REPLICAS_ACK`` asks for is a 503 ``not-replicated`` (``reason``
``not_replicated``) with ``Retry-After``: the move is in the log; a retry with the same
Idempotency-Key answers 201 once it is replicated.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from boxfish.engine import IllegalMove, RecordError, ReplayError, UnknownGame

from ..errors import (
    Forbidden,
    IdempotencyKeyReused,
    ImportKeyReused,
    NotFound,
    NothingToReview,
    NotReplicated,
    QueueFull,
    SeatTaken,
    SerialConflict,
    Unauthorized,
    WebhookLimit,
)
from ..store.connections import store_unavailable
from .problems import PROBLEM_JSON, Problem, field_error, invalid

log = logging.getLogger(__name__)

#: Seconds a client is asked to wait after a 503 of the store, after ``not_replicated`` and
#: after a full analysis queue.
STORE_RETRY_AFTER_S = 2
NOT_REPLICATED_RETRY_AFTER_S = 1
QUEUE_FULL_RETRY_AFTER_S = 5


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


def _invalid_record(exc: RecordError) -> Problem:
    """A record refused (bad header, unknown notation, illegal move, ...): ``reason`` and
    ``move_number`` (null when the problem is at no move), with ``line`` and the engine's
    ``move_reason`` when known."""
    extra = {k: v for k, v in (("line", exc.line), ("move_reason", exc.move_reason))
             if v is not None}
    return Problem(422, "invalid-record", "Invalid record", str(exc), reason=exc.reason,
                   move_number=exc.move, **extra)


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
#: (a subclass before its base). Errors not here (and not a store that cannot serve) are 500s.
PROBLEMS: tuple[tuple[type[BaseException], Callable[[Any], Problem]], ...] = (
    (Problem, lambda exc: exc),
    (ValidationError, validation_problem),
    (IllegalMove, _illegal_move),
    (RecordError, _invalid_record),
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
    (ImportKeyReused, lambda exc: invalid(
        f"{exc}; use a new key for another record", reason="idempotency_key_reused")),
    (NotFound, lambda exc: Problem(404, "not-found", "Not found", exc.detail)),
    (NothingToReview, lambda exc: Problem(
        409, "nothing-to-review", "Nothing to review",
        f"game {exc.game_id!r} has no moves yet; review it once moves are played",
        reason="no_moves")),
    (Unauthorized, lambda exc: Problem(401, "unauthorized", "Missing write token",
                                       exc.detail, headers=dict(_UNAUTHORIZED_HEADERS))),
    (Forbidden, lambda exc: Problem(403, "forbidden", exc.title, exc.detail)),
    (UnknownGame, lambda exc: invalid(str(exc), reason="unknown_game")),
    (WebhookLimit, lambda exc: invalid(f"{exc}; delete one first", reason="limit_exceeded")),
    (QueueFull, lambda exc: Problem(
        503, "queue-full", "Analysis queue full", f"{exc.queued} analyses are waiting; retry "
        "later", headers={"Retry-After": str(QUEUE_FULL_RETRY_AFTER_S)},
        queue_length=exc.queued)),
    (NotReplicated, _not_replicated),
)

#: At most one warning about an unavailable store per this many seconds (per process).
_LOG_EVERY_S = 10.0
_last_logged = 0.0


def _log_unavailable(exc: BaseException) -> None:
    global _last_logged
    now = time.monotonic()
    if now - _last_logged >= _LOG_EVERY_S:
        _last_logged = now
        log.warning("Redis unavailable, answering 503: %s: %s", type(exc).__name__, exc)


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
    resp = Response(json.dumps(problem.to_dict()), status=problem.status,
                    mimetype=PROBLEM_JSON)
    for k, v in problem.headers.items():
        resp.headers[k] = v
    return resp


def register_error_handlers(app: Flask) -> None:
    """Answer every exception a view raises with its problem (:func:`to_problem`); Werkzeug's
    HTTP errors with ``about:blank`` and their status; anything else with a logged 500."""

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
