"""Rate limits per client and route class, on two real gunicorn processes sharing one Redis:
429 problems with Retry-After and RateLimit-* headers, counters shared through Redis, another
address and a write token each their own bucket; plus the pieces in-process."""

from __future__ import annotations

import secrets

import pytest
import redis
from pydantic import ValidationError
from redis.backoff import NoBackoff
from redis.retry import Retry

from boxfish.service.config import Settings
from boxfish.service.http.app import create_app
from boxfish.service.http.ratelimit import (
    COSTLY_READS,
    EXEMPT_BLUEPRINTS,
    WRITE_CLASSES,
    route_class,
)
from boxfish.service.runtime.embedded_redis import free_port
from boxfish.service.store import rate_limits
from boxfish.service.store.rate_limits import parse_limits

from .conftest import CheckedClient, start_gunicorn, stop_process
from .test_server import Http

LIMITS = {"rate_limit_enabled": True, "rate_limit_reads": "6/minute",
          "rate_limit_games": "3/minute", "rate_limit_appends": "4/minute",
          "rate_limit_analyses": "2/minute", "rate_limit_animations": "2/minute"}


@pytest.fixture(scope="module")
def limited(settings, tmp_path_factory):
    """Two gunicorn processes with small limits on one Redis: their base URLs."""
    own = settings.model_copy(update=LIMITS)
    procs, bases = [], []
    try:
        for name in ("a", "b"):
            port = free_port()
            procs.append(start_gunicorn(own, port, tmp_path_factory.mktemp(f"limited-{name}")
                                        / "api.log", threads=4))
            bases.append(f"http://127.0.0.1:{port}")
        yield bases
    finally:
        for proc in procs:
            stop_process(proc)


@pytest.fixture(scope="module")
def behind_a_proxy(settings, tmp_path_factory):
    """A gunicorn process with the small limits that trusts one proxy in front of it
    (``BOXFISH_TRUSTED_PROXY_HOPS=1``): its base URL."""
    own = settings.model_copy(update={**LIMITS, "trusted_proxy_hops": 1})
    port = free_port()
    proc = start_gunicorn(own, port, tmp_path_factory.mktemp("proxied") / "api.log", threads=4)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture(autouse=True)
def fresh_counters(settings, redis_client):
    for key in redis_client.scan_iter(f"{settings.key_prefix}:ratelimit:*"):
        redis_client.delete(key)


def Client(base: str, source: str = "127.0.0.1") -> Http:  # reads as a class
    """One keep-alive connection from ``source``."""
    return Http(base, source=source)


def create(client: Http) -> tuple[str, dict]:
    status, game, _ = client.request("POST", "/v1/games", {"game": "dots-and-boxes",
                                                           "width": 3, "height": 3})
    assert status == 201, game
    return game["id"], {"Authorization": f"Bearer {game['write_token']}"}


def limit_headers(resp) -> tuple[int, int, int]:
    return (int(resp.getheader("RateLimit-Limit")), int(resp.getheader("RateLimit-Remaining")),
            int(resp.getheader("RateLimit-Reset")))


def assert_limited(status, body, resp, limit: int, route: str) -> None:
    assert status == 429, body
    assert resp.getheader("Content-Type") == "application/problem+json"
    assert body["type"] == "urn:boxfish:problem:rate-limited" and body["status"] == 429
    assert body["route_class"] == route and body["limit"] == limit
    retry = int(resp.getheader("Retry-After"))
    assert 1 <= retry <= 60
    assert limit_headers(resp)[:2] == (limit, 0)
    assert 1 <= limit_headers(resp)[2] <= 60


def test_reads_are_limited_per_address_across_processes(limited, settings, redis_client):
    a, b = Client(limited[0]), Client(limited[1])
    gid, _ = create(a)
    seen = []
    for i in range(6):  # alternate the two processes: one count
        status, _, resp = (a, b)[i % 2].request("GET", f"/v1/games/{gid}")
        assert status == 200
        seen.append(limit_headers(resp)[:2])
        assert 1 <= limit_headers(resp)[2] <= 60
    assert seen == [(6, 5), (6, 4), (6, 3), (6, 2), (6, 1), (6, 0)]
    for client in (a, b):
        assert_limited(*client.request("GET", f"/v1/games/{gid}/moves"), 6, "reads")
    # The counters are in Redis, under the key prefix.
    keys = [k.decode() for k in redis_client.scan_iter(f"{settings.key_prefix}:ratelimit:*")]
    assert any("{reads:ip:127.0.0.1}" in k for k in keys), keys
    assert any("{games:ip:127.0.0.1}" in k for k in keys), keys
    # Operations are never limited.
    status, _, resp = a.request("GET", "/healthz")
    assert status == 200 and resp.getheader("RateLimit-Limit") is None
    # Other route classes have their own counts.
    status, _, resp = a.request("POST", "/v1/games", {"game": "dots-and-boxes", "width": 2,
                                                      "height": 2})
    assert status == 201 and limit_headers(resp)[:2] == (3, 1)


