"""The Server-Sent Events stream of a game (``GET /v1/games/{id}/events``).

Without a resume point the stream starts with an event ``game`` (the full state, ``id`` = its
serial); then one event ``move`` per appended move, ``id`` = serial. A client resuming with
``Last-Event-ID: N`` (or ``?after=N``) gets the moves after serial N, no ``game`` event. A
comment line ``: keep-alive`` is sent when nothing happened for ``sse_keepalive_s``. The
stream ends after the move that finishes the game (at once if it is finished already).

Each stream waits with a blocking read on the game's log (``Recorder.wait``: ``XREAD BLOCK`` on
its own pooled connection, in reads shorter than the Redis socket timeout) and holds one server
thread; the app caps concurrent streams. A stream lives until the game ends, the client leaves
(the next write fails) or the server stops; an idle one gets a keep-alive every
``sse_keepalive_s`` (and one at once when a resumed stream has nothing to send yet, so the
client sees the response start). An error inside the stream (the store unreachable, say) is
logged and ends the stream cleanly: the response has started, so no error response can be
sent; the client reconnects with ``Last-Event-ID``.
"""

from __future__ import annotations

import json
import logging

from .games import game_view

log = logging.getLogger(__name__)


def sse(event: str, data: dict, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


KEEPALIVE = ": keep-alive\n\n"


def event_stream(services, meta, after: int | None):
    """The stream's text chunks; never raises (an error ends the stream, see above)."""
    try:
        yield from _events(services, meta, after)
    except Exception:  # noqa: BLE001 - the response has started: end it, never a 500 page
        log.warning("event stream of game %s ended by an error", meta.game_id, exc_info=True)


def _events(services, meta, after: int | None):
    games, recorder = services.games, services.recorder
    keepalive = services.settings.sse_keepalive_s
    if after is None:
        state = games.state_at(meta)
        view = game_view(meta.game_id, games.game_of(meta), state)
        engine = services.engine_seats.view(meta, state)
        if engine is not None:
            view["engine"] = engine
        yield sse("game", view, state.serial)
        last = state.serial
        if state.is_terminal():
            return
    else:
        last = after
        if meta.status == "finished" and last >= meta.serial:
            return
    started = after is None
    while True:
        # Until something is sent, only look (no wait): an idle resumed stream starts at once.
        events = recorder.wait(meta.game_id, last, keepalive if started else 0)
        if not events:
            meta = recorder.get_meta(meta.game_id)
            if meta.status == "finished" and last >= meta.serial:
                return
            started = True
            yield KEEPALIVE
            continue
        started = True
        for event in events:
            yield sse("move", event.response(), event.serial)
            last = event.serial
            if event.finished:
                return
