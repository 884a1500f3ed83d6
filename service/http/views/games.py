"""Games: create one, read its state, read its move index; a game's record (export) and a
game made from a record (import, :mod:`service.application.records`).

The move index of a Dots-and-Boxes game maps x -> y -> orientation -> the serial of the move
that drew that line (``state.index()``); here its keys are strings, as JSON object keys are."""

from __future__ import annotations

from flask import Blueprint, Response, request, url_for

from boxfish.engine import RecordError, load_game

from ...application.engine_seats import engine_to_move
from ...application.games import game_view
from ...application.records import (
    MIN_IMPORT_KEY_CHARS,
    export_record,
    import_record,
    read_record,
)
from ...application.webhooks import iso_time
from ...errors import NotFound
from ...store.events import position_tag
from ...store.game_meta import EngineSeat, GameMeta
from ..bodies import read_body
from ..models import CreateGameFields, ImportRecordFields
from ..problems import Problem, check_at_most, invalid, invalid_field
from . import check_id, choose_game, ctx, json_body, query_int, time_ms_limit, write_token_required
from .moves import MAX_IDEMPOTENCY_KEY

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


@bp.get("/v1/games/<game_id:game_id>")
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


@bp.get("/v1/games/<game_id>/record")
def get_record(game_id: str):
    """The game's record (:mod:`boxfish.engine.records`), ``text/plain``, up to ``?at=`` (a
    serial, 0 to the game's; default: all of it); the ETag names the log position
    written."""
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    at = check_at_most(query_int("at", meta.serial), meta.serial, ["query", "at"],
                       f"at must be at most the game's serial {meta.serial}", "out_of_range")
    text, position = export_record(games, meta, at)
    return Response(text, mimetype="text/plain", headers={"ETag": f'"{position}"'})


def _import_key() -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is not None and not MIN_IMPORT_KEY_CHARS <= len(key) <= MAX_IDEMPOTENCY_KEY:
        raise invalid(f"an import's Idempotency-Key must be {MIN_IMPORT_KEY_CHARS} to "
                      f"{MAX_IDEMPOTENCY_KEY} characters (the game's write token derives from "
                      "it: use a random one, a UUID)", reason="invalid_idempotency_key")
    return key


def _record_of_request():
    """The record the request carries, read and checked by replay: a ``text/plain`` body
    (a Boxfish record), or JSON (:class:`ImportRecordFields`)."""
    mimetype = request.mimetype or ""
    if mimetype == "text/plain":
        raw = read_body(request, ctx().settings.max_body_bytes)
        try:
            text = raw.decode(request.mimetype_params.get("charset", "utf-8"))
        except (LookupError, UnicodeDecodeError):
            raise invalid("the record must be UTF-8 text", reason="invalid_encoding") from None
        return read_record(text)
    if not (mimetype == "application/json" or mimetype.endswith("+json")):
        raise Problem(415, "unsupported-media-type", "Unsupported media type",
                      "send the record as 'Content-Type: text/plain' (a Boxfish record) or as "
                      "JSON, {\"record\": ..., \"format\": ...}")
    data = ImportRecordFields.model_validate(json_body())
    game = None
    if data.format == "boxfish":
        given = [k for k in ("game", "width", "height") if getattr(data, k) is not None]
        if given:
            raise RecordError("header", f"a Boxfish record names its game in its headers: "
                              f"leave out {', '.join(given)}")
    elif data.width is not None or data.height is not None:
        if data.width is None or data.height is None:
            raise RecordError("header", "an OpenSpiel game's size is width and height, both")
        game = load_game("dots-and-boxes", width=data.width, height=data.height)
    return read_record(data.record, data.format, game)


@bp.post("/v1/games/import")
def import_game():
    """A new game made from a record (see :func:`service.application.records.import_record`):
    201 with the game's state and write token, as ``POST /v1/games``; a record refused (bad
    header, unknown notation, illegal move, ...) is a 422 ``invalid-record`` naming the move
    and the reason, and creates nothing."""
    services = ctx()
    key = _import_key()
    record = _record_of_request()
    settings = services.settings
    params = record.game.params()
    too_big = [k for k in ("width", "height") if params.get(k, 0) > settings.max_board_size]
    if too_big:
        raise invalid(f"{' and '.join(too_big)} must be at most {settings.max_board_size} on "
                      "this server", reason="limit_exceeded")
    if len(record.moves) > settings.max_moves:
        raise invalid_field(f"at most {settings.max_moves} moves per record on this server",
                            ["record"], f"at most {settings.max_moves} moves", "too_long",
                            "limit_exceeded")
    imported = import_record(services.games, record, key)
    meta = imported.meta
    state = services.games.state_at(meta)
    body = {**_view(meta, record.game, state), "write_token": imported.token}
    headers = {"Location": url_for("games.get_game", game_id=meta.game_id),
               "ETag": _etag(meta)}
    if imported.replayed:
        headers["Idempotent-Replayed"] = "true"
    return body, 201, headers