def test_another_address_is_not_affected(limited):
    a = Client(limited[0])
    gid, _ = create(a)
    for _ in range(6):
        assert a.request("GET", f"/v1/games/{gid}")[0] == 200
    assert a.request("GET", f"/v1/games/{gid}")[0] == 429
    other = Client(limited[1], source="127.0.0.2")
    status, view, resp = other.request("GET", f"/v1/games/{gid}")
    assert status == 200 and view["id"] == gid
    assert limit_headers(resp)[:2] == (6, 5)


def forwarded(base: str, address: str) -> tuple[Http, dict]:
    """A connection from this host (the proxy) and the headers of a request it forwards for
    the client at ``address``."""
    return Client(base), {"X-Forwarded-For": address, "X-Forwarded-Proto": "https"}


def read_budget(client: Http, path: str, headers: dict) -> tuple[int, int, int]:
    status, body, resp = client.request("GET", path, headers=headers)
    return (status, *limit_headers(resp)[:2]) if status != 429 else (429, 6, 0)


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget(behind_a_proxy,
                                                                         settings,
                                                                         redis_client):
    """``BOXFISH_TRUSTED_PROXY_HOPS=1``: two clients behind the one proxy (both connections
    from 127.0.0.1) are counted by the address the proxy forwarded, each its own budget;
    the address a client put in front of the proxy's is not trusted."""
    proxy, as_a = forwarded(behind_a_proxy, "198.51.100.7")
    gid, _ = create(Client(behind_a_proxy, source="127.0.0.9"))
    path = f"/v1/games/{gid}"
    assert [read_budget(proxy, path, as_a) for _ in range(7)] == [
        (200, 6, 5), (200, 6, 4), (200, 6, 3), (200, 6, 2), (200, 6, 1), (200, 6, 0),
        (429, 6, 0)]
    _, as_b = forwarded(behind_a_proxy, "203.0.113.20")
    assert read_budget(proxy, path, as_b) == (200, 6, 5)
    # A client that sends its own X-Forwarded-For gets it appended to by the proxy: the
    # rightmost address (the proxy's own view of the client) is the one counted.
    spoofed = {**as_a, "X-Forwarded-For": "192.0.2.1, 198.51.100.7"}
    assert proxy.request("GET", path, headers=spoofed)[0] == 429
    assert read_budget(proxy, path, {"X-Forwarded-For": "192.0.2.1, 203.0.113.20"}) == (
        200, 6, 4)
    # The proxy's own address has a budget untouched by the clients behind it.
    assert read_budget(proxy, path, {}) == (200, 6, 5)
    keys = [k.decode() for k in redis_client.scan_iter(f"{settings.key_prefix}:ratelimit:*")]
    assert any("{reads:ip:198.51.100.7}" in k for k in keys), keys
    assert any("{reads:ip:203.0.113.20}" in k for k in keys), keys
    assert not any("192.0.2.1" in k for k in keys), keys


def test_without_trusted_proxies_a_forged_forwarded_for_is_ignored(limited, settings,
                                                                   redis_client):
    """By default (``BOXFISH_TRUSTED_PROXY_HOPS=0``) X-Forwarded-For is the client's to
    write: it is ignored, and the connection's address is counted, so a made-up header
    buys no fresh budget."""
    a = Client(limited[0])
    gid, _ = create(a)
    path = f"/v1/games/{gid}"
    budgets = [read_budget(a, path, {"X-Forwarded-For": f"198.51.100.{i}",
                                     "X-Forwarded-Proto": "https"}) for i in range(7)]
    assert budgets == [(200, 6, 5), (200, 6, 4), (200, 6, 3), (200, 6, 2), (200, 6, 1),
                       (200, 6, 0), (429, 6, 0)]
    keys = [k.decode() for k in redis_client.scan_iter(f"{settings.key_prefix}:ratelimit:*")]
    assert any("{reads:ip:127.0.0.1}" in k for k in keys), keys
    assert not any("198.51.100." in k for k in keys), keys


def test_the_trusted_proxy_hops_setting(monkeypatch):
    assert Settings().trusted_proxy_hops == 0
    monkeypatch.setenv("BOXFISH_TRUSTED_PROXY_HOPS", "2")
    assert Settings().trusted_proxy_hops == 2
    monkeypatch.setenv("BOXFISH_TRUSTED_PROXY_HOPS", "-1")
    with pytest.raises(ValidationError):
        Settings()


