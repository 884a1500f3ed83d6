"""Webhooks: the API (registration, secrets shown once, auth, limits, URL checks), and end to
end with a real gunicorn, a real ``boxfish worker --webhooks`` (with RQ's scheduler) and a
real HTTP receiver in this process, every delivery verified with the ``standardwebhooks``
package."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import standardwebhooks

from boxfish.engine import load_game
from boxfish.service.application.webhooks import Webhooks
from boxfish.service.http.app import create_app

from .conftest import CheckedClient, _env, stop_process, wait_for_workers

HOOK = "https://93.184.215.14/boxfish"


# -- the API ---------------------------------------------------------------------------------


def test_create_list_get_delete(client, new_game):
    game_id, auth, _ = new_game()
    resp = client.post(f"/v1/games/{game_id}/webhooks", headers=auth,
                       json={"url": HOOK, "events": ["move.appended"]})
    assert resp.status_code == 201, resp.json
    hook = resp.json
    assert hook["url"] == HOOK and hook["events"] == ["move.appended"] and hook["active"]
    assert hook["secret"].startswith("whsec_")
    assert resp.headers["Location"] == f"/v1/games/{game_id}/webhooks/{hook['id']}"
    second = client.post(f"/v1/games/{game_id}/webhooks", headers=auth, json={"url": HOOK})
    assert second.json["events"] == ["move.appended", "game.finished"]
    listed = client.get(f"/v1/games/{game_id}/webhooks", headers=auth).json["webhooks"]
    assert [h["id"] for h in listed] == [hook["id"], second.json["id"]]
    assert all("secret" not in h for h in listed)
    one = client.get(f"/v1/games/{game_id}/webhooks/{hook['id']}", headers=auth)
    assert one.status_code == 200 and "secret" not in one.json and one.json["url"] == HOOK
    log = client.get(f"/v1/games/{game_id}/webhooks/{hook['id']}/deliveries", headers=auth)
    assert log.json == {"webhook": hook["id"], "deliveries": []}
    assert client.delete(f"/v1/games/{game_id}/webhooks/{hook['id']}",
                         headers=auth).status_code == 204
    assert client.delete(f"/v1/games/{game_id}/webhooks/{hook['id']}",
                         headers=auth).status_code == 404
    assert [h["id"] for h in client.get(f"/v1/games/{game_id}/webhooks",
                                        headers=auth).json["webhooks"]] == [second.json["id"]]


def test_auth_and_not_found(client, new_game):
    game_id, auth, _ = new_game()
    other_id, other_auth, _ = new_game()
    path = f"/v1/games/{game_id}/webhooks"
    for resp in (client.post(path, json={"url": HOOK}), client.get(path)):
        assert resp.status_code == 401 and resp.json["type"].endswith(":unauthorized")
    for resp in (client.post(path, json={"url": HOOK}, headers=other_auth),
                 client.get(path, headers=other_auth),
                 client.delete(f"{path}/wh_0", headers=other_auth)):
        assert resp.status_code == 403
    assert client.get(f"/v1/games/{game_id}/webhooks", headers=auth).json == {"webhooks": []}
    assert client.get("/v1/games/nosuchgame/webhooks", headers=auth).status_code == 404
    assert client.get(f"{path}/wh_nope/deliveries", headers=auth).status_code == 404
    assert client.get(f"{path}/wh_nope", headers=auth).status_code == 404
    hook = client.post(f"/v1/games/{other_id}/webhooks", headers=other_auth,
                       json={"url": HOOK}).json
    # Another game's webhook is not found through this one.
    assert client.get(f"{path}/{hook['id']}", headers=auth).status_code == 404


@pytest.mark.parametrize("body, reason", [
    ({"url": "ftp://93.184.215.14/x"}, "invalid_url"),
    ({"url": "https://user:pw@93.184.215.14/x"}, "invalid_url"),
    ({"url": HOOK, "events": ["move.deleted"]}, "invalid_request"),
    ({"url": HOOK, "events": []}, "invalid_request"),
    ({"url": HOOK, "events": ["move.appended", "move.appended"]}, "invalid_request"),
    ({"url": HOOK, "secret": "whsec_AAAA"}, "invalid_request"),
    ({"events": ["move.appended"]}, "invalid_request"),
])
def test_bad_registrations_are_422_and_change_nothing(client, new_game, body, reason):
    game_id, auth, _ = new_game()
    resp = client.post(f"/v1/games/{game_id}/webhooks", headers=auth, json=body)
    assert resp.status_code == 422 and resp.json["reason"] == reason, resp.json
    assert client.get(f"/v1/games/{game_id}/webhooks", headers=auth).json == {"webhooks": []}


@pytest.fixture
def strict_client(settings, redis_client, spec):
    """A client of an app that refuses private addresses and allows 2 webhooks a game."""
    app = create_app(settings.model_copy(update={"webhook_allow_private": False,
                                                 "webhook_max_per_game": 2}),
                     connection=redis_client)
    return CheckedClient(app.test_client(), spec)


def _game(client) -> tuple[str, dict]:
    resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 1, "height": 1})
    return resp.json["id"], {"Authorization": f"Bearer {resp.json['write_token']}"}


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://10.0.0.7/",
                                 "http://169.254.169.254/latest", "http://[::1]/",
                                 "http://localhost/"])
def test_private_urls_are_refused_without_the_setting(strict_client, url):
    game_id, auth = _game(strict_client)
    resp = strict_client.post(f"/v1/games/{game_id}/webhooks", headers=auth, json={"url": url})
    assert resp.status_code == 422 and resp.json["reason"] == "private_address", resp.json
    resp = strict_client.post("/v1/analyses", json={
        "game": "dots-and-boxes", "width": 1, "height": 1,
        "callback": {"url": url, "secret": standardwebhooks_secret()}})
    assert resp.status_code == 422 and resp.json["reason"] == "private_address"


def standardwebhooks_secret() -> str:
    from boxfish.service.application.webhooks import new_secret
    return new_secret()


def test_the_per_game_limit(strict_client):
    game_id, auth = _game(strict_client)
    path = f"/v1/games/{game_id}/webhooks"
    first = strict_client.post(path, headers=auth, json={"url": HOOK})
    assert first.status_code == 201
    assert strict_client.post(path, headers=auth, json={"url": HOOK}).status_code == 201
    resp = strict_client.post(path, headers=auth, json={"url": HOOK})
    assert resp.status_code == 422 and resp.json["reason"] == "limit_exceeded"
    assert strict_client.delete(f"{path}/{first.json['id']}", headers=auth).status_code == 204
    assert strict_client.post(path, headers=auth, json={"url": HOOK}).status_code == 201


@pytest.mark.parametrize("secret", ["whsec_", "AAAA" * 8, "whsec_" + "A" * 31,
                                    "whsec_" + "AAAA" * 4, "whsec_" + "AAAA" * 23,
                                    "whsec_" + "A!AA" * 8])
def test_bad_callback_secrets_are_422(client, secret):
    resp = client.post("/v1/analyses", json={
        "game": "dots-and-boxes", "width": 1, "height": 1,
        "callback": {"url": HOOK, "secret": secret}})
    assert resp.status_code == 422 and resp.json["errors"][0]["loc"][:2] == ["callback",
                                                                            "secret"]


# -- end to end ------------------------------------------------------------------------------


class Receiver:
    """An HTTP server on loopback recording every request (time, path, headers, body) and
    answering each path with its scripted statuses in turn (then 200)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.scripts: dict[str, list] = {}
        self.lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # the http.server name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    script = receiver.scripts.get(self.path, [])
                    status, headers = script.pop(0) if script else (200, {})
                    receiver.requests.append({
                        "at": time.time(), "path": self.path, "body": body.decode(),
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "answered": status})
                    receiver.lock.notify_all()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def script(self, path: str, *answers) -> str:
        """Answer ``path`` with ``answers`` (a status, or ``(status, headers)``) in turn."""
        self.scripts[path] = [a if isinstance(a, tuple) else (a, {}) for a in answers]
        return self.url + path

    def wait_for(self, path: str, n: int, timeout_s: float = 30.0) -> list[dict]:
        """The first ``n`` requests to ``path`` once there are that many."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while True:
                got = [r for r in self.requests if r["path"] == path]
                if len(got) >= n:
                    return got[:n]
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"{len(got)} of {n} requests to {path} arrived"
                self.lock.wait(remaining)

    def to(self, path: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["path"] == path]


def verified(secret: str, request: dict) -> dict:
    """The body of ``request`` as the ``standardwebhooks`` package verifies it."""
    return standardwebhooks.Webhook(secret).verify(request["body"], request["headers"])


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="module")
def webhook_worker(settings, redis_client, tmp_path_factory):
    """A real ``boxfish worker --webhooks`` (with RQ's scheduler) on the session's queue."""
    log = open(tmp_path_factory.mktemp("webhooks") / "worker.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "worker",
                             "--webhooks"], env=_env(settings), stdout=log, stderr=log,
                            start_new_session=True)
    wait_for_workers(redis_client, settings.webhook_queue_name, 1)
    yield proc
    stop_process(proc)


@pytest.fixture
def api(server_url, webhook_worker):
    with httpx.Client(base_url=server_url, timeout=10) as http:
        yield http


def _new_game(api, width=1, height=1) -> tuple[str, dict]:
    resp = api.post("/v1/games", json={"game": "dots-and-boxes", "width": width,
                                       "height": height})
    assert resp.status_code == 201
    return resp.json()["id"], {"Authorization": f"Bearer {resp.json()['write_token']}"}


def _register(api, game_id, auth, url, events=None) -> dict:
    body = {"url": url} if events is None else {"url": url, "events": events}
    resp = api.post(f"/v1/games/{game_id}/webhooks", headers=auth, json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()


def _append(api, game_id, auth, move, key=None) -> httpx.Response:
    headers = dict(auth, **({"Idempotency-Key": key} if key else {}))
    resp = api.post(f"/v1/games/{game_id}/moves", headers=headers, json={"move": move})
    assert resp.status_code == 201, resp.text
    return resp


def _deliveries(api, game_id, auth, hook_id, n: int, timeout_s: float = 15.0) -> list[dict]:
    """The webhook's deliveries log once it has ``n`` records. A delivery job records an
    attempt after the receiver has answered it, so a test that has just seen a request
    arrive must wait for its record."""
    deadline = time.monotonic() + timeout_s
    while True:
        resp = api.get(f"/v1/games/{game_id}/webhooks/{hook_id}/deliveries", headers=auth)
        assert resp.status_code == 200
        log = resp.json()["deliveries"]
        if len(log) >= n:
            return log
        assert time.monotonic() < deadline, f"{len(log)} of {n} records: {log}"
        time.sleep(0.05)


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


ONE_BY_ONE = [[1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]]


def test_a_game_is_delivered_signed_to_the_end(api, receiver):
    game_id, auth = _new_game(api)
    url = receiver.script("/game")
    hook = _register(api, game_id, auth, url)
    for i, move in enumerate(ONE_BY_ONE):
        _append(api, game_id, auth, move, key=f"k{i}")
    # A retried append (same key) replays its answer and delivers nothing again.
    assert _append(api, game_id, auth, ONE_BY_ONE[-1], key="k3") \
        .headers["Idempotent-Replayed"] == "true"
    got = receiver.wait_for("/game", 5)
    events = [verified(hook["secret"], r) for r in got]
    assert [(e["type"], e["data"]["serial"]) for e in events] == [
        ("move.appended", 1), ("move.appended", 2), ("move.appended", 3),
        ("move.appended", 4), ("game.finished", 4)]
    last = events[3]["data"]
    assert last["game"] == game_id and last["move"] == [2, 1, 2] and last["status"] == \
        "finished" and last["to_move"] is None and sum(last["scores"]) == 1
    assert events[4]["data"]["winner"] == last["scores"].index(1)
    ids = [r["headers"]["webhook-id"] for r in got]
    assert len(set(ids)) == 5 and ids[0] == f"msg_{hook['id']}_1_move.appended"
    # Whatever the replay had enqueued would have come before a delivery enqueued after it.
    game2, auth2 = _new_game(api)
    _register(api, game2, auth2, receiver.script("/after-game"))
    _append(api, game2, auth2, [1, 1, 1])
    receiver.wait_for("/after-game", 1)
    assert len(receiver.to("/game")) == 5
    log = _deliveries(api, game_id, auth, hook["id"], 5)
    assert [(d["message_id"], d["outcome"], d["status_code"], d["attempt"])
            for d in reversed(log)] == [(i, "delivered", 200, 1) for i in ids]


def test_500_twice_then_200_is_three_attempts_of_one_message(api, receiver):
    game_id, auth = _new_game(api, 2, 2)
    url = receiver.script("/flaky", 500, 503)
    hook = _register(api, game_id, auth, url, ["move.appended"])
    _append(api, game_id, auth, [1, 1, 1])
    got = receiver.wait_for("/flaky", 3)
    assert [r["answered"] for r in got] == [500, 503, 200]
    assert len({r["headers"]["webhook-id"] for r in got}) == 1
    assert len({r["body"] for r in got}) == 1
    for r in got:
        verified(hook["secret"], r)
    log = _deliveries(api, game_id, auth, hook["id"], 3)
    assert [(d["attempt"], d["outcome"], d["status_code"]) for d in reversed(log)] == [
        (1, "retrying", 500), (2, "retrying", 503), (3, "delivered", 200)]
    assert all(d["message_id"] == got[0]["headers"]["webhook-id"] for d in log)


def test_429_with_retry_after_waits_that_long(api, receiver):
    game_id, auth = _new_game(api, 2, 2)
    url = receiver.script("/busy", (429, {"Retry-After": "1"}))
    hook = _register(api, game_id, auth, url, ["move.appended"])
    _append(api, game_id, auth, [1, 1, 1])
    first, second = receiver.wait_for("/busy", 2)
    assert second["at"] - first["at"] >= 1.0
    log = _deliveries(api, game_id, auth, hook["id"], 2)
    retry, done = log[1], log[0]
    assert (retry["outcome"], retry["status_code"], done["outcome"]) == ("retrying", 429,
                                                                         "delivered")
    assert _seconds(done["at"]) - _seconds(retry["at"]) >= 1.0
    assert _seconds(retry["next_attempt_at"]) - _seconds(retry["at"]) >= 1.0


def test_410_disables_the_webhook(api, receiver):
    game_id, auth = _new_game(api, 2, 2)
    gone = _register(api, game_id, auth, receiver.script("/gone", 410), ["move.appended"])
    control = _register(api, game_id, auth, receiver.script("/control"), ["move.appended"])
    _append(api, game_id, auth, [1, 1, 1])
    receiver.wait_for("/gone", 1)
    deadline = time.monotonic() + 10
    while True:
        listed = {h["id"]: h for h in api.get(f"/v1/games/{game_id}/webhooks",
                                              headers=auth).json()["webhooks"]}
        if not listed[gone["id"]]["active"]:
            break
        assert time.monotonic() < deadline, "the 410 did not disable the webhook"
        time.sleep(0.05)
    assert "410" in listed[gone["id"]]["disabled_reason"] and listed[control["id"]]["active"]
    assert [(d["outcome"], d["status_code"]) for d in
            _deliveries(api, game_id, auth, gone["id"], 1)] == [("disabled", 410)]
    _append(api, game_id, auth, [1, 2, 1])
    # The disabled webhook was registered first: a delivery to it would come first.
    receiver.wait_for("/control", 2)
    assert len(receiver.to("/gone")) == 1


def _finished(api, resp: httpx.Response, timeout_s: float = 60.0) -> dict:
    """The finished job a ``POST /v1/analyses?wait=`` answered with, polled to its end when
    the wait ran out first (202: a busy worker or a loaded host)."""
    assert resp.status_code in (200, 202), resp.text
    job = resp.json()
    deadline = time.monotonic() + timeout_s
    while job["status"] in ("queued", "started"):
        assert time.monotonic() < deadline, f"the analysis did not end: {job}"
        time.sleep(0.05)
        job = api.get(f"/v1/analyses/{job['id']}").json()
    assert job["status"] == "finished", job
    return job


def test_an_analysis_callback_is_delivered(api, receiver, rq_worker):
    from boxfish.service.application.webhooks import new_secret

    secret = new_secret()
    body = {"game": "dots-and-boxes", "width": 1, "height": 2, "moves": [[1, 1, 1]],
            "time_ms": 300, "callback": {"url": receiver.script("/analysis"),
                                         "secret": secret}}
    job = _finished(api, api.post("/v1/analyses?wait=8", json=body))
    (got,) = receiver.wait_for("/analysis", 1)
    event = verified(secret, got)
    assert event["type"] == "analysis.finished" and got["headers"]["webhook-id"] == \
        f"msg_{job['id']}_0"
    assert event["data"]["id"] == job["id"] and event["data"]["status"] == "finished"
    assert event["data"]["result"] == job["result"]
    assert event["data"]["request"] == job["request"]
    # An identical request joins the ended job: its own callback is delivered at once.
    other = new_secret()
    body["callback"] = {"url": receiver.script("/analysis-late"), "secret": other}
    again = api.post("/v1/analyses", json=body)
    assert again.json()["id"] == job["id"]
    (late,) = receiver.wait_for("/analysis-late", 1)
    assert verified(other, late)["data"]["result"] == job["result"]
    assert late["headers"]["webhook-id"] == f"msg_{job['id']}_1"


def _callback_deliveries(api, job_id: str, n: int, timeout_s: float = 15.0) -> list[dict]:
    """The analysis's callback deliveries log once it has ``n`` records."""
    deadline = time.monotonic() + timeout_s
    while True:
        resp = api.get(f"/v1/analyses/{job_id}/deliveries")
        assert resp.status_code == 200, resp.text
        assert resp.json()["analysis"] == job_id
        log = resp.json()["deliveries"]
        if len(log) >= n:
            return log
        assert time.monotonic() < deadline, f"{len(log)} of {n} records: {log}"
        time.sleep(0.05)


def test_an_analysis_callbacks_deliveries_log(api, receiver, rq_worker, redis_client):
    """Every attempt of every callback of an analysis is in its deliveries log, newest first:
    a callback answered 500 then 200 (two attempts, one message), and a second callback (an
    identical request joining the job) refused with 400 (failed, not retried); what the
    receiver got verifies with its secret. Unknown analyses are 404 problems."""
    from boxfish.service.application.webhooks import new_secret

    secrets_ = [new_secret(), new_secret()]
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": [[1, 1, 1]],
            "time_ms": 300, "callback": {"url": receiver.script("/cb-log", 500),
                                         "secret": secrets_[0]}}
    job_id = _finished(api, api.post("/v1/analyses?wait=8", json=body))["id"]
    first = receiver.wait_for("/cb-log", 2)
    assert [r["answered"] for r in first] == [500, 200]
    assert {verified(secrets_[0], r)["type"] for r in first} == {"analysis.finished"}
    log = _callback_deliveries(api, job_id, 2)
    message = f"msg_{job_id}_0"
    assert [(d["callback"], d["message_id"], d["attempt"], d["outcome"], d["status_code"],
             d["type"]) for d in log] == [
        (0, message, 2, "delivered", 200, "analysis.finished"),
        (0, message, 1, "retrying", 500, "analysis.finished")]
    assert log[1]["next_attempt_at"] is not None and log[0]["next_attempt_at"] is None
    assert all(d["error"] is None for d in log)
    assert _seconds(log[0]["at"]) >= _seconds(log[1]["at"])

    body["callback"] = {"url": receiver.script("/cb-log-refused", 400), "secret": secrets_[1]}
    assert api.post("/v1/analyses", json=body).json()["id"] == job_id
    (refused,) = receiver.wait_for("/cb-log-refused", 1)
    assert verified(secrets_[1], refused)["data"]["id"] == job_id
    log = _callback_deliveries(api, job_id, 3)
    assert [(d["callback"], d["message_id"], d["attempt"], d["outcome"], d["status_code"])
            for d in log] == [(1, f"msg_{job_id}_1", 1, "failed", 400),
                              (0, message, 2, "delivered", 200),
                              (0, message, 1, "retrying", 500)]
    assert log[0]["error"] == "the receiver refused the message"
    # A failed message is not retried: once the job of its attempt has ended (it keeps no
    # result), no job of a second attempt exists, queued or scheduled; still three records.
    attempt = f"rq:job:{Webhooks.job_id(f'msg_{job_id}_1', 1)}"
    deadline = time.monotonic() + 30
    while redis_client.exists(attempt):
        assert time.monotonic() < deadline, "the refused attempt's job did not end"
        time.sleep(0.05)
    assert not redis_client.exists(f"rq:job:{Webhooks.job_id(f'msg_{job_id}_1', 2)}")
    assert len(_callback_deliveries(api, job_id, 3)) == 3 and len(
        receiver.to("/cb-log-refused")) == 1

    for bad in ("0" * 32, "x" * 65):
        missing = api.get(f"/v1/analyses/{bad}/deliveries")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")


