"""The service's Redis connections (``service.store.connections``), their settings, and what the
service says when it cannot start with them.

* The settings of the cluster and of replicated acknowledgements: defaults, environment
  names, bad values refused at start with a message naming the variable.
* The connections built from them: a plain ``redis.Redis`` with the service's timeouts and
  retry, or a ``RedisCluster`` when ``REDIS_URL`` is a cluster (detected or forced); the job
  queue always on a plain Redis.
* A cluster without ``BOXFISH_QUEUE_REDIS_URL``: ``create_app``, ``boxfish serve`` and
  ``boxfish worker`` refuse to start and say exactly that; a queue URL that is a cluster node
  is refused too.
* The app on a one-node Redis Cluster (all 16384 slots on one redis-server) with a plain queue
  Redis: its recorder gets the settings' replica and idempotency options; games, moves,
  event streams work.
* Every redis-py error of an outage or failover is a 503 ``store-unavailable``, an append
  not replicated in time a 503 ``not_replicated``, both with ``Retry-After`` and as
  openapi.yaml documents them for every route.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time

import pytest
import redis
from pydantic import ValidationError
from redis.cluster import RedisCluster

from boxfish.service.application import wiring
from boxfish.service.config import Settings
from boxfish.service.http.app import create_app
from boxfish.service.http.errors import to_problem
from boxfish.service.runtime.embedded_redis import redis_server_binary
from boxfish.service.store import connections
from boxfish.service.store.connections import store_unavailable
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import InMemoryRecorder, NotReplicated

from .conftest import CheckedClient, stop_process

# -- servers of the tests' own -------------------------------------------------------------------


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cluster_port() -> int:
    """A port whose cluster bus port (+10000) is free as well. Both are below the ports of
    the session's 3-master cluster (``tests/redis_cluster.py``: 12000 to 32000 with its bus)
    and of the kernel's ephemeral range, so no node of that cluster, restarted on its own
    port, finds it taken."""
    for _ in range(1000):
        port = random.randrange(1100, 2000)
        if _free(port) and _free(port + 10000):
            return port
    raise RuntimeError("no free port pair")


def _unused_port() -> int:
    """A port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClusterNode:
    """One redis-server with ``cluster-enabled yes``; ``serve_all_slots()`` makes it a
    one-node cluster that serves every slot."""

    def __init__(self, directory) -> None:
        self.port = _cluster_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        os.makedirs(directory, exist_ok=True)
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(directory), "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf", "--appendonly", "no", "--save", "",
             "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.client = redis.Redis(port=self.port, socket_timeout=5, decode_responses=True)
        self._wait(lambda: self.client.ping(), "did not start")

    def serve_all_slots(self) -> ClusterNode:
        self.client.execute_command("CLUSTER ADDSLOTS", *range(16384))
        self._wait(lambda: self.client.cluster("INFO")["cluster_state"] == "ok",
                   "did not serve its slots")
        return self

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + 20
        while True:
            try:
                if ready():
                    return
            except redis.RedisError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"cluster node on port {self.port} {what}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        stop_process(self.process, 5)


@pytest.fixture(scope="module")
def cluster_node(tmp_path_factory):
    """A redis-server in cluster mode (no slots: enough to be detected)."""
    node = ClusterNode(tmp_path_factory.mktemp("cluster-node"))
    yield node
    node.stop()


@pytest.fixture(scope="module")
def one_node_cluster(tmp_path_factory):
    node = ClusterNode(tmp_path_factory.mktemp("one-node-cluster")).serve_all_slots()
    yield node
    node.stop()


# -- settings ------------------------------------------------------------------------------------


def test_the_cluster_and_replica_settings_and_their_defaults(monkeypatch):
    for name in ("BOXFISH_REDIS_CLUSTER", "BOXFISH_MIN_REPLICAS_ACK",
                 "BOXFISH_REPLICA_ACK_TIMEOUT_MS", "BOXFISH_IDEMPOTENCY_TTL_S"):
        monkeypatch.delenv(name, raising=False)
    s = Settings()
    assert (s.redis_cluster, s.min_replicas_ack, s.replica_ack_timeout_ms,
            s.idempotency_ttl_s) == ("auto", 0, 1000, 86400)
    monkeypatch.setenv("BOXFISH_REDIS_CLUSTER", "Yes")
    monkeypatch.setenv("BOXFISH_MIN_REPLICAS_ACK", "2")
    monkeypatch.setenv("BOXFISH_REPLICA_ACK_TIMEOUT_MS", "250")
    monkeypatch.setenv("BOXFISH_IDEMPOTENCY_TTL_S", "3600")
    s = Settings()
    assert (s.redis_cluster, s.min_replicas_ack, s.replica_ack_timeout_ms,
            s.idempotency_ttl_s) == ("yes", 2, 250, 3600)
    for raw, mode in (("no", "no"), ("false", "no"), ("AUTO", "auto"), ("true", "yes")):
        monkeypatch.setenv("BOXFISH_REDIS_CLUSTER", raw)
        assert Settings().redis_cluster == mode


