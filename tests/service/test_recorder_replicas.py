"""Replicated acknowledgements (``min_replicas``) on one Redis server: without replicas, and
with a replica of its own that the tests freeze (SIGSTOP) and thaw."""

from __future__ import annotations

import contextlib
import signal
import time

import pytest
import redis

from boxfish.service.runtime.embedded_redis import EmbeddedRedis
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import IdempotencyKeyReused, NotReplicated
from boxfish.service.store.redis_recorder import RedisRecorder
from tests.service.conftest import commands_run
from tests.service.test_recorder_cluster import create, ev

#: How late an append that waited ``replica_timeout_ms`` may return on a loaded host; one
#: that waited for ever (``WAIT``'s 0) or the socket timeout would not return.
LATE_S = 9.0


def test_without_replicas_min_replicas_1_is_not_replicated_after_its_timeout(settings,
                                                                            redis_client):
    """The append sends ``WAIT 1 50`` (the replica timeout asked for; never 0, for ever),
    once, or twice where the server first had to load the script (``NOSCRIPT``: the pair is
    sent again), and fails with NotReplicated once that has run out."""
    keys = KeySpace(settings.key_prefix)
    recorder = RedisRecorder(redis_client, keys, min_replicas=1, replica_timeout_ms=50)
    gid = create(recorder, "lonely")
    with commands_run(settings.redis_url, "WAIT") as waits:
        start = time.monotonic()
        with pytest.raises(NotReplicated) as info:
            recorder.append(gid, 1, ev(1), "k1", "fp")
        elapsed = time.monotonic() - start
    assert waits in ([["1", "50"]], [["1", "50"]] * 2), waits
    assert 0.05 * len(waits) <= elapsed < 0.05 * len(waits) + LATE_S
    assert (info.value.serial, info.value.acked, info.value.required) == (1, 0, 1)
    assert "1" in str(info.value)
    # Stored all the same, and nothing rolled back.
    assert recorder.read(gid) == [ev(1)] and recorder.get_meta(gid).serial == 1
    with pytest.raises(NotReplicated):
        recorder.append(gid, 1, ev(1), "k1", "fp")
    with pytest.raises(NotReplicated):
        recorder.lookup_idempotency(gid, "k1")
    with pytest.raises(IdempotencyKeyReused):
        recorder.append(gid, 2, ev(2), "k1", "other")
    assert recorder.lookup_idempotency(gid, "never-used") is None
    # Without the requirement the record replays.
    assert RedisRecorder(redis_client, keys).append(gid, 1, ev(1), "k1", "fp").replayed


@pytest.mark.parametrize("options", [{"min_replicas": -1}, {"min_replicas": 1.5},
                                     {"replica_timeout_ms": 0}, {"idempotency_ttl_s": 0}])
def test_bad_options(redis_client, options):
    with pytest.raises(ValueError):
        RedisRecorder(redis_client, **options)


class _Replica(EmbeddedRedis):
    def __init__(self, data_dir: str, master: EmbeddedRedis) -> None:
        super().__init__(data_dir, appendfsync="everysec")
        self.master = master

    def command(self) -> list[str]:
        # No AOF: a replica that has just synced rewrites it and refuses SIGTERM meanwhile.
        cmd = super().command()
        cmd[cmd.index("--appendonly") + 1] = "no"
        return cmd + ["--replicaof", self.master.host, str(self.master.port)]


def wait_in_sync(master: redis.Redis, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        info = master.info("replication")
        replica = info.get("slave0") or {}
        if info.get("connected_slaves") == 1 and replica.get("state") == "online":
            return
        assert time.monotonic() < deadline, f"the replica did not sync: {info}"
        time.sleep(0.05)


@pytest.fixture
def master_and_replica(tmp_path):
    master = EmbeddedRedis(str(tmp_path / "master"), appendfsync="everysec").start()
    replica = None
    try:
        replica = _Replica(str(tmp_path / "replica"), master).start()
        yield master, replica
    finally:
        if replica is not None:
            with contextlib.suppress(ProcessLookupError):
                replica.process.send_signal(signal.SIGCONT)
            replica.stop()
        master.stop()


def test_an_append_waits_for_its_own_write_on_its_own_connection(master_and_replica):
    """The replica is frozen (SIGSTOP, still connected): an append is NotReplicated. A retry
    on a brand-new connection, which has written nothing, is NotReplicated too: the retry
    rewrites the record before its WAIT, so WAIT waits for a write after the move (on Redis 7
    a bare WAIT there would count the frozen replica, which has acknowledged everything up to
    the connection's offset: 0; Redis 6.2 moves that offset with every command). Once the
    replica runs again, the retry replays."""
    master, replica = master_and_replica
    conn = redis.Redis.from_url(master.url)
    with contextlib.closing(conn):
        wait_in_sync(conn)
        recorder = RedisRecorder(conn, min_replicas=1, replica_timeout_ms=2000)
        gid = create(recorder, "frozen")
        assert not recorder.append(gid, 1, ev(1), "k1", "fp").replayed
        with contextlib.closing(redis.Redis.from_url(replica.url)) as on_replica:
            assert on_replica.xlen(KeySpace().game_log(gid)) == 1  # there at once

        replica.process.send_signal(signal.SIGSTOP)
        short = RedisRecorder(conn, min_replicas=1, replica_timeout_ms=200)
        with pytest.raises(NotReplicated) as info:
            short.append(gid, 2, ev(2), "k2", "fp")
        assert (info.value.serial, info.value.acked) == (2, 0)
        for _ in range(2):
            with contextlib.closing(redis.Redis.from_url(master.url)) as fresh:
                retry = RedisRecorder(fresh, min_replicas=1, replica_timeout_ms=200)
                with pytest.raises(NotReplicated):
                    retry.append(gid, 2, ev(2), "k2", "fp")
            with contextlib.closing(redis.Redis.from_url(master.url)) as fresh:
                with pytest.raises(NotReplicated):
                    RedisRecorder(fresh, min_replicas=1,
                                  replica_timeout_ms=200).lookup_idempotency(gid, "k2")

        replica.process.send_signal(signal.SIGCONT)
        with contextlib.closing(redis.Redis.from_url(master.url)) as fresh:
            retry = RedisRecorder(fresh, min_replicas=1, replica_timeout_ms=3000)
            again = retry.append(gid, 2, ev(2), "k2", "fp")
            assert again.replayed and again.event == ev(2)
            assert retry.lookup_idempotency(gid, "k2") == ("fp", 2)
        assert recorder.read(gid) == [ev(1), ev(2)]


def test_a_replica_that_joins_later_makes_the_retry_succeed(tmp_path):
    """No replica when the move is appended; one attaches (full sync); the retry replays."""
    master = EmbeddedRedis(str(tmp_path / "master"), appendfsync="everysec").start()
    replica = None
    conn = redis.Redis.from_url(master.url)
    try:
        recorder = RedisRecorder(conn, min_replicas=1, replica_timeout_ms=100)
        gid = create(recorder, "late")
        with pytest.raises(NotReplicated):
            recorder.append(gid, 1, ev(1), "k1", "fp")
        replica = _Replica(str(tmp_path / "replica"), master).start()
        wait_in_sync(conn)
        again = RedisRecorder(conn, min_replicas=1, replica_timeout_ms=3000).append(
            gid, 1, ev(1), "k1", "fp")
        assert again.replayed and again.event == ev(1)
    finally:
        conn.close()
        if replica is not None:
            replica.stop()
        master.stop()
