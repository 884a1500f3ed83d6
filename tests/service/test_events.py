"""Server-Sent Events through the Flask test client: first event, resume, keep-alive, end."""

from __future__ import annotations

import json


def read_events(resp, stop_after: int):
    """Parse SSE messages from a streamed test response until ``stop_after`` events."""
    events, buf = [], ""
    chunks = iter(resp.response)
    while len(events) < stop_after:
        try:
            chunk = next(chunks)
        except StopIteration:
            events.append(("<end>", None, None))
            break
        buf += chunk.decode() if isinstance(chunk, bytes) else chunk
        while "\n\n" in buf:
            block, buf = buf.split("\n\n", 1)
            fields = {}
            for line in block.split("\n"):
                if line.startswith(":"):
                    fields.setdefault("comment", line)
                    continue
                key, _, value = line.partition(": ")
                fields[key] = value
            if "event" in fields:
                events.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
            else:
                events.append(("<comment>", None, fields.get("comment")))
    return events, chunks


def serial_of(event_id: str) -> int:
    """The serial of an event id ``<serial>.<head>`` (or of a bare serial)."""
    return int(event_id.partition(".")[0])


def tag(client, gid: str) -> str:
    """The game's log position now: its ETag, unquoted (the id of its newest event)."""
    return client.get(f"/v1/games/{gid}").headers["ETag"].strip('"')


def only(events, kind):
    return [e for e in events if e[0] != "<comment>"] if kind is None else [
        e for e in events if e[0] == kind]


def test_stream_first_event_moves_and_end(app, client, new_game):
    gid, auth, _ = new_game(width=1, height=1)
    client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    stream = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
    events, chunks = read_events(stream, 1)
    kind, event_id, data = events[0]
    assert kind == "game" and event_id == tag(client, gid) and data["serial"] == 1
    assert serial_of(event_id) == 1 and len(event_id) == len("1.") + 16
    assert data["lines"] == "1000"
    for m in ([1, 2, 1], [1, 1, 2], [2, 1, 2]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    rest = []
    for chunk in chunks:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        rest.append(text)
    stream.close()
    moves = [b for b in "".join(rest).split("\n\n") if "event: move" in b]
    ids = [b.split("\n")[0].removeprefix("id: ") for b in moves]
    assert [serial_of(i) for i in ids] == [2, 3, 4] and ids[-1] == tag(client, gid)
    assert len(set(i.partition(".")[2] for i in ids)) == 3  # a head of its own each
    last = json.loads(moves[-1].split("data: ", 1)[1])
    assert last["status"] == "finished" and last["completed"] == 1


def test_keepalive_and_resume(app, client, new_game):
    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1], [1, 3, 1]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    stream = app.test_client().get(f"/v1/games/{gid}/events",
                                   headers={"Last-Event-ID": "1"}, buffered=False)
    events, _ = read_events(stream, 3)
    assert [(e[0], serial_of(e[1])) for e in events[:2]] == [("move", 2), ("move", 3)]
    assert events[1][1] == tag(client, gid)
    assert events[2] == ("<comment>", None, ": keep-alive")
    stream.close()
    query = app.test_client().get(f"/v1/games/{gid}/events?after=2", buffered=False)
    events, _ = read_events(query, 1)
    assert events[0][:2] == ("move", tag(client, gid))
    query.close()


def test_stream_of_a_finished_game_ends(app, client, new_game):
    gid, auth, _ = new_game(width=1, height=1)
    for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    fresh = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    events, _ = read_events(fresh, 5)
    assert [e[0] for e in events] == ["game", "<end>"]
    assert events[0][2]["status"] == "finished"
    # No side is to move in a finished game: the game event says so as the last move did.
    assert events[0][2]["to_move"] is None
    resumed = app.test_client().get(f"/v1/games/{gid}/events",
                                    headers={"Last-Event-ID": "2"}, buffered=False)
    events, _ = read_events(resumed, 5)
    assert [(e[0], e[1] and serial_of(e[1])) for e in events] == [
        ("move", 3), ("move", 4), ("<end>", None)]
    assert events[1][1] == tag(client, gid)
    done = app.test_client().get(f"/v1/games/{gid}/events",
                                 headers={"Last-Event-ID": "4"}, buffered=False)
    assert read_events(done, 5)[0] == [("<end>", None, None)]


def test_stream_errors(client, new_game):
    gid, _, _ = new_game()
    assert client.get("/v1/games/nope/events").status_code == 404
    bad = client.get(f"/v1/games/{gid}/events", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 422 and bad.json["reason"] == "invalid_last_event_id"
    assert client.get(f"/v1/games/{gid}/events?after=-3").status_code == 422


def test_stream_limit(settings, redis_client, spec, new_game):
    from boxfish.service.http.app import create_app
    app = create_app(settings.model_copy(update={"sse_max_streams": 1}),
                     connection=redis_client)
    gid, _, _ = new_game()
    first = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    read_events(first, 1)
    second = app.test_client().get(f"/v1/games/{gid}/events")
    assert second.status_code == 503 and "Retry-After" in second.headers
    first.close()
    third = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    assert third.status_code == 200
    third.close()


def test_resume_after_a_position_not_on_the_log_starts_afresh(app, client, new_game):
    """A Last-Event-ID whose head is not the log's at its serial, or whose serial is beyond
    the log's end (a store failover lost moves the client saw), gets a ``game`` event with the
    log's state, then the moves; one on the log gets the moves after it."""
    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1], [1, 3, 1]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    current = client.get(f"/v1/games/{gid}")
    now = current.headers["ETag"].strip('"')
    fresh = app.test_client().get(f"/v1/games/{gid}/events?after=0", buffered=False)
    ids = [e[1] for e in read_events(fresh, 3)[0]]
    fresh.close()
    assert ids[-1] == now
    on_log = app.test_client().get(f"/v1/games/{gid}/events",
                                   headers={"Last-Event-ID": ids[0]}, buffered=False)
    events = read_events(on_log, 3)[0]
    on_log.close()
    assert [e[1] for e in events] == [*ids[1:], None] and events[2][0] == "<comment>"
    for stale in (f"2.{'0' * 16}", f"3.{'f' * 16}", f"4.{ids[0].partition('.')[2]}", "9"):
        resumed = app.test_client().get(f"/v1/games/{gid}/events",
                                        headers={"Last-Event-ID": stale}, buffered=False)
        events = read_events(resumed, 2)[0]
        resumed.close()
        assert events[0] == ("game", now, current.json), stale
        assert events[1] == ("<comment>", None, ": keep-alive"), stale


def test_last_event_id_forms(client, new_game):
    gid, _, _ = new_game()
    for bad in ("1.", "1.abc", f"1.{'A' * 16}", f"1.{'0' * 17}", "1.2.3", ".0123456789abcdef",
                f"-1.{'0' * 16}"):
        resp = client.get(f"/v1/games/{gid}/events", headers={"Last-Event-ID": bad})
        assert resp.status_code == 422 and resp.json["reason"] == "invalid_last_event_id", bad
