"""Flask blueprints, one per resource, and the small helpers they share.

Views are thin: parse and validate the request, call a service, shape the response.
"""

from __future__ import annotations

import functools
import hmac
import json
import re

from flask import current_app, request
from werkzeug.routing import BaseConverter

from boxfish.engine import IllegalMove, game_names, load_game

from ...application.games import token_matches
from ...application.webhook_urls import UrlRefused, check_url
from ...errors import Forbidden, NotFound, Unauthorized
from ..bodies import parse_int, parse_json, read_body
from ..models import MAX_INT, GameChoice, param_names, with_params
from ..problems import Problem, check_at_most, field_error, invalid, invalid_field

OPERATORS_ONLY = "Operators only"

ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class GameIdConverter(BaseConverter):
    """``<game_id:...>``: a path segment that is not ``import``, so that ``/v1/games/import``
    (POST only) is not also ``GET /v1/games/<id>`` (its ``Allow`` names POST alone). No game
    id is ``import``: random ids have 12 characters, imported ones 16."""

    regex = r"(?!import(?:/|$))[^/]+"


def ctx():
    """The app's :class:`service.http.app.Services`."""
    return current_app.extensions["boxfish"]


def json_body(optional: bool = False) -> dict:
    """The request body as a JSON object (415 / 400 / 422 problems otherwise); with
    ``optional``, an empty body is ``{}``. A body over ``max_body_bytes`` (chunked too) is
    413, one nested deeper than ``max_json_depth`` 400 (see :mod:`service.http.bodies`)."""
    if optional and not request.content_length and not request.mimetype:
        return {}
    mimetype = request.mimetype or ""
    if not (mimetype == "application/json" or mimetype.endswith("+json")):
        raise Problem(415, "unsupported-media-type", "Unsupported media type",
                      "send the body as JSON with 'Content-Type: application/json'")
    settings = ctx().settings
    body = parse_json(read_body(request, settings.max_body_bytes), settings.max_json_depth)
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    return body


def choose_game(body: dict, base):
    """Validate ``body`` with ``base``'s fields plus the chosen game's parameters; return
    ``(model instance, engine game)``. The configured board-size limit is checked too."""
    choice = GameChoice.model_validate(body)
    if choice.game not in game_names():
        raise invalid(f"unknown game {choice.game!r}; known: {', '.join(game_names())}",
                      reason="unknown_game")
    data = with_params(base, choice.game).model_validate(body)
    params = {k: getattr(data, k) for k in param_names(choice.game)}
    limit = ctx().settings.max_board_size
    too_big = [k for k in ("width", "height") if k in params and params[k] > limit]
    if too_big:
        raise invalid(f"{' and '.join(too_big)} must be at most {limit} on this server",
                      errors=[field_error([k], f"at most {limit}", "less_than_equal")
                              for k in too_big], reason="limit_exceeded")
    return data, load_game(choice.game, **params)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None for any other."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def write_token_required(view):
    """Decorate a view of a route with ``<game_id>``: the view runs only for a request that
    carries the game's write token (``Authorization: Bearer <write_token>``), and is given the
    game's static metadata (:meth:`service.application.games.GameService.static_meta`) as its first
    argument in place of ``game_id``. Raises :class:`~service.errors.NotFound` (404) for an
    unknown game, :class:`~service.errors.Unauthorized` (401) without a Bearer token,
    :class:`~service.errors.Forbidden` (403) with another game's, in that order."""

    @functools.wraps(view)
    def checked(game_id: str, **kwargs):
        meta = ctx().games.static_meta(check_id(game_id, "game"))
        authorization = request.headers.get("Authorization")
        if not authorization:
            raise Unauthorized("send the game's write_token as 'Authorization: Bearer <token>'")
        token = bearer_token(authorization)
        if token is None:
            raise Unauthorized("the Authorization header must be 'Bearer <write_token>'")
        if not token_matches(meta, token):
            raise Forbidden()
        return view(meta, **kwargs)

    return checked


def operator_token_required(view):
    """Decorate an operators' view: it runs only for a request that carries the operator token
    (``Authorization: Bearer <token>``, :attr:`Settings.operator_token`). Raises
    :class:`~service.errors.Unauthorized` (401) without a Bearer token, then
    :class:`~service.errors.Forbidden` (403) when no token is configured or another is sent."""

    @functools.wraps(view)
    def checked(**kwargs):
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            raise Unauthorized("send the operator token as 'Authorization: Bearer <token>'")
        configured = ctx().settings.operator_token
        if configured is None:
            raise Forbidden("operator endpoints are off on this server (no "
                            "BOXFISH_OPERATOR_TOKEN)", OPERATORS_ONLY)
        if not hmac.compare_digest(token.encode(), configured.encode()):
            raise Forbidden("not the operator token", OPERATORS_ONLY)
        return view(**kwargs)

    return checked


