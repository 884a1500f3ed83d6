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
    assert kind == "game" and event_id == "1" and data["serial"] == 1
    assert data["lines"] == "1000"
    for m in ([1, 2, 1], [1, 1, 2], [2, 1, 2]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    rest = []
    for chunk in chunks:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        rest.append(text)
    stream.close()
    moves = [b for b in "".join(rest).split("\n\n") if "event: move" in b]
    assert [b.split("\n")[0] for b in moves] == ["id: 2", "id: 3", "id: 4"]
    last = json.loads(moves[-1].split("data: ", 1)[1])
    assert last["status"] == "finished" and last["completed"] == 1


def test_keepalive_and_resume(app, client, new_game):
    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1], [1, 3, 1]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    stream = app.test_client().get(f"/v1/games/{gid}/events",
                                   headers={"Last-Event-ID": "1"}, buffered=False)
    events, _ = read_events(stream, 3)
    assert [(e[0], e[1]) for e in events[:2]] == [("move", "2"), ("move", "3")]
    assert events[2] == ("<comment>", None, ": keep-alive")
    stream.close()
    query = app.test_client().get(f"/v1/games/{gid}/events?after=2", buffered=False)
    events, _ = read_events(query, 1)
    assert events[0][:2] == ("move", "3")
    query.close()


def test_stream_of_a_finished_game_ends(app, client, new_game):
    gid, auth, _ = new_game(width=1, height=1)
    for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    fresh = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    events, _ = read_events(fresh, 5)
    assert [e[0] for e in events] == ["game", "<end>"]
    assert events[0][2]["status"] == "finished"
    resumed = app.test_client().get(f"/v1/games/{gid}/events",
                                    headers={"Last-Event-ID": "2"}, buffered=False)
    events, _ = read_events(resumed, 5)
    assert [(e[0], e[1]) for e in events] == [("move", "3"), ("move", "4"), ("<end>", None)]
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
    from boxfish.service.app import create_app
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