def test_a_write_token_is_its_own_bucket(limited):
    a = Client(limited[0])
    gid, auth = create(a)
    gid2, auth2 = create(a)
    moves = [[1, 1, 1], [2, 1, 1], [3, 1, 1], [1, 2, 1], [2, 2, 1]]
    for i, move in enumerate(moves[:4]):
        status, _, resp = a.request("POST", f"/v1/games/{gid}/moves", {"move": move}, auth)
        assert status == 201 and limit_headers(resp)[:2] == (4, 3 - i)
    assert_limited(*a.request("POST", f"/v1/games/{gid}/moves", {"move": moves[4]}, auth),
                   4, "appends")
    # The other game's token: a bucket of its own, on either process.
    status, _, resp = Client(limited[1]).request("POST", f"/v1/games/{gid2}/moves",
                                                 {"move": [1, 1, 1]}, auth2)
    assert status == 201 and limit_headers(resp)[:2] == (4, 3)
    # A token that is not this game's counts against the address (here still fresh): 403.
    status, body, resp = a.request("POST", f"/v1/games/{gid}/moves", {"move": moves[4]},
                                   auth2)
    assert status == 403 and limit_headers(resp)[:2] == (4, 3)
    # Reads: the address's bucket runs out; the token's does not.
    for _ in range(6):
        a.request("GET", f"/v1/games/{gid}")
    assert a.request("GET", f"/v1/games/{gid}")[0] == 429
    made_up = {"Authorization": f"Bearer {secrets.token_urlsafe(24)}"}
    assert a.request("GET", f"/v1/games/{gid}", headers=made_up)[0] == 429
    status, view, resp = a.request("GET", f"/v1/games/{gid}", headers=auth)
    assert status == 200 and view["serial"] == 4 and limit_headers(resp)[:2] == (6, 5)


def test_analyses_are_limited(limited):
    a = Client(limited[0])
    body = {"game": "dots-and-boxes", "width": 2, "height": 2}
    for i in range(2):
        status, job, resp = a.request("POST", "/v1/analyses", {**body, "time_ms": 100 + i})
        assert status in (200, 202), job
        assert limit_headers(resp)[:2] == (2, 1 - i)
    assert_limited(*a.request("POST", "/v1/analyses", {**body, "time_ms": 102}), 2,
                   "analyses")
    gid, _ = create(a)
    assert_limited(*a.request("POST", f"/v1/games/{gid}/analyses", {}), 2, "analyses")
    # Reading a job is a read, not an analysis.
    status, _, _ = a.request("GET", f"/v1/analyses/{job['id']}")
    assert status == 200


def test_game_animations_have_a_class_of_their_own(limited):
    """A GIF draws a frame per move: 2 a minute here, while the game's other pictures and
    reads go on from their own budget."""
    a = Client(limited[0], source="127.0.0.3")
    gid, auth = create(a)
    status, _, _ = a.request("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]}, auth)
    assert status == 201

    def picture(name: str):
        a.conn.request("GET", f"/v1/games/{gid}/{name}")
        resp = a.conn.getresponse()
        return resp, resp.read()

    for i in range(2):
        resp, gif = picture("animation.gif")
        assert resp.status == 200 and gif.startswith(b"GIF89a")
        assert limit_headers(resp)[:2] == (2, 1 - i)
    assert_limited(*a.request("GET", f"/v1/games/{gid}/animation.gif"), 2, "animations")
    resp, png = picture("board.png")
    assert resp.status == 200 and png.startswith(b"\x89PNG") and limit_headers(resp)[0] == 6


# In process.

def test_every_write_route_has_a_class(app):
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        if rule.endpoint.partition(".")[0] in EXEMPT_BLUEPRINTS:
            assert route_class(rule.endpoint, "GET") is None
            continue
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            if method == "GET":
                assert route_class(rule.endpoint, method) == COSTLY_READS.get(rule.endpoint,
                                                                              "reads")
            else:
                assert rule.endpoint in WRITE_CLASSES, (rule, method)
    assert set(WRITE_CLASSES.values()) == {"analyses", "reviews", "games", "appends"}
    assert route_class("pictures.game_animation", "GET") == "animations"
    assert route_class("pictures.game_board", "GET") == "reads"
    assert route_class(None, "GET") == "reads"  # unknown paths


def test_limit_settings(monkeypatch):
    defaults = Settings()
    assert defaults.rate_limit_enabled
    assert [parse_limits(getattr(defaults, f"rate_limit_{name}"))[0].amount
            for name in ("analyses", "reviews", "games", "appends", "animations", "reads")] == [
                60, 10, 120, 1200, 30, 3000]
    monkeypatch.setenv("BOXFISH_RATE_LIMIT_ANALYSES", "10/second;300/minute")
    monkeypatch.setenv("BOXFISH_RATE_LIMIT_READS", "")
    monkeypatch.setenv("BOXFISH_RATE_LIMIT_ENABLED", "false")
    s = Settings()
    assert [(x.amount, x.window_s) for x in parse_limits(s.rate_limit_analyses)] == [
        (10, 1), (300, 60)]
    assert parse_limits(s.rate_limit_reads) == [] and not s.rate_limit_enabled
    monkeypatch.setenv("BOXFISH_RATE_LIMIT_GAMES", "60/fortnight")
    with pytest.raises(ValidationError, match="fortnight"):
        Settings()


def test_several_limits_and_no_limit(settings, redis_client):
    own = settings.model_copy(update={**LIMITS, "rate_limit_reads": "2/second;3/minute",
                                      "rate_limit_games": ""})
    client = create_app(own, connection=redis_client).test_client()
    for _ in range(5):  # no limit on this class: no headers
        resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2})
        assert resp.status_code == 201 and "RateLimit-Limit" not in resp.headers
    gid = resp.json["id"]
    first = client.get(f"/v1/games/{gid}")
    assert (first.headers["RateLimit-Limit"], first.headers["RateLimit-Remaining"]) == ("2",
                                                                                      "1")
    second = client.get(f"/v1/games/{gid}")
    assert second.headers["RateLimit-Remaining"] == "0"
    third = client.get(f"/v1/games/{gid}")
    assert third.status_code == 429 and third.headers["Retry-After"] == "1"
    assert third.json["limit"] == 2 and third.json["window_s"] == 1


