"""Moves of a game: append one (authorised, idempotent), list them, stream them (SSE)."""

from __future__ import annotations

from flask import Blueprint, Response, request, stream_with_context

from ...application.engine_seats import ENGINE_KEY_PREFIX
from ...application.games import fingerprint
from ...store.game_meta import GameMeta
from ..bodies import parse_position_tag
from ..models import MAX_INT, AppendMove
from ..problems import Problem, invalid
from ..sse import event_stream
from . import check_id, ctx, json_body, query_int, write_token_required

bp = Blueprint("moves", __name__)

MAX_IDEMPOTENCY_KEY = 200


@bp.post("/v1/games/<game_id>/moves")
@write_token_required
def append_move(meta: GameMeta):
    services = ctx()
    games = services.games
    body = json_body()
    data = AppendMove.model_validate(body)
    key = request.headers.get("Idempotency-Key")
    if key is not None and not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY:
        raise invalid(f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters",
                      reason="invalid_idempotency_key")
    if meta.engine is not None and key is not None and key.startswith(ENGINE_KEY_PREFIX):
        raise invalid(f"Idempotency-Key values starting with {ENGINE_KEY_PREFIX!r} are the "
                      "engine's in a game with an engine seat", reason="invalid_idempotency_key")
    try:
        # The engine's seat is the engine's: a client's move for it is refused (SeatTaken).
        appended = games.append(meta, data.move, data.serial, key,
                                fingerprint(data.model_dump(mode="json")) if key else "",
                                refuse_seat=meta.engine.seat if meta.engine else None)
    except Exception as exc:
        services.metrics.appends.labels(type(exc).__name__).inc()
        raise
    services.metrics.appends.labels("replayed" if appended.replayed else "appended").inc()
    headers = {"Location": f"/v1/games/{meta.game_id}/moves?after={appended.event.serial - 1}"}
    if appended.replayed:
        headers["Idempotent-Replayed"] = "true"
    return appended.event.response(), 201, headers


@bp.get("/v1/games/<game_id>/moves")
def list_moves(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    after = query_int("after", 0)
    return {"id": meta.game_id, "serial": meta.serial,
            "moves": [e.entry() for e in games.moves(meta, after)]}


@bp.get("/v1/games/<game_id>/events")
def stream_events(game_id: str):
    services = ctx()
    meta = services.games.meta(check_id(game_id, "game"))
    # ?after= is checked even when Last-Event-ID (which wins) is given.
    after = query_int("after", -1, minimum=0) if "after" in request.args else None
    # An empty Last-Event-ID is none (the SSE standard's client sends none while its last
    # event id is the empty string).
    last_id = request.headers.get("Last-Event-ID") or None
    after_head = None
    if last_id is not None:
        try:
            after, after_head = parse_position_tag(last_id.strip())
        except ValueError:
            shown = last_id if len(last_id) <= 40 else last_id[:40] + "..."
            raise invalid("Last-Event-ID must be an event id of this stream, '<serial>.<head>' "
                          f"(the serial an integer from 0 to {MAX_INT}, the head 16 lowercase "
                          f"hex digits), or a bare serial; got {shown!r}",
                          reason="invalid_last_event_id") from None
    if not services.sse_slots.acquire(blocking=False):
        raise Problem(503, "too-many-streams", "Too many event streams",
                      "this server holds its maximum of open event streams; retry later",
                      headers={"Retry-After": "5"})
    response = Response(stream_with_context(event_stream(services, meta, after, after_head)),
                        mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    # WSGI servers always close the response, even when the stream never started.
    response.call_on_close(services.sse_slots.release)
    return response
