"""Against a real gunicorn (gthread) over real HTTP: streams do not block other requests,
16 threads racing on one game never fork the log, acknowledged moves survive Redis restarts."""

from __future__ import annotations

import http.client
import json
import random
import threading
from urllib.parse import urlparse

from boxfish import engine
from boxfish.service.runtime.embedded_redis import EmbeddedRedis, free_port

from .conftest import start_gunicorn, stop_process
from .feed_check import OPERATOR_TOKEN, http_get, read_feed


class Http:
    """One keep-alive HTTP/1.1 connection with JSON helpers."""

    def __init__(self, base: str, timeout: float = 20.0, source: str | None = None) -> None:
        """``source``: the local address to connect from (any 127.0.0.0/8 address is this
        machine; a test of per-address limits uses several)."""
        u = urlparse(base)
        self.conn = http.client.HTTPConnection(
            u.hostname, u.port, timeout=timeout,
            source_address=(source, 0) if source is not None else None)

    def request(self, method: str, path: str, body=None, headers=None):
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body)
            hdrs["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=hdrs)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw else None), resp

    def close(self) -> None:
        self.conn.close()


def create(base: str, **body):
    status, game, _ = Http(base).request("POST", "/v1/games", {"game": "dots-and-boxes",
                                                               **body})
    assert status == 201
    return game["id"], {"Authorization": f"Bearer {game['write_token']}"}


def open_stream(base: str, game_id: str):
    u = urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
    conn.request("GET", f"/v1/games/{game_id}/events")
    resp = conn.getresponse()
    assert resp.status == 200
    return conn, resp


def next_event(resp) -> tuple[str, dict]:
    """Read lines until a full event (skipping keep-alive comments)."""
    fields = {}
    while True:
        line = resp.readline().decode().rstrip("\n")
        if line == "":
            if "event" in fields:
                return fields["event"], json.loads(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            fields[key] = value


def test_open_streams_do_not_block_other_requests(server_url):
    gid, auth = create(server_url, width=2, height=2)
    streams = [open_stream(server_url, gid) for _ in range(6)]
    for _, resp in streams:
        assert next_event(resp)[0] == "game"
    client = Http(server_url, timeout=10)
    assert client.request("GET", "/healthz")[0] == 200
    status, body, _ = client.request("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]},
                                     auth)
    assert status == 201
    assert client.request("GET", f"/v1/games/{gid}")[1]["serial"] == 1
    for conn, resp in streams:
        kind, data = next_event(resp)
        assert kind == "move" and data["serial"] == 1 and data["move"] == [1, 1, 1]
        conn.close()


def test_sixteen_threads_racing_on_one_game(server_url):
    gid, auth = create(server_url, width=4, height=4)
    wins: list[tuple[int, list]] = []
    conflicts: list[int] = []
    other: list[tuple[int, dict]] = []
    lock = threading.Lock()
    game = engine.load_game("dots-and-boxes", width=4, height=4)
    start = threading.Barrier(16)

    def racer(seed: int) -> None:
        rng = random.Random(seed)
        client = Http(server_url)
        start.wait()
        try:
            while True:
                _, view, _ = client.request("GET", f"/v1/games/{gid}")
                if view["status"] == "finished":
                    return
                free = [game.geometry.moves[i] for i, c in enumerate(view["lines"])
                        if c == "0"]
                move = list(rng.choice(free))
                status, body, _ = client.request(
                    "POST", f"/v1/games/{gid}/moves",
                    {"move": move, "serial": view["serial"] + 1}, auth)
                with lock:
                    if status == 201:
                        wins.append((body["serial"], move))
                    elif status == 409:
                        conflicts.append(body["current_serial"])
                    else:
                        other.append((status, body))
        finally:
            client.close()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not other, other[:3]
    assert conflicts, "16 racing threads produced no conflict at all"
    assert sorted(s for s, _ in wins) == list(range(1, game.num_lines + 1))
    client = Http(server_url)
    _, listed, _ = client.request("GET", f"/v1/games/{gid}/moves")
    assert [(m["serial"], m["move"]) for m in listed["moves"]] == sorted(wins)
    replayed = engine.replay(game, [(m["serial"], m["move"]) for m in listed["moves"]])
    _, view, _ = client.request("GET", f"/v1/games/{gid}")
    expected = replayed.to_dict()
    for key in ("serial", "lines", "scores", "status", "result"):
        assert view[key] == expected[key], key


def test_acknowledged_moves_survive_redis_restarts(settings, tmp_path):
    port = free_port()
    server = EmbeddedRedis(str(tmp_path / "data"), port=port).start()
    own = settings.model_copy(update={"redis_url": server.url,
                                      "operator_token": OPERATOR_TOKEN})
    api_port = free_port()
    api = start_gunicorn(own, api_port, tmp_path / "api.log", threads=4)
    base = f"http://127.0.0.1:{api_port}"
    try:
        gid, auth = create(base, width=3, height=3)
        game = engine.load_game("dots-and-boxes", width=3, height=3)
        order = list(game.new_state().legal_moves())
        random.Random(7).shuffle(order)
        acked = []
        client = Http(base)

        def play(n: int) -> None:
            for _ in range(n):
                move = list(order[len(acked)])
                status, body, _ = client.request("POST", f"/v1/games/{gid}/moves",
                                                 {"move": move}, auth)
                assert status == 201
                acked.append((body["serial"], move))

        def stored():
            status, body, _ = client.request("GET", f"/v1/games/{gid}/moves")
            assert status == 200
            moves = [(m["serial"], m["move"]) for m in body["moves"]]
            # the feed has the same moves (written in the same step as each)
            fed = read_feed(http_get(base)).moves[gid]
            assert [(s, list(m)) for s, m, _ in fed] == moves
            return moves

        play(8)
        server.stop()  # clean shutdown (SIGTERM)
        status, body, _ = client.request("GET", f"/v1/games/{gid}")
        assert status == 503 and body["type"].endswith("store-unavailable")
        server = EmbeddedRedis(str(tmp_path / "data"), port=port).start()
        assert stored() == acked
        play(8)
        server.kill()  # a crash (SIGKILL): the AOF is fsynced before each reply
        server = EmbeddedRedis(str(tmp_path / "data"), port=port).start()
        assert stored() == acked
        play(1)
        assert stored() == acked and len(acked) == 17
        client.close()
    finally:
        stop_process(api)
        server.stop()
