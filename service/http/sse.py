"""The Server-Sent Events stream of a game (``GET /v1/games/{id}/events``).

Without a resume point the stream starts with an event ``game`` (the full state); then one
event ``move`` per appended move. Every ``id`` is the log position of the event,
``<serial>.<head>`` (:func:`service.store.events.position_tag`: the head names the log's whole
history up to the serial). A client resuming with ``Last-Event-ID: <serial>.<head>`` gets the
moves after that serial if the head is the log's there; if not, or if the serial is beyond
the log's end, the client holds moves the log lost in a failover (one head cannot tell which:
the first serial that may differ is 1), and the stream starts afresh with a ``game`` event. A
bare serial (``Last-Event-ID: N`` or ``?after=N``) is trusted unless beyond the log's end.
An open stream that finds that the log lost what it sent sends a ``game`` event too: when a
move it reads does not chain onto the head it sent last (each log entry keeps the head after
it), or, when idle, when the log is shorter than its last event or has another head at that
serial. A comment line ``: keep-alive`` is sent when nothing happened for ``sse_keepalive_s``. The
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

from ..application.games import game_view
from ..store.events import position_tag
from ..store.recorder import next_head

log = logging.getLogger(__name__)


def sse(event: str, data: dict, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


KEEPALIVE = ": keep-alive\n\n"


def event_stream(services, meta, after: int | None, after_head: str | None = None):
    """The stream's text chunks; never raises (an error ends the stream, see above).
    ``after``: the resume point's serial (None: a fresh stream); ``after_head``: its head
    (None: a bare serial, trusted as it is)."""
    try:
        yield from _events(services, meta, after, after_head)
    except Exception:  # the response has started: end it, never a 500 page
        log.warning("event stream of game %s ended by an error", meta.game_id, exc_info=True)


def _game_event(services, meta):
    """The ``game`` event of the log's current state (``meta`` just read) and that state."""
    games = services.games
    state = games.state_at(meta)
    view = game_view(meta.game_id, games.game_of(meta), state)
    engine = services.engine_seats.view(meta, state)
    if engine is not None:
        view["engine"] = engine
    return sse("game", view, position_tag(meta.serial, meta.head)), state


def _on_log(services, meta, after: int, after_head: str | None) -> tuple[bool, str | None]:
    """Whether the resume point (``after``, ``after_head``) is a position of the log (``meta``
    just read), and the log's head there. A serial beyond the log's end is not (the client
    saw moves the log lost); a bare serial (no head) within it is trusted."""
    if after > meta.serial:
        return False, None
    head = services.games.head_at(meta, after)
    return after_head is None or head == after_head, head


def _events(services, meta, after: int | None, after_head: str | None):
    recorder = services.recorder
    keepalive = services.settings.sse_keepalive_s
    # restart: send the log's state (a game event, of ``meta`` just read) before anything
    # else: a fresh stream, a resume point not on the log, or a log found rewritten
    last, head, restart = after, None, after is None
    if after is not None:
        on_log, head = _on_log(services, meta, after, after_head)
        restart = not on_log
    if not restart and meta.status == "finished" and last >= meta.serial:
        return
    started = restart
    while True:
        if restart:
            text, state = _game_event(services, meta)
            yield text
            last, head, restart = state.serial, meta.head, False
            if state.is_terminal():
                return
        # Until something is sent, only look (no wait): an idle resumed stream starts at once.
        events = recorder.wait(meta.game_id, last, keepalive if started else 0)
        if not events:
            meta = recorder.get_meta(meta.game_id)
            if meta.serial < last or (meta.serial == last and meta.head != head):
                restart = True  # the log lost what was sent (a failover)
                continue
            if meta.status == "finished" and last >= meta.serial:
                return
            started = True
            yield KEEPALIVE
            continue
        started = True
        for event in events:
            if event.head != next_head(head, event):
                # The event follows another history than the one sent: the log lost moves
                # the stream sent and others took their serials (a failover).
                meta = recorder.get_meta(meta.game_id)
                restart = True
                break
            head = event.head
            yield sse("move", event.response(), position_tag(event.serial, head))
            last = event.serial
            if event.finished:
                return
