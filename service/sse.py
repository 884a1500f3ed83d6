"""The Server-Sent Events stream of a game (``GET /v1/games/{id}/events``).

Without a resume point the stream starts with an event ``game`` (the full state, ``id`` = its
serial); then one event ``move`` per appended move, ``id`` = serial. A client resuming with
``Last-Event-ID: N`` (or ``?after=N``) gets the moves after serial N, no ``game`` event. A
comment line ``: keep-alive`` is sent when nothing happened for ``sse_keepalive_s``. The
stream ends after the move that finishes the game (at once if it is finished already).

Each stream waits with a blocking read on the game's log (``Recorder.wait``: ``XREAD BLOCK`` on
its own pooled connection) and holds one server thread; the app caps concurrent streams.
"""

from __future__ import annotations

import json

from .games import game_view


def sse(event: str, data: dict, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def event_stream(services, meta, after: int | None):
    games, recorder = services.games, services.recorder
    keepalive = services.settings.sse_keepalive_s
    if after is None:
        state = games.state_at(meta)
        yield sse("game", game_view(meta.game_id, games.game_of(meta), state), state.serial)
        last = state.serial
        if state.is_terminal():
            return
    else:
        last = after
        if meta.status == "finished" and last >= meta.serial:
            return
    while True:
        events = recorder.wait(meta.game_id, last, keepalive)
        if not events:
            meta = recorder.get_meta(meta.game_id)
            if meta.status == "finished" and last >= meta.serial:
                return
            yield ": keep-alive\n\n"
            continue
        for event in events:
            yield sse("move", event.response(), event.serial)
            last = event.serial
            if event.finished:
                return
