"""``GET /v1/feed``: the feed of every game for operators, held against the games' own logs
(what ``GET /v1/games/{id}/moves`` lists), through the app and over a real gunicorn."""

from __future__ import annotations

import http.client
import json
import random
import uuid
from urllib.parse import quote, urlparse

import pytest

from boxfish import engine
from boxfish.service.http.app import create_app
from boxfish.service.runtime.embedded_redis import free_port
from boxfish.service.store.feed import FEED_PARTITIONS

from .conftest import CheckedClient, start_gunicorn, stop_process
from .feed_check import OPERATOR, OPERATOR_TOKEN, FeedView, app_get, read_feed


@pytest.fixture
def op_client(settings, redis_client, spec):
    """The app with an operator token, under a key prefix of its own (a feed of this test's
    games only)."""
    prefix = f"{settings.key_prefix}-{uuid.uuid4().hex[:6]}"
    own = settings.model_copy(update={"operator_token": OPERATOR_TOKEN, "key_prefix": prefix})
    return CheckedClient(create_app(own, connection=redis_client).test_client(), spec)


def _play(client, rng: random.Random, games: dict, n: int) -> None:
    """``n`` random legal moves over the API in random games of ``games`` (id -> (auth,
    engine state)), some sent twice with the same Idempotency-Key (a replay appends
    nothing)."""
    for _ in range(n):
        live = [g for g, (_, state) in games.items() if not state.is_terminal()]
        if not live:
            return
        gid = rng.choice(live)
        auth, state = games[gid]
        move = rng.choice(list(state.legal_moves()))
        key = uuid.uuid4().hex
        for _ in range(rng.choice((1, 1, 2))):
            resp = client.post(f"/v1/games/{gid}/moves", json={"move": list(move)},
                               headers={**auth, "Idempotency-Key": key})
            assert resp.status_code in (200, 201), resp.json
        state.play(move)


def _new_games(client, n: int) -> dict:
    games = {}
    for i in range(n):
        body = ({"game": "extreme-tictactoe"} if i % 3 == 2 else
                {"game": "dots-and-boxes", "width": 2 + i % 2, "height": 2})
        resp = client.post("/v1/games", json=body)
        assert resp.status_code == 201
        params = {k: v for k, v in body.items() if k != "game"}
        state = engine.load_game(body["game"], **params).new_state()
        games[resp.json["id"]] = ({"Authorization": f"Bearer {resp.json['write_token']}"},
                                  state)
    return games


def _logs(client, games) -> dict:
    out = {}
    for gid in games:
        listed = client.get(f"/v1/games/{gid}/moves").json["moves"]
        out[gid] = [(m["serial"], tuple(m["move"])) for m in listed]
    return out


def _moves(view: FeedView) -> dict:
    return {g: [(s, m) for s, m, _ in moves] for g, moves in view.moves.items()}


def test_the_feed_is_for_operators_only(client, op_client):
    off = client.get("/v1/feed", headers=OPERATOR)
    assert off.status_code == 403 and "BOXFISH_OPERATOR_TOKEN" in off.json["detail"]
    none = op_client.get("/v1/feed")
    assert none.status_code == 401 and none.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = op_client.get("/v1/feed", headers={"Authorization": "Bearer not-it"})
    assert (wrong.status_code, wrong.json["title"]) == (403, "Operators only")
    assert op_client.get("/v1/feed", headers=OPERATOR).status_code == 200


def test_a_reader_gets_every_game_and_move_and_resumes_from_its_position(op_client):
    rng = random.Random(35)
    games = _new_games(op_client, 9)
    _play(op_client, rng, games, 40)
    view = read_feed(app_get(op_client), limit=7)
    assert _moves(view) == _logs(op_client, games)
    for gid in games:
        assert view.created[gid]["game"] == op_client.get(f"/v1/games/{gid}").json["game"]
    # Each move's position is the game log's after it (its ETag names the last).
    for gid in games:
        etag = op_client.get(f"/v1/games/{gid}").headers["ETag"].strip('"')
        if view.moves[gid]:
            assert view.moves[gid][-1][2] == etag
    assert not view.rewritten
    # More moves and games; the reader resumes from its saved position and gets only them.
    saved = view.position
    more = _new_games(op_client, 2)
    games.update(more)
    before = _logs(op_client, games)
    _play(op_client, rng, games, 20)
    after = _logs(op_client, games)
    resumed = read_feed(app_get(op_client), FeedView(position=saved), limit=5)
    assert _moves(resumed) == {g: after[g][len(before[g]):] for g in games
                               if len(after[g]) > len(before[g]) or g in more}
    assert set(resumed.created) == set(more)
    # Nothing new: an empty page that gives the position back.
    again = op_client.get(f"/v1/feed?after={quote(resumed.position)}", headers=OPERATOR)
    assert again.get_data() == b"" and again.headers["Feed-Position"] == resumed.position