def check_id(value: str, what: str) -> str:
    if not ID_RE.match(value):
        raise NotFound(f"no {what} {value!r}")
    return value


def query_int(name: str, default: int, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """The integer query parameter ``name`` (ASCII digits, from ``minimum`` to ``maximum``,
    by default :data:`~service.http.models.MAX_INT`), ``default`` without one; a 422 problem
    otherwise."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return parse_int(raw, minimum, maximum)
    except ValueError as exc:
        reason = str(exc)
    if reason == "not an integer":
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise invalid_field(f"query parameter {name!r} must be an integer, got {shown!r}",
                            ["query", name], "not an integer", "int_parsing")
    kind = "greater_than_equal" if reason.startswith(">") else "less_than_equal"
    raise invalid_field(f"query parameter {name!r} must be {reason}", ["query", name], reason,
                        kind)


def checked_url(url: str, loc: list) -> str:
    """``url`` if webhooks and callbacks may be sent there (see
    :func:`service.application.webhook_urls.check_url`); a 422 problem with ``reason``
    ``invalid_url`` or ``private_address`` otherwise."""
    try:
        return check_url(url, ctx().settings.webhook_allow_private)
    except UrlRefused as exc:
        raise invalid_field(str(exc), loc, str(exc), exc.reason, exc.reason) from None


def time_ms_limit(time_ms: int | None, loc: list) -> int:
    """The search time asked for at ``loc`` (``["time_ms"]``, ``["engine", "time_ms"]``):
    ``time_ms``, or without one the server's default (at most its maximum); a 422
    ``limit_exceeded`` when it is above the server's maximum, ``max_time_ms``."""
    settings = ctx().settings
    if time_ms is None:
        return min(settings.default_time_ms, settings.max_time_ms)
    name = ".".join(loc)
    return check_at_most(time_ms, settings.max_time_ms, loc,
                         f"{name} must be at most {settings.max_time_ms} on this server")


def wait_param() -> float:
    """The ``?wait=`` query parameter, in seconds (0 without one): from 0 to the server's
    ``max_wait_s``, a 422 problem otherwise."""
    raw = request.args.get("wait")
    if raw is None:
        return 0.0
    cap = ctx().settings.max_wait_s
    try:
        value = float(raw)
        if not 0 <= value <= cap:
            raise ValueError
    except ValueError:
        raise invalid_field(f"wait must be a number of seconds from 0 to {cap:g}, got {raw!r}",
                            ["query", "wait"], f"0 to {cap:g}", "less_than_equal") from None
    return value


def query_board_size(name: str) -> int:
    """The board size query parameter ``name`` (1 to the server's ``max_board_size``); a 422
    problem otherwise."""
    raw = request.args.get(name)
    cap = ctx().settings.max_board_size
    try:
        value = int(raw or "")
        if value < 1:
            raise ValueError
    except ValueError:
        raise invalid_field(f"{name} must be a whole number from 1 to {cap}, got {raw!r}",
                            ["query", name], f"1 to {cap}", "int_parsing") from None
    if value > cap:
        raise invalid_field(f"{name} must be at most {cap} on this server", ["query", name],
                            f"at most {cap}", "less_than_equal", "limit_exceeded")
    return value


def query_moves() -> list:
    """The query parameter ``moves``, a JSON list of moves (``[]`` without one); a 422 problem
    when it is not a JSON list."""
    raw = request.args.get("moves")
    if raw is None:
        return []
    try:
        moves = json.loads(raw)
        if not isinstance(moves, list):
            raise ValueError
    except ValueError:
        raise invalid_field("moves must be a JSON list of moves, like [[1,1,1],[2,1,2]]",
                            ["query", "moves"], "a JSON list", "json_invalid") from None
    return moves


def replayed(game, moves: list, loc: list):
    """The state after ``moves`` (raw JSON, at ``loc`` in the request) from the start; a 422
    when there are more than the server's ``max_moves`` or one is malformed or illegal (with
    the engine's reason and the move's index)."""
    limit = ctx().settings.max_moves
    if len(moves) > limit:
        raise invalid_field(f"at most {limit} moves per request on this server", loc,
                            f"at most {limit} items", "too_long", "limit_exceeded")
    state = game.new_state()
    for i, raw in enumerate(moves):
        try:
            state.play(game.parse_move(raw))
        except IllegalMove as exc:
            raise Problem(422, "illegal-move", "Illegal move", f"moves[{i}]: {exc}",
                          reason=exc.reason, index=i, move=raw) from None
    return state
