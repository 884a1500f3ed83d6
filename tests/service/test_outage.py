"""A Redis outage while the API runs: every route answers 503 problem+json with Retry-After
within the request timeout (never a 500, never a hang), open event streams end cleanly, and
once the same Redis is back on the same port the same requests succeed, without restarting
the API or the analysis worker.

A real gunicorn and a real ``boxfish worker`` on a Redis of the test's own, which is either
killed (SIGKILL: connections refused, as a crash or a failover's dead master) or frozen
(SIGSTOP: connections accepted and never answered, as a hung server or a network partition)
and then brought back.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import threading
import time

import pytest
import redis
from rq import Queue, SimpleWorker, Worker
from rq.exceptions import StopRequested

from boxfish.service.runtime.embedded_redis import EmbeddedRedis, free_port
from boxfish.workers import worker as worker_module

from .conftest import start_gunicorn, start_worker, stop_process, wait_for_workers
from .failover_load import (
    Ledger,
    Load,
    Player,
    check_answers,
    compare_logs,
    fail_over_under_load,
)
from .feed_check import OPERATOR_TOKEN, http_get, read_feed

PROBLEM = "application/problem+json"
#: The API's Redis socket timeout in these tests, and its request timeout.
SOCKET_TIMEOUT_S = 1.0
REQUEST_TIMEOUT_S = 10.0
#: No answer may take longer than this during the outage: the rate limiter's Redis (here the
#: same server) and the store each cost at most one socket timeout, plus scheduling slack on a
#: loaded 2-core machine.
MAX_ANSWER_S = 2 * SOCKET_TIMEOUT_S + 3.0
#: Deadline of each wait for the service to work again once Redis is back: generous, since
#: a worker that lost its Redis tries again after pauses of up to 10 s.
RECOVERY_DEADLINE_S = 60.0


def call(port: int, method: str, path: str, body=None, headers=None,
         timeout: float = REQUEST_TIMEOUT_S + 5):
    """One request on a fresh connection: ``(status, headers, parsed body, seconds)``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body)
        hdrs["Content-Type"] = "application/json"
    start = time.monotonic()
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        if resp.getheader("Content-Type", "").startswith("text/event-stream"):
            raw = resp.readline() + resp.readline() + resp.readline()  # the first event
        else:
            raw = resp.read()
        elapsed = time.monotonic() - start
        ctype = resp.getheader("Content-Type", "")
        parsed = json.loads(raw) if raw and "json" in ctype else raw
        return resp.status, dict(resp.getheaders()), parsed, elapsed
    finally:
        conn.close()


class Outage:
    """The test's own Redis (AOF on, so the data outlives a kill), an API and a worker."""

    def __init__(self, settings, tmp_path, monkeypatch) -> None:
        self.data = str(tmp_path / "redis")
        self.redis_port = free_port()
        self.redis = EmbeddedRedis(self.data, port=self.redis_port, appendfsync="always").start()
        # start_gunicorn and start_worker hand the test process's environment to the server
        # (and override what the settings name): the socket timeout comes from here.
        monkeypatch.setenv("BOXFISH_REDIS_SOCKET_TIMEOUT_S", str(SOCKET_TIMEOUT_S))
        monkeypatch.delenv("BOXFISH_QUEUE_REDIS_URL", raising=False)
        monkeypatch.delenv("BOXFISH_REDIS_CLUSTER", raising=False)
        # Rate limits on (counted in the same Redis, which goes down with the store), high
        # enough never to bite.
        self.settings = settings.model_copy(update={
            "redis_url": self.redis.url, "request_timeout_s": REQUEST_TIMEOUT_S,
            "rate_limit_enabled": True, "rate_limit_analyses": "10000/minute",
            "rate_limit_games": "10000/minute", "rate_limit_appends": "10000/minute",
            "rate_limit_reads": "10000/minute"})
        self.worker = start_worker(self.settings, tmp_path / "worker.log")
        self.api_port = free_port()
        self.api = start_gunicorn(self.settings, self.api_port, tmp_path / "api.log", threads=8)
        self.frozen = False

    def kill(self) -> None:
        self.redis.kill()

    def freeze(self) -> None:
        os.kill(self.redis.process.pid, signal.SIGSTOP)
        self.frozen = True

    def bring_back(self) -> None:
        if self.frozen:
            os.kill(self.redis.process.pid, signal.SIGCONT)
            self.frozen = False
        else:
            self.redis = EmbeddedRedis(self.data, port=self.redis_port).start()

    def close(self) -> None:
        if self.frozen:
            os.kill(self.redis.process.pid, signal.SIGCONT)
        stop_process(self.api)
        stop_process(self.worker)
        self.redis.stop()

    def call(self, *args, **kwargs):
        return call(self.api_port, *args, **kwargs)