@pytest.mark.parametrize("env, message", [
    ({"BOXFISH_REDIS_CLUSTER": "sometimes"}, "BOXFISH_REDIS_CLUSTER must be auto, yes or no"),
    ({"BOXFISH_MIN_REPLICAS_ACK": "-1"}, "min_replicas_ack"),
    ({"BOXFISH_MIN_REPLICAS_ACK": "one"}, "min_replicas_ack"),
    ({"BOXFISH_REPLICA_ACK_TIMEOUT_MS": "0"}, "replica_ack_timeout_ms"),
    ({"BOXFISH_REPLICA_ACK_TIMEOUT_MS": "600000"}, "replica_ack_timeout_ms"),
    ({"BOXFISH_IDEMPOTENCY_TTL_S": "0"}, "idempotency_ttl_s"),
    ({"BOXFISH_IDEMPOTENCY_TTL_S": "-5"}, "idempotency_ttl_s"),
    # WAIT blocks on the store's connection: it must end within the socket timeout.
    ({"BOXFISH_MIN_REPLICAS_ACK": "1", "BOXFISH_REPLICA_ACK_TIMEOUT_MS": "4500"},
     "BOXFISH_REPLICA_ACK_TIMEOUT_MS (4500) must be at most 4000 with "
     "BOXFISH_REDIS_SOCKET_TIMEOUT_S 5"),
    ({"BOXFISH_MIN_REPLICAS_ACK": "1", "BOXFISH_REDIS_SOCKET_TIMEOUT_S": "1"},
     "BOXFISH_REPLICA_ACK_TIMEOUT_MS (1000) must be at most 500"),
])
def test_bad_values_fail_at_start(monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings()


def test_a_long_replica_wait_is_fine_without_replicas_or_with_a_long_socket_timeout():
    assert Settings(replica_ack_timeout_ms=30_000).replica_ack_timeout_ms == 30_000
    assert Settings(min_replicas_ack=1, replica_ack_timeout_ms=9000,
                    redis_socket_timeout_s=10).min_replicas_ack == 1


# -- connections ---------------------------------------------------------------------------------


def test_a_plain_store_and_its_queue(settings):
    own = settings.model_copy(update={"redis_socket_timeout_s": 3.0})
    conns = connections.connect(own)
    try:
        assert not conns.cluster and type(conns.store) is redis.Redis
        assert conns.queue is conns.store  # no queue URL: the store's Redis holds the queue
        kwargs = conns.store.connection_pool.connection_kwargs
        assert kwargs["socket_timeout"] == 3.0
        assert kwargs["socket_connect_timeout"] == connections.CONNECT_TIMEOUT_S
        assert kwargs["health_check_interval"] == connections.HEALTH_CHECK_INTERVAL_S
        # One retry when a connection broke, none after a timeout.
        retry = kwargs["retry"]
        assert retry.get_retries() == 1
        assert redis.exceptions.ConnectionError in retry._supported_errors
        assert redis.exceptions.TimeoutError not in retry._supported_errors
        assert conns.store.ping()
    finally:
        conns.close()
    with_queue = own.model_copy(update={"queue_redis_url": own.redis_url})
    conns = connections.connect(with_queue)
    try:
        assert conns.queue is not conns.store and type(conns.queue) is redis.Redis
        assert conns.queue.connection_pool.connection_kwargs["socket_timeout"] == 3.0
    finally:
        conns.close()


def test_detection_asks_the_server(settings, cluster_node):
    assert connections.cluster_enabled(settings.redis_url, settings) is False
    assert connections.cluster_enabled(cluster_node.url, settings) is True
    s = settings.model_copy(update={"redis_url": cluster_node.url})
    assert connections.store_is_cluster(s) is True
    assert connections.store_is_cluster(s.model_copy(update={"redis_cluster": "no"})) is False
    plain = settings.model_copy(update={"redis_cluster": "yes"})
    assert connections.store_is_cluster(plain) is True  # forced: not asked


def test_a_store_that_does_not_answer_at_start(settings):
    url = f"redis://127.0.0.1:{_unused_port()}/0"
    s = settings.model_copy(update={"redis_url": url})
    start = time.monotonic()
    with pytest.raises(connections.ConfigurationError,
                       match="did not answer within 0.6 s.*BOXFISH_REDIS_CLUSTER to yes or no"):
        connections.connect(s, wait_s=0.6)
    # It gave up after the wait asked for, not the default's 15 s (a loaded host's lateness
    # cannot make up the difference).
    assert time.monotonic() - start < connections.STARTUP_WAIT_S
    # Told that it is a single server, the API starts without it, and answers 503 until it
    # is there.
    app = create_app(s.model_copy(update={"redis_cluster": "no"}))
    resp = app.test_client().get("/v1/games/abc")
    assert resp.status_code == 503 and resp.json["reason"] == "store_unavailable"
    assert resp.headers["Retry-After"]
    app.extensions["boxfish"].redis.close()


def test_passwords_are_not_shown():
    assert connections._shown("redis://user:secret@host:1/0") == "redis://user:***@host:1/0"
    assert connections._shown("redis://host:1/0") == "redis://host:1/0"


# -- a cluster without a queue Redis -------------------------------------------------------------


def test_a_cluster_without_a_queue_redis_is_refused(settings, cluster_node):
    s = settings.model_copy(update={"redis_url": cluster_node.url, "queue_redis_url": None})
    with pytest.raises(connections.ConfigurationError) as caught:
        connections.connect(s)
    assert str(caught.value) == connections.QUEUE_NEEDED
    assert "BOXFISH_QUEUE_REDIS_URL" in connections.QUEUE_NEEDED
    with pytest.raises(connections.ConfigurationError, match="BOXFISH_QUEUE_REDIS_URL"):
        create_app(s)
    # Forced: refused at once, without asking (nothing listens there).
    forced = s.model_copy(update={"redis_cluster": "yes",
                                  "redis_url": f"redis://127.0.0.1:{_unused_port()}"})
    with pytest.raises(connections.ConfigurationError, match="BOXFISH_QUEUE_REDIS_URL"):
        connections.connect(forced)
    with pytest.raises(connections.ConfigurationError, match="BOXFISH_QUEUE_REDIS_URL"):
        connections.worker_queue_url(forced)


def test_a_queue_redis_that_is_a_cluster_node_is_refused(settings, cluster_node):
    s = settings.model_copy(update={"queue_redis_url": cluster_node.url})
    with pytest.raises(connections.ConfigurationError, match="BOXFISH_QUEUE_REDIS_URL is a "
                                                             "Redis Cluster node"):
        connections.connect(s)
    with pytest.raises(connections.ConfigurationError, match="BOXFISH_QUEUE_REDIS_URL"):
        connections.worker_queue_url(s)


def _env_without_redis(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "BOXFISH_REDIS_URL", "BOXFISH_QUEUE_REDIS_URL",
                        "BOXFISH_REDIS_CLUSTER")}
    env.update(extra)
    return env