def test_a_partition_filter_reads_only_those_partitions(op_client):
    games = _new_games(op_client, 8)
    _play(op_client, random.Random(3), games, 16)
    whole = read_feed(app_get(op_client))
    parts = sorted(set(whole.partition_of.values()))[:2]
    resp = op_client.get(f"/v1/feed?partitions={','.join(map(str, parts))}", headers=OPERATOR)
    items = [json.loads(line) for line in resp.get_data(as_text=True).splitlines()]
    assert {i["partition"] for i in items} == set(parts)
    assert len(items) == sum(1 + len(whole.moves[g]) for g, p in whole.partition_of.items()
                             if p in parts)


@pytest.mark.parametrize("query, reason", [
    ("after=3", "invalid_feed_position"),
    ("after=3:1.xyz", "invalid_feed_position"),
    (f"after={FEED_PARTITIONS}:1.0123456789abcdef", "invalid_feed_position"),
    ("after=1:1.0123456789abcdef,1:2.0123456789abcdef", "invalid_feed_position"),
    ("partitions=0,99", "invalid_partitions"),
    ("partitions=a", "invalid_partitions"),
    ("limit=0", "greater_than_equal"),
])
def test_bad_feed_queries_are_refused(op_client, query, reason):
    resp = op_client.get(f"/v1/feed?{query}", headers=OPERATOR)
    assert resp.status_code == 422, resp.get_data(as_text=True)
    assert resp.mimetype == "application/problem+json"
    assert reason in json.dumps(resp.json)


def test_a_live_reader_over_sse_gets_each_move_as_it_is_stored(settings, redis_client,
                                                               tmp_path):
    """Over a real gunicorn: an SSE reader from the current position gets the next game's
    ``created`` and its move, each with its position as the event id."""
    own = settings.model_copy(update={"operator_token": OPERATOR_TOKEN,
                                      "key_prefix": f"{settings.key_prefix}-sse"})
    port = free_port()
    api = start_gunicorn(own, port, tmp_path / "api.log", threads=4)
    base = f"http://127.0.0.1:{port}"
    try:
        app_client = create_app(own, connection=redis_client).test_client()
        start = read_feed(app_get(app_client)).position
        conn = http.client.HTTPConnection(urlparse(base).hostname, port, timeout=20)
        conn.request("GET", f"/v1/feed?after={quote(start)}",
                     headers={**OPERATOR, "Accept": "text/event-stream"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.headers["Content-Type"].startswith(
            "text/event-stream")
        assert resp.readline() == b": keep-alive\n"
        created = app_client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                                     "height": 2}).json
        moved = app_client.post(f"/v1/games/{created['id']}/moves", json={"move": [1, 1, 1]},
                                headers={"Authorization": f"Bearer {created['write_token']}"})
        events = []
        while len(events) < 2:
            block = b""
            while not block.endswith(b"\n\n"):
                block += resp.readline()
            if block.startswith(b":"):
                continue
            fields = dict(line.split(": ", 1) for line in block.decode().strip().split("\n"))
            events.append(fields)
        conn.close()
        assert [e["event"] for e in events] == ["created", "move"]
        data = [json.loads(e["data"]) for e in events]
        assert {d["game_id"] for d in data} == {created["id"]}
        assert data[1]["event"]["move"] == [1, 1, 1]
        assert f"{data[1]['event']['serial']}.{data[1]['event']['head']}" == \
            moved.json["position"]
        assert [e["id"] for e in events] == [d["position"] for d in data]
    finally:
        stop_process(api)