@pytest.fixture
def outage(settings, tmp_path, monkeypatch):
    o = Outage(settings, tmp_path, monkeypatch)
    yield o
    o.close()


def finished_analysis(outage: Outage, body: dict) -> dict:
    """``POST /v1/analyses?wait=8`` with ``body`` (200, or 202 if not done by then), then
    its job read until it is finished (never failed), within :data:`RECOVERY_DEADLINE_S`;
    returns the finished job."""
    status, _, job, _ = outage.call("POST", "/v1/analyses?wait=8", body)
    assert status in (200, 202) and job["status"] != "failed", (status, job)
    deadline = time.monotonic() + RECOVERY_DEADLINE_S
    while job["status"] != "finished":
        assert job["status"] in ("queued", "started") and time.monotonic() < deadline, job
        time.sleep(0.2)
        status, _, job, _ = outage.call("GET", f"/v1/analyses/{job['id']}")
        assert status == 200, job
    return job


def test_a_wait_for_an_analysis_outlasting_the_socket_timeout_is_no_503(outage):
    """``POST /v1/analyses?wait=3`` for an analysis that runs 4 s, with the API's Redis socket
    timeout at 1 s: the wait (blocking reads of the job's results) ends with a 202 and the
    running job, not with a 503 from a read that outlasted the socket timeout."""
    status, _, job, elapsed = outage.call(
        "POST", "/v1/analyses?wait=3",
        {"game": "dots-and-boxes", "width": 5, "height": 5, "moves": [], "time_ms": 4000})
    assert status == 202, (status, job)
    assert job["status"] in ("queued", "started"), job
    assert elapsed >= 3.0, f"answered after {elapsed:.1f} s, before the wait was over"


def _requests(gid: str, auth: dict, job_id: str, key: str) -> list[tuple]:
    """(name, method, path, body, headers) of every route that needs Redis."""
    return [
        ("create game", "POST", "/v1/games", {"game": "dots-and-boxes", "width": 2,
                                              "height": 2}, None),
        ("get game", "GET", f"/v1/games/{gid}", None, None),
        ("index", "GET", f"/v1/games/{gid}/index", None, None),
        ("list moves", "GET", f"/v1/games/{gid}/moves?after=0", None, None),
        ("append", "POST", f"/v1/games/{gid}/moves", {"move": [1, 2, 1], "serial": 2},
         {**auth, "Idempotency-Key": key}),
        ("event stream", "GET", f"/v1/games/{gid}/events", None, None),
        ("resumed event stream", "GET", f"/v1/games/{gid}/events",
         None, {"Last-Event-ID": "1"}),
        ("analyse game", "POST", f"/v1/games/{gid}/analyses", {"time_ms": 200}, None),
        ("analyse position", "POST", "/v1/analyses",
         {"game": "dots-and-boxes", "width": 1, "height": 1, "moves": [[1, 1, 1]],
          "time_ms": 200}, None),
        ("get analysis", "GET", f"/v1/analyses/{job_id}", None, None),
    ]