@pytest.mark.parametrize("command", [["serve", "--port", "0", "--workers", "0"], ["worker"],
                                     ["worker", "--workers", "2"]])
def test_the_commands_refuse_a_cluster_without_a_queue_redis(cluster_node, command):
    proc = subprocess.run([sys.executable, "-m", "boxfish.service.runtime.cli", *command],
                          env=_env_without_redis(REDIS_URL=cluster_node.url),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert connections.QUEUE_NEEDED in proc.stderr


def test_the_worker_takes_its_jobs_from_the_queue_redis_only(settings):
    # With a queue Redis, nothing is asked of REDIS_URL at start (only an engine move reads
    # the store, on first use).
    s = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{_unused_port()}",
                                    "queue_redis_url": settings.redis_url})
    assert connections.worker_queue_url(s) == settings.redis_url
    # Without one, REDIS_URL holds the queue (once it says it is no cluster).
    s = settings.model_copy(update={"queue_redis_url": None})
    assert connections.worker_queue_url(s) == settings.redis_url
    with pytest.raises(connections.ConfigurationError, match="set REDIS_URL"):
        connections.worker_queue_url(s.model_copy(update={"redis_url": None}))


# -- the app on a cluster ------------------------------------------------------------------------


def test_the_app_on_a_one_node_cluster(settings, one_node_cluster, spec, monkeypatch):
    seen = {}
    real = wiring.RedisRecorder

    class SpyRecorder(real):
        def __init__(self, connection, keys=None, *, min_replicas=0, replica_timeout_ms=1000,
                     idempotency_ttl_s=86400, recent_kept=1000):
            seen.update(connection=connection, min_replicas=min_replicas,
                        replica_timeout_ms=replica_timeout_ms,
                        idempotency_ttl_s=idempotency_ttl_s, recent_kept=recent_kept)
            super().__init__(connection, keys, min_replicas=min_replicas,
                             replica_timeout_ms=replica_timeout_ms,
                             idempotency_ttl_s=idempotency_ttl_s, recent_kept=recent_kept)

    monkeypatch.setattr(wiring, "RedisRecorder", SpyRecorder)
    s = settings.model_copy(update={"redis_url": one_node_cluster.url,
                                    "queue_redis_url": settings.redis_url,
                                    "replica_ack_timeout_ms": 700, "idempotency_ttl_s": 120,
                                    "recent_games_kept": 50})
    app = create_app(s)
    services = app.extensions["boxfish"]
    try:
        assert isinstance(services.redis, RedisCluster)
        assert type(services.queue_redis) is redis.Redis
        assert services.queue_redis.connection_pool.connection_kwargs["socket_timeout"] == (
            s.redis_socket_timeout_s)
        assert services.redis.retry.get_retries() == connections.CLUSTER_RETRIES
        node = services.redis.get_nodes()[0]
        assert node.redis_connection.connection_pool.connection_kwargs["socket_timeout"] == (
            s.redis_socket_timeout_s)
        assert seen == {"connection": services.redis, "min_replicas": 0,
                        "replica_timeout_ms": 700, "idempotency_ttl_s": 120,
                        "recent_kept": 50}

        client = CheckedClient(app.test_client(), spec)
        resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2})
        assert resp.status_code == 201
        gid, auth = resp.json["id"], {"Authorization": f"Bearer {resp.json['write_token']}"}
        for serial, move in enumerate(([1, 1, 1], [1, 2, 1]), start=1):
            resp = client.post(f"/v1/games/{gid}/moves", json={"move": move},
                               headers={**auth, "Idempotency-Key": f"k{serial}"})
            assert resp.status_code == 201 and resp.json["serial"] == serial
        again = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                            headers={**auth, "Idempotency-Key": "k1"})
        assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
        listed = client.get(f"/v1/games/{gid}/moves").json
        assert [m["move"] for m in listed["moves"]] == [[1, 1, 1], [1, 2, 1]]
        assert client.get(f"/v1/games/{gid}").json["serial"] == 2
        stream = client.get(f"/v1/games/{gid}/events?after=1", buffered=False)
        first = next(iter(stream.response))
        stream.close()
        assert b"id: 2" in first and b"event: move" in first
        # The store's keys are on the cluster, none on the queue's Redis.
        log_key = KeySpace(s.key_prefix).game_log(gid)
        assert one_node_cluster.client.exists(log_key)
        assert not services.queue_redis.exists(log_key)
    finally:
        services.redis.close()
        services.queue_redis.close()


