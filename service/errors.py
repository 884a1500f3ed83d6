"""Error handlers: every error becomes an RFC 9457 ``application/problem+json`` response.

Domain exceptions (engine and store) are mapped here, in one place; HTTP errors raised by
Flask/Werkzeug (404, 405, 413, 415, ...) keep their status with ``type`` ``about:blank``; any
other exception is logged and answered with a 500 problem that reveals nothing internal.
"""

from __future__ import annotations

import json

import redis
from flask import Flask, Response
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from boxfish.engine import IllegalMove, ReplayError, UnknownGame

from .problems import Problem, invalid
from .recorder import GameNotFound, IdempotencyKeyReused, SerialConflict

PROBLEM_JSON = "application/problem+json"


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
    if isinstance(exc, IdempotencyKeyReused):
        return invalid(f"this Idempotency-Key was already used (for serial {exc.serial}) with "
                       "a different request body", reason="idempotency_key_reused")
    if isinstance(exc, GameNotFound):
        return Problem(404, "not-found", "Not found", f"no game {exc.args[0]!r}")
    if isinstance(exc, UnknownGame):
        return invalid(str(exc), reason="unknown_game")
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return Problem(503, "store-unavailable", "Store unavailable",
                       "the Redis store cannot be reached; retry later",
                       headers={"Retry-After": "2"})
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