def _open_stream(port: int, gid: str):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S + 5)
    conn.request("GET", f"/v1/games/{gid}/events")
    resp = conn.getresponse()
    assert resp.status == 200
    return conn, resp


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_a_redis_outage_is_503_and_the_api_recovers_by_itself(outage, how):
    # Before: a game with one move, a finished analysis, an open event stream.
    status, _, game, _ = outage.call("POST", "/v1/games",
                                     {"game": "dots-and-boxes", "width": 2, "height": 2})
    assert status == 201
    gid, auth = game["id"], {"Authorization": f"Bearer {game['write_token']}"}
    status, _, _, _ = outage.call("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]}, auth)
    assert status == 201
    job = finished_analysis(outage, {"game": "dots-and-boxes", "width": 1, "height": 1,
                                     "moves": [[1, 1, 1], [1, 2, 1]], "time_ms": 200})
    conn, stream = _open_stream(outage.api_port, gid)
    assert stream.readline().startswith(b"id: 1")  # the game event, at serial 1
    ended = threading.Event()

    def read_stream_to_its_end():
        try:
            while stream.readline():
                pass
        except (OSError, http.client.HTTPException):
            pass
        ended.set()

    reader = threading.Thread(target=read_stream_to_its_end, daemon=True)
    reader.start()

    (outage.kill if how == "killed" else outage.freeze)()
    try:
        # The open stream ends (its blocking read fails) instead of hanging.
        assert ended.wait(REQUEST_TIMEOUT_S), "the open event stream did not end"
        conn.close()
        requests = _requests(gid, auth, job["id"], key=f"outage-{how}")
        for name, method, path, body, headers in requests:
            status, hdrs, problem, elapsed = outage.call(method, path, body, headers)
            assert status == 503, (name, status, problem)
            assert hdrs["Content-Type"] == PROBLEM, name
            assert problem["type"].endswith(":store-unavailable"), (name, problem)
            assert problem["status"] == 503 and problem["reason"] == "store_unavailable"
            assert int(hdrs["Retry-After"]) > 0, name
            assert elapsed < MAX_ANSWER_S, f"{name} took {elapsed:.1f} s"
        status, hdrs, problem, elapsed = outage.call("GET", "/readyz")
        assert status == 503 and problem["type"].endswith(":not-ready") and not problem["redis"]
        assert int(hdrs["Retry-After"]) > 0 and elapsed < MAX_ANSWER_S
        # What needs no Redis still answers, the metrics scrape included.
        status, _, _, elapsed = outage.call("GET", "/healthz")
        assert status == 200 and elapsed < MAX_ANSWER_S
        status, _, text, elapsed = outage.call("GET", "/metrics")
        assert status == 200 and b"http_requests_total" in text and elapsed < MAX_ANSWER_S
        assert b'status="500"' not in text
    finally:
        outage.bring_back()

    # Back: the same requests succeed, with the same API and worker processes.
    assert outage.api.poll() is None and outage.worker.poll() is None
    expected = {"create game": 201, "get game": 200, "index": 200, "list moves": 200,
                "append": 201, "event stream": 200, "resumed event stream": 200,
                "analyse game": (200, 202), "analyse position": (200, 202),
                "get analysis": 200}
    deadline = time.monotonic() + RECOVERY_DEADLINE_S
    for name, method, path, body, headers in _requests(gid, auth, job["id"],
                                                       key=f"outage-{how}"):
        while True:
            status, hdrs, answer, _ = outage.call(method, path, body, headers)
            want = expected[name]
            if status in (want if isinstance(want, tuple) else (want,)):
                break
            # Right after the restart, Redis may still be loading its data (503, LOADING).
            assert status == 503 and time.monotonic() < deadline, (name, status, answer)
            time.sleep(0.2)
        if name == "append":
            assert answer["serial"] == 2 and "Idempotent-Replayed" not in hdrs
    # The moves acknowledged before the outage are all there, and nothing else.
    status, _, listed, _ = outage.call("GET", f"/v1/games/{gid}/moves")
    assert [(m["serial"], m["move"]) for m in listed["moves"]] == [(1, [1, 1, 1]),
                                                                   (2, [1, 2, 1])]
    # The worker runs analyses again (after its pause between tries to reach Redis, at most
    # 10 s); the API is ready again.
    finished_analysis(outage, {"game": "dots-and-boxes", "width": 1, "height": 1,
                               "moves": [[1, 1, 1]], "time_ms": 200})
    deadline = time.monotonic() + RECOVERY_DEADLINE_S
    while True:
        status, _, ready, _ = outage.call("GET", "/readyz")
        if status == 200:
            break
        assert time.monotonic() < deadline, ready
        time.sleep(0.3)
    status, _, text, _ = outage.call("GET", "/metrics")
    assert b'status="500"' not in text


# -- the analysis worker ---------------------------------------------------------------------


class HangingUp:
    """A TCP listener on ``port`` that accepts each connection and closes it at once (a
    port where no Redis answers), noting when each came; a thread of its own until
    :meth:`close`."""

    def __init__(self, port: int) -> None:
        self.tries: list[float] = []
        self.listener = socket.create_server(("127.0.0.1", port))
        self.listener.settimeout(0.1)
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.tries.append(time.monotonic())
            conn.close()

    def close(self) -> None:
        self.closing.set()
        self.thread.join(10)
        self.listener.close()


def test_a_worker_started_before_its_redis_waits_for_it(settings, tmp_path, monkeypatch):
    """``boxfish worker`` with no Redis yet neither exits nor spins: it tries again and again,
    at least half a second apart (the service's pause between tries), and takes jobs once
    Redis is there, in the same process."""
    monkeypatch.delenv("BOXFISH_QUEUE_REDIS_URL", raising=False)
    monkeypatch.delenv("BOXFISH_REDIS_CLUSTER", raising=False)
    port = free_port()
    own = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{port}/0"})
    log_path = tmp_path / "worker.log"
    no_redis = HangingUp(port)
    worker = start_worker(own, log_path)
    server = None
    try:
        deadline = time.monotonic() + 60
        while len(no_redis.tries) < 4:
            assert worker.poll() is None, log_path.read_text()[-2000:]
            assert time.monotonic() < deadline, f"{len(no_redis.tries)} tries in 60 s"
            time.sleep(0.05)
        no_redis.close()
        # Three pauses between four tries: waiting, not spinning (a lower bound, which a
        # loaded machine only makes easier to meet).
        tries = no_redis.tries
        assert tries[3] - tries[0] >= 3 * 0.5 - 0.1, [round(t - tries[0], 3) for t in tries]
        assert worker.poll() is None, log_path.read_text()[-2000:]
        server = EmbeddedRedis(str(tmp_path / "redis"), port=port).start()
        client = redis.Redis.from_url(own.redis_url)
        wait_for_workers(client, own.queue_name, 1, timeout_s=30)
        job = Queue(own.queue_name, connection=client).enqueue(
            "boxfish.workers.analysis_job.run_analysis",
            {"game": "dots-and-boxes", "params": {"width": 1, "height": 1},
             "moves": [[1, 1, 1]], "time_ms": 100})
        deadline = time.monotonic() + 20
        while job.get_status(refresh=True) not in ("finished", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert job.get_status() == "finished", job.latest_result()
        assert len(Worker.all(connection=client)) == 1
        assert worker.poll() is None, log_path.read_text()[-2000:]
        client.close()
    finally:
        no_redis.close()
        stop_process(worker)
        if server is not None:
            server.stop()


def test_run_worker_replaces_an_rq_worker_that_quit_on_a_redis_failure(settings, monkeypatch):
    """RQ's worker quits on a lost connection anywhere but in its wait for a job (and cannot
    start without Redis): ``run_worker`` starts a new one, until one is told to stop."""
    runs = []

    class FlakyWorker(SimpleWorker):
        def work(self, **kwargs):
            runs.append(self.name)
            if len(runs) == 1:
                raise redis.exceptions.ConnectionError("lost while registering")
            if len(runs) == 2:
                return False  # quit on an error RQ logged itself
            with contextlib.suppress(StopRequested):  # what RQ's worker does on a SIGTERM
                self.request_stop(signal.SIGTERM, None)
            return True

    monkeypatch.setattr(worker_module, "SimpleWorker", FlakyWorker)
    monkeypatch.setattr(worker_module, "RECONNECT_MIN_S", 0.01)
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert worker_module.run_worker(settings.redis_url, settings.queue_name) is True
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert len(runs) == 3 and len(set(runs)) == 3


def test_a_stop_while_waiting_for_redis_ends_the_wait(monkeypatch):
    """A stop asked for while the wait for Redis pauses between tries ends the wait then,
    not when the pause is over (here 600 s, longer than the test waits)."""
    monkeypatch.setattr(worker_module, "RECONNECT_MIN_S", 600.0)
    stop = threading.Event()
    client = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}")  # no retries
    tried = threading.Event()
    ping = client.ping

    def first_try():
        tried.set()
        return ping()

    monkeypatch.setattr(client, "ping", first_try)
    returned = []
    waiter = threading.Thread(target=lambda: returned.append(
        worker_module._wait_for_redis(client, stop, "redis://nowhere")), daemon=True)
    waiter.start()
    assert tried.wait(30), "the wait never tried Redis"
    stop.set()
    waiter.join(60)
    assert not waiter.is_alive(), "the stop did not end the wait"
    assert returned == [False]


# -- a Redis Cluster failover under the API ---------------------------------------------------

CLIENTS = 8
#: Longest an append may keep failing once the cluster has healed.
RECOVERY_S = 30.0
#: A client's pause after each 201: its game (12x12 boxes, 312 moves) lasts past the failover.
PACE_S = 0.08


def test_a_master_failover_under_load_loses_no_acknowledged_move(
        redis_cluster, settings, tmp_path, monkeypatch):
    """The API on the session's Redis Cluster (3 masters, a replica each) with
    ``BOXFISH_MIN_REPLICAS_ACK=1``, the setting where a 201 survives a master's loss: 8
    clients append to their own games (:class:`~.failover_load.Player`: random legal moves,
    503s retried with the same Idempotency-Key, 409s checked against what was acknowledged),
    half of them on one master. That master is SIGKILLed; its replica takes over (without a
    replica of its own: appends there get 503 ``not_replicated`` while the other games go on)
    until the old master is back as its replica. The clients see only 201, 409 and 503 (with
    Retry-After); no serial gets two 201s, no 409 is below an acknowledged serial, every
    acknowledged entry is in its game's log afterwards at its serial and position; every
    client gets 201s again within :data:`RECOVERY_S` of the cluster's recovery; the API is
    never restarted."""
    from boxfish.service.store.keys import KeySpace

    redis_cluster.ensure_healthy()
    monkeypatch.setenv("BOXFISH_QUEUE_REDIS_URL", settings.redis_url)
    monkeypatch.setenv("BOXFISH_MIN_REPLICAS_ACK", "1")
    monkeypatch.setenv("BOXFISH_REPLICA_ACK_TIMEOUT_MS", "500")
    monkeypatch.setenv("BOXFISH_REDIS_SOCKET_TIMEOUT_S", "2")
    monkeypatch.delenv("BOXFISH_REDIS_CLUSTER", raising=False)
    own = settings.model_copy(update={"redis_url": redis_cluster.url,
                                      "request_timeout_s": REQUEST_TIMEOUT_S,
                                      "operator_token": OPERATOR_TOKEN,
                                      "key_prefix": f"{settings.key_prefix}-failover"})
    port = free_port()
    api = start_gunicorn(own, port, tmp_path / "api.log", threads=CLIENTS + 4)
    keys = KeySpace(own.key_prefix)
    try:
        # Games: half on the master to be killed, half elsewhere.
        victim = None
        on_victim, elsewhere = [], []
        while len(on_victim) < CLIENTS // 2 or len(elsewhere) < CLIENTS // 2:
            status, _, game, _ = call(port, "POST", "/v1/games",
                                      {"game": "dots-and-boxes", "width": 12, "height": 12})
            assert status == 201, game
            master = redis_cluster.node_for_key(keys.game_log(game["id"]))
            victim = victim or master
            pick = on_victim if master is victim else elsewhere
            if len(pick) < CLIENTS // 2:
                pick.append(game)
        games = on_victim + elsewhere

        ledger = Ledger()
        load = Load([Player(i, game, port, ledger, seed=30) for i, game in enumerate(games)],
                    PACE_S).start()
        try:
            failover = fail_over_under_load(redis_cluster, victim, load,
                                            on_victim=set(range(len(on_victim))),
                                            recovery_s=RECOVERY_S)
        finally:
            hung = load.stop()
        print(f"\nfailover: {failover}; answers {dict(ledger.statuses)}, 503s "
              f"{dict(ledger.problems)}; {len(ledger.acks)} moves acknowledged")
        check_answers(ledger, hung)
        with contextlib.closing(redis_cluster.client(decode_responses=True)) as store:
            logs = compare_logs(port, store, keys, ledger, [g["id"] for g in games])
        ledger.assert_no_loss()
        # The feed has every game's log as it is (so every acknowledged move), positions too.
        feed = read_feed(http_get(f"http://127.0.0.1:{port}"))
        assert {g: feed.moves[g] for g in logs} == logs
        assert api.poll() is None
    finally:
        stop_process(api)
        redis_cluster.ensure_healthy()
