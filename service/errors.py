"""Error handlers: every error becomes an RFC 9457 ``application/problem+json`` response.

Domain exceptions (engine and store) are mapped here, in one place; HTTP errors raised by
Flask/Werkzeug (404, 405, 413, 415, ...) keep their status with ``type`` ``about:blank``; any
other exception is logged and answered with a 500 problem that reveals nothing internal.

Redis that cannot serve now (down, restarting, loading its data, a Redis Cluster in failover
or without a master for a slot, a replica that was a master a moment ago, out of memory) is a
503 ``store-unavailable`` with ``Retry-After``, never a 500: :func:`store_unavailable` knows
every error redis-py raises for it. An append stored but not confirmed by the replicas
``BOXFISH_MIN_REPLICAS_ACK`` asks for is a 503 ``not-replicated`` (``reason``
``not_replicated``) with ``Retry-After``: the move is in the log; a retry with the same
Idempotency-Key answers 201 once it is replicated.
"""

from __future__ import annotations

import json
import logging
import time

import redis
from flask import Flask, Response
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from boxfish.engine import IllegalMove, ReplayError, UnknownGame

from .games import SeatTaken
from .problems import Problem, invalid
from .recorder import GameNotFound, IdempotencyKeyReused, NotReplicated, SerialConflict

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

#: Seconds a client is asked to wait after a 503 of the store, and after ``not_replicated``.
STORE_RETRY_AFTER_S = 2
NOT_REPLICATED_RETRY_AFTER_S = 1

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


def problem_response(problem: Problem) -> Response:
    resp = Response(json.dumps(problem.to_dict()), status=problem.status,
                    mimetype=PROBLEM_JSON)
    for k, v in problem.headers.items():
        resp.headers[k] = v
    return resp


def validation_problem(exc: ValidationError) -> Problem:
    errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
              for e in exc.errors(include_url=False, include_input=False)]
    where = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors)
    return invalid(where, errors)


def to_problem(exc: Exception) -> Problem:
    """The problem for a known exception (None for an unexpected one)."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, ValidationError):
        return validation_problem(exc)
    if isinstance(exc, IllegalMove):
        move = exc.move if isinstance(exc.move, (list, int, str, type(None))) else (
            list(exc.move) if isinstance(exc.move, tuple) else repr(exc.move))
        return Problem(422, "illegal-move", "Illegal move", str(exc), reason=exc.reason,
                       move=move)
    if isinstance(exc, ReplayError):
        return Problem(422, "illegal-move", "Illegal move",
                       f"move {exc.serial}: {exc.detail}", reason=exc.reason,
                       serial=exc.serial)
    if isinstance(exc, SerialConflict):
        return Problem(409, "serial-conflict", "Serial conflict",
                       f"the game is at serial {exc.current_serial}; the next move must carry "
                       f"serial {exc.current_serial + 1}", current_serial=exc.current_serial)
    if isinstance(exc, SeatTaken):
        return Problem(409, "engine-seat", "The engine's turn",
                       f"player {exc.seat} is played by the engine, and it is to move at "
                       f"serial {exc.current_serial}: its move will arrive in the game's log",
                       reason="engine_seat", current_serial=exc.current_serial)
    if isinstance(exc, IdempotencyKeyReused):
        return invalid(f"this Idempotency-Key was already used (for serial {exc.serial}) with "
                       "a different request body", reason="idempotency_key_reused")
    if isinstance(exc, GameNotFound):
        return Problem(404, "not-found", "Not found", f"no game {exc.args[0]!r}")
    if isinstance(exc, UnknownGame):
        return invalid(str(exc), reason="unknown_game")
    if isinstance(exc, NotReplicated):
        serial, acked, required = exc.serial, exc.acked, exc.required
        wanted = f" of the {required} required" if required is not None else ""
        return Problem(503, "not-replicated", "Not replicated",
                       f"move {serial} is in the game's log, but only {acked}{wanted} replicas "
                       "confirmed it in time; retry with the same Idempotency-Key and body, "
                       "which answers 201 once it is replicated",
                       headers={"Retry-After": str(NOT_REPLICATED_RETRY_AFTER_S)},
                       reason="not_replicated", serial=serial, replicas_acked=acked)
    if store_unavailable(exc):
        _log_unavailable(exc)
        return Problem(503, "store-unavailable", "Store unavailable",
                       "Redis cannot serve this request now (down, restarting or failing "
                       "over); retry later",
                       headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
                       reason="store_unavailable")
    return None


def register_error_handlers(app: Flask) -> None:
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