def test_an_analysis_without_callbacks_has_an_empty_log(client, redis_client, settings):
    """The route through the spec-checked client: an analysis with no callback (queued
    here, no worker needed) has an empty log, as its view says nothing of callbacks."""
    resp = client.post("/v1/analyses", json={"game": "dots-and-boxes", "width": 1,
                                             "height": 1, "moves": [], "time_ms": 100})
    assert resp.status_code in (200, 202), resp.json
    job_id = resp.json["id"]
    log = client.get(f"/v1/analyses/{job_id}/deliveries")
    assert log.status_code == 200 and log.json == {"analysis": job_id, "deliveries": []}
    assert client.get("/v1/analyses/nope/deliveries").status_code == 404


def test_the_engine_seats_moves_are_delivered_like_any_other(api, receiver, rq_worker):
    """A game against the engine (seat 1): the engine's moves, appended by an analysis worker,
    reach the game's webhook as ``move.appended`` like the test's own, every serial once, and
    the game's end as ``game.finished``."""
    resp = api.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 1,
                                       "engine": {"seat": 1, "time_ms": 20}})
    assert resp.status_code == 201, resp.text
    game_id = resp.json()["id"]
    auth = {"Authorization": f"Bearer {resp.json()['write_token']}"}
    hook = _register(api, game_id, auth, receiver.script("/engine-game"))
    game = load_game("dots-and-boxes", width=2, height=1)
    state = game.new_state()
    deadline = time.monotonic() + 60
    while not state.is_terminal():
        if state.to_move == 0:
            move = list(state.legal_moves()[0])
            posted = api.post(f"/v1/games/{game_id}/moves", headers=auth,
                              json={"move": move, "serial": state.serial + 1})
            assert posted.status_code == 201, posted.text
            state.play(tuple(move))
            continue
        listed = api.get(f"/v1/games/{game_id}/moves",
                         params={"after": state.serial}).json()["moves"]
        for entry in listed:
            assert entry["player"] == 1 and entry["serial"] == state.serial + 1
            state.play(tuple(entry["move"]))
        assert time.monotonic() < deadline, "the engine did not move"
        time.sleep(0.02)
    total = state.serial
    got = receiver.wait_for("/engine-game", total + 1)
    events = [verified(hook["secret"], r) for r in got]
    moves = sorted((e["data"] for e in events if e["type"] == "move.appended"),
                   key=lambda m: m["serial"])  # one worker delivers in order; not promised
    assert [m["serial"] for m in moves] == list(range(1, total + 1))
    assert [m["player"] for m in moves] == [p for p, _ in _players(game, moves)]
    assert {m["player"] for m in moves} == {0, 1}
    assert [e["data"]["serial"] for e in events if e["type"] == "game.finished"] == [total]