# -- outages and failovers are 503s --------------------------------------------------------------

E = redis.exceptions
OUTAGE_ERRORS = [
    E.ConnectionError("Error 111 connecting to 127.0.0.1:7000. Connection refused."),
    E.TimeoutError("Timeout reading from socket"),
    E.BusyLoadingError("Redis is loading the dataset in memory"),
    E.ClusterDownError("The cluster is down"),
    E.MasterDownError("Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
    E.TryAgainError("Multiple keys request during rehashing of slot"),
    E.ReadOnlyError("You can't write against a read only replica."),
    E.ClusterError("TTL exhausted."),
    E.SlotNotCoveredError('Slot "42" is not covered by the cluster.'),
    E.RedisClusterException("Redis Cluster cannot be connected. Please provide at least one "
                            "reachable node"),
    E.OutOfMemoryError("command not allowed when used memory > 'maxmemory'."),
    E.ResponseError("NOREPLICAS Not enough good replicas to write."),
    E.ResponseError("UNBLOCKED force unblock from blocking operation, instance state changed "
                    "(master -> replica?)"),
    E.ResponseError("BUSY Redis is busy running a script."),
    E.MaxConnectionsError("Too many connections"),
]
NOT_OUTAGES = [
    E.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"),
    E.DataError("Invalid input of type: 'dict'"),
    E.ClusterCrossSlotError("Keys in request don't hash to the same slot"),
    E.CrossSlotTransactionError("keys in different slots"),
    E.NoScriptError("No matching script."),
    ValueError("anything else"),
]


@pytest.mark.parametrize("exc", OUTAGE_ERRORS, ids=lambda e: type(e).__name__)
def test_every_outage_error_is_a_503(exc):
    assert store_unavailable(exc)
    problem = to_problem(exc)
    assert problem.status == 503 and problem.slug == "store-unavailable"
    assert problem.extensions["reason"] == "store_unavailable"
    assert int(problem.headers["Retry-After"]) > 0


@pytest.mark.parametrize("exc", NOT_OUTAGES, ids=lambda e: type(e).__name__)
def test_mistakes_are_not_outages(exc):
    assert not store_unavailable(exc)
    assert to_problem(exc) is None  # a logged 500


class FailingRecorder(InMemoryRecorder):
    """A recorder whose every call after ``fail`` is set raises it."""

    fail: Exception | None = None

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        failure = super().__getattribute__("fail")
        if failure is not None and name in ("create_game", "get_meta", "append", "read",
                                            "wait", "lookup_idempotency"):
            def raise_it(*args, **kwargs):
                raise failure
            return raise_it
        return attr


@pytest.mark.parametrize("exc", [E.ClusterDownError("The cluster is down"),
                                 E.TryAgainError("slot migrating"),
                                 E.ReadOnlyError("You can't write against a read only replica."),
                                 E.RedisClusterException("Redis Cluster cannot be connected")],
                         ids=lambda e: type(e).__name__)
def test_every_store_route_answers_a_documented_503(settings, redis_client, spec, exc):
    recorder = FailingRecorder()
    app = create_app(settings, connection=redis_client, recorder=recorder)
    client = CheckedClient(app.test_client(), spec)  # every answer checked against the spec
    made = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2})
    gid, auth = made.json["id"], {"Authorization": f"Bearer {made.json['write_token']}"}
    recorder.fail = exc
    answers = [
        client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2}),
        client.get(f"/v1/games/{gid}"),
        client.get(f"/v1/games/{gid}/index"),
        client.get(f"/v1/games/{gid}/moves"),
        client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth),
        client.get(f"/v1/games/{gid}/events"),
        client.post(f"/v1/games/{gid}/analyses", json={"time_ms": 100}),
    ]
    for resp in answers:
        assert resp.status_code == 503, (resp.request.path, resp.json)
        assert resp.mimetype == "application/problem+json"
        assert resp.json["type"].endswith(":store-unavailable")
        assert int(resp.headers["Retry-After"]) > 0


