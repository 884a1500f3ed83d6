"""Games: create one, read its state, read its move index.

The move index of a Dots-and-Boxes game maps x -> y -> orientation -> the serial of the move
that drew that line (``state.index()``); here its keys are strings, as JSON object keys are."""

from __future__ import annotations

from flask import Blueprint, request, url_for

from ...application.engine_seats import engine_to_move
from ...application.games import game_view
from ...application.webhooks import iso_time
from ...errors import NotFound
from ...store.events import position_tag
from ...store.game_meta import EngineSeat, GameMeta
from ..models import CreateGameFields
from ..problems import Problem
from . import check_id, choose_game, ctx, json_body, query_int, time_ms_limit, write_token_required

bp = Blueprint("games", __name__)


def _stringify(obj):
    """JSON objects need string keys: convert the int keys of nested dicts."""
    if isinstance(obj, dict):
        return {str(k): _stringify(v) for k, v in obj.items()}
    return obj


def _engine_seat(fields) -> EngineSeat | None:
    """The engine seat asked for, with its ``time_ms`` (:func:`time_ms_limit`)."""
    if fields is None:
        return None
    return EngineSeat(seat=fields.seat, time_ms=time_ms_limit(fields.time_ms,
                                                              ["engine", "time_ms"]))


def _view(meta, game, state) -> dict:
    """The game's view, with the engine seat's status when it has one."""
    view = game_view(meta.game_id, game, state)
    engine = ctx().engine_seats.view(meta, state)
    if engine is not None:
        view["engine"] = engine
    return view


@bp.post("/v1/games")
def create_game():
    data, game = choose_game(json_body(), CreateGameFields)
    meta, token = ctx().games.create(game, _engine_seat(data.engine))
    state = ctx().games.state_at(meta)
    body = {**_view(meta, game, state), "write_token": token}
    location = url_for("games.get_game", game_id=meta.game_id)
    return body, 201, {"Location": location, "ETag": _etag(meta)}


def _etag(meta: GameMeta) -> str:
    """The ETag of a game's state (and of what is derived from it alone): its log position,
    serial and head (:func:`service.store.events.position_tag`), quoted. ``meta`` is read from the
    store (its serial and head are the log's)."""
    return f'"{position_tag(meta.serial, meta.head)}"'


#: Most games one ``GET /v1/games`` lists, and how many without ``?limit=``.
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20


def _listed(meta: GameMeta) -> dict:
    """A game as ``GET /v1/games`` lists it: what its metadata says, no state replayed."""
    item = {"id": meta.game_id, "game": meta.game, **meta.params, "serial": meta.serial,
            "status": meta.status, "created_at": iso_time(meta.created_at)}
    if meta.engine is not None:
        item["engine"] = meta.engine.to_dict()
    return item


@bp.get("/v1/games")
def list_games():
    """The most recently created games, newest first (``?limit=``, 1 to 100, default 20;
    a 422 problem otherwise)."""
    limit = query_int("limit", DEFAULT_LIST_LIMIT, minimum=1, maximum=MAX_LIST_LIMIT)
    return {"games": [_listed(meta) for meta in ctx().recorder.recent_games(limit)]}


@bp.get("/v1/games/<game_id>")
def get_game(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    # 304 only for the ETag of this log position: an old-style ETag (the bare serial) names no
    # head, so it is current only at serial 0; otherwise
    # it gets the state and the new ETag (once). A state of a history the log lost in a
    # failover has another head: 200.
    etag = _etag(meta)
    if request.if_none_match.contains(etag.strip('"')):
        return "", 304, {"ETag": etag}
    state = games.state_at(meta)
    return _view(meta, games.game_of(meta), state), 200, {"ETag": etag}


@bp.post("/v1/games/<game_id>/engine/retry")
@write_token_required
def retry_engine(meta: GameMeta):
    """Enqueue the engine's move again when it is to move and its job failed (or was lost);
    otherwise change nothing. Answers the game's view."""
    services = ctx()
    games = services.games
    meta = games.meta(meta.game_id)
    if meta.engine is None:
        raise NotFound(f"game {meta.game_id!r} has no engine seat")
    state = games.state_at(meta)
    if engine_to_move(meta, state):
        services.engine_seats.ensure_job(meta, state.serial + 1)
    return _view(meta, games.game_of(meta), state), 200, {"ETag": _etag(meta)}


@bp.get("/v1/games/<game_id>/index")
def get_index(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    state = games.state_at(meta)
    if not hasattr(state, "index"):
        raise Problem(404, "no-index", "No index",
                      f"{meta.game} games have no move index")
    return _stringify(state.index()), 200, {"ETag": _etag(meta)}