def _players(game, moves):
    """``(player, move)`` of each move as the engine replays them (who was to move)."""
    state = game.new_state()
    out = []
    for m in moves:
        out.append((state.to_move, m["move"]))
        state.play(tuple(m["move"]))
    return out


def test_a_finished_review_is_delivered_to_the_webhooks_that_ask_for_it(api, receiver,
                                                                        rq_worker):
    """``review.finished`` reaches the game's webhook that names it, signed, with the review's
    id, position and players; a webhook with the default events gets no such message."""
    game_id, auth = _new_game(api)
    asked = _register(api, game_id, auth, receiver.script("/review-asked"),
                      ["review.finished"])
    plain = _register(api, game_id, auth, receiver.script("/review-plain"))
    assert plain["events"] == ["move.appended", "game.finished"]
    for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]):
        _append(api, game_id, auth, m)
    r = api.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 200})
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]
    [req] = receiver.wait_for("/review-asked", 1, timeout_s=60)
    body = verified(asked["secret"], req)
    assert body["type"] == "review.finished"
    data = body["data"]
    assert data["review"] == review_id and data["game"] == game_id
    assert data["url"] == f"/v1/reviews/{review_id}"
    view = api.get(f"/v1/reviews/{review_id}").json()
    assert view["status"] == "finished"
    assert data["players"] == view["players"] and data["position"] == view["position"]
    # the default subscriber got its four moves and the game's end, and no review
    got = receiver.wait_for("/review-plain", 5)
    assert [json.loads(x["body"])["type"] for x in got].count("game.finished") == 1
    assert all(json.loads(x["body"])["type"] != "review.finished"
               for x in receiver.to("/review-plain"))