def test_an_append_not_replicated_in_time_is_a_503_not_replicated(settings, redis_client, spec):
    class Unreplicated(InMemoryRecorder):
        def append(self, game_id, expected_serial, event, idempotency_key=None,
                   fingerprint="", expected_head=None):
            super().append(game_id, expected_serial, event, idempotency_key, fingerprint,
                           expected_head)
            raise NotReplicated(event.serial, 0, 1)

    app = create_app(settings, connection=redis_client, recorder=Unreplicated())
    client = CheckedClient(app.test_client(), spec)
    made = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2})
    gid, auth = made.json["id"], {"Authorization": f"Bearer {made.json['write_token']}"}
    resp = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                       headers={**auth, "Idempotency-Key": "once"})
    assert resp.status_code == 503 and resp.mimetype == "application/problem+json"
    body = resp.json
    assert body["type"].endswith(":not-replicated") and body["reason"] == "not_replicated"
    assert body["serial"] == 1 and body["replicas_acked"] == 0
    assert "same Idempotency-Key" in body["detail"]
    assert int(resp.headers["Retry-After"]) > 0
    # The move is in the log all the same.
    assert client.get(f"/v1/games/{gid}/moves").json["serial"] == 1
    problem = to_problem(NotReplicated(7, 1, 2))
    assert problem.status == 503 and "only 1 of the 2 required replicas" in problem.detail