def test_a_failing_limit_store_lets_requests_pass(settings, redis_client, monkeypatch):
    own = settings.model_copy(update=LIMITS)
    dead = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))
    app = create_app(own, connection=redis_client, queue_connection=dead)
    counters = app.extensions["boxfish_ratelimit"].counters
    calls = []
    monkeypatch.setattr(counters, "script", lambda **kw: calls.append(kw) or dead.ping())
    client = app.test_client()
    for _ in range(8):
        resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2})
        assert resp.status_code == 201 and "RateLimit-Limit" not in resp.headers
    assert len(calls) == 1  # then paused: an outage costs one failed call, not one a request
    counters._paused_until -= rate_limits.PAUSE_S  # the pause is over
    client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2})
    assert len(calls) == 2


def test_a_game_made_for_it_is_no_new_bucket_for_analyses(limited):
    """Anyone can make a game, so a game's token must not open a fresh bucket of the
    expensive class: analyses (and game creation) are counted by address only."""
    a = Client(limited[0], source="127.0.0.3")
    body = {"game": "dots-and-boxes", "width": 2, "height": 2}
    for i in range(2):
        status, job, _ = a.request("POST", "/v1/analyses", {**body, "time_ms": 200 + i})
        assert status in (200, 202), job
    gid, auth = create(a)
    assert_limited(*a.request("POST", f"/v1/games/{gid}/analyses", {}, auth), 2, "analyses")
    # appends with that token are still the token's own
    status, _, resp = a.request("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]}, auth)
    assert status == 201 and limit_headers(resp)[:2] == (4, 3)


def test_an_encoded_slash_is_refused_before_it_is_counted(limited):
    a = Client(limited[0], source="127.0.0.4")
    gid, auth = create(a)
    status, body, resp = a.request("POST", f"/v1/games/{gid}%2Fmoves", {"move": [1, 1, 1]},
                                   auth)
    assert status == 404 and resp.getheader("Content-Type") == "application/problem+json"
    assert resp.getheader("RateLimit-Limit") is None  # the limiter never saw it
    status, _, resp = a.request("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]}, auth)
    assert status == 201 and limit_headers(resp)[:2] == (4, 3)


def test_the_429_and_the_headers_match_openapi(settings, redis_client, spec):
    own = settings.model_copy(update=LIMITS)
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    body = {"game": "dots-and-boxes", "width": 2, "height": 2}
    answers = [client.post("/v1/games", json=body) for _ in range(4)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429]
    assert answers[-1].headers["Retry-After"] == answers[-1].headers["RateLimit-Reset"]
    gid = answers[0].json["id"]
    auth = {"Authorization": f"Bearer {answers[0].json['write_token']}"}
    for _ in range(4):
        client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                       headers=auth).status_code == 429
    for path in (f"/v1/games/{gid}", f"/v1/games/{gid}/index", f"/v1/games/{gid}/moves",
                 f"/v1/games/{gid}/events", "/v1/analyses/nothing-here", "/v1/nowhere",
                 f"/v1/games/{gid}", f"/v1/games/{gid}"):
        client.get(path, validate_spec=path != "/v1/nowhere").close()
    assert client.get(f"/v1/games/{gid}").status_code == 429
