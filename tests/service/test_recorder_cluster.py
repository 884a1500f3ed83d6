"""The Redis recorder on a real Redis Cluster (3 masters, one replica each): games on every
master, one slot per game, the record layout, replicated acknowledgements (``min_replicas``),
and, on a cluster of its own, slot moves and a failover under the recorder.

The contract suite (``test_recorder_contract.py``) runs on the cluster as well."""

from __future__ import annotations

import contextlib
import itertools
import time

import pytest
import redis

from boxfish.service.store.events import MoveEvent
from boxfish.service.store.feed import partition_of
from boxfish.service.store.game_meta import GameMeta
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import IdempotencyKeyReused, NotReplicated, SerialConflict
from boxfish.service.store.redis_recorder import RedisRecorder
from tests.redis_cluster import RedisClusterProcesses
from tests.service.conftest import assert_blocking_reads, commands_run

#: How late a call that waited its timeout may return on a loaded host (one that waited for
#: ever, or for its socket timeout, would not return).
LATE_S = 9.0


def ev(serial: int) -> MoveEvent:
    return MoveEvent(serial=serial, move=(serial, 1, 1), player=serial % 2, completed=0,
                     scores=(0, 0), to_move=1 - serial % 2, status="in_progress", at=serial)


def create(recorder: RedisRecorder, gid: str) -> str:
    recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                  params={"width": 2, "height": 2}, token_sha256="t",
                                  created_at=1))
    return gid


def games_on_every_master(cluster: RedisClusterProcesses, keys: KeySpace, tag: str) -> dict:
    """{master node: a game id whose keys that master serves}, one per master."""
    masters = cluster.masters()
    found = {}
    for i in itertools.count():
        gid = f"{tag}-{i}"
        node = cluster.node_for_key(keys.game_meta(gid))
        found.setdefault(node, gid)
        if len(found) == len(masters):
            return found
        assert i < 1000


@pytest.fixture(scope="module")
def cluster(redis_cluster):
    redis_cluster.ensure_healthy()
    return redis_cluster


@pytest.fixture(scope="module")
def client(cluster):
    c = cluster.client(socket_timeout=5.0)
    yield c
    c.close()


@pytest.fixture(scope="module")
def keys(settings) -> KeySpace:
    return KeySpace(settings.key_prefix)


def test_the_fixture_is_a_cluster_of_three_masters_with_a_replica_each(cluster, client):
    masters, replicas = cluster.masters(), cluster.replicas()
    assert len(masters) == 3 and len(replicas) == 3
    assert sorted(cluster.master_of(r).name for r in replicas) == sorted(m.name for m in masters)
    for node in cluster.nodes:
        assert cluster.info(node)["cluster_state"] == "ok"
    assert {n.name for n in client.get_primaries()} == {m.name for m in masters}
    assert {n.name for n in client.get_replicas()} == {r.name for r in replicas}


def test_a_games_keys_share_one_slot(cluster, keys):
    gid = "slot-check"
    slots = {cluster.keyslot(k) for k in (
        keys.game_meta(gid), keys.game_log(gid), keys.game_webhooks(gid),
        keys.idempotency_record(gid, "some key"), keys.idempotency_record(gid, "{other}"),
        keys.feed(partition_of(gid)))}
    assert slots == {cluster.keyslot(f"{{games:{partition_of(gid)}}}")}
    assert redis.cluster.key_slot(keys.game_log(gid).encode()) in slots


def test_games_on_every_master(cluster, client, keys):
    """Games whose keys live on each of the three masters: create, append (with and without
    an idempotency key), replay, read, blocking read; the data is on that master."""
    recorder = RedisRecorder(client, keys)
    games = games_on_every_master(cluster, keys, "spread")
    assert len(games) == 3
    for master, gid in games.items():
        assert client.get_node_from_key(keys.game_log(gid)).name == master.name
        create(recorder, gid)
        recorder.append(gid, 1, ev(1), "k1", "fp")
        recorder.append(gid, 2, ev(2))
        assert recorder.append(gid, 3, ev(3), "k1", "fp").replayed
        assert recorder.read(gid) == [ev(1), ev(2)]
        assert recorder.wait(gid, 1, 1.0) == [ev(2)]
        assert recorder.wait(gid, 2, 0.1) == []
        assert recorder.lookup_idempotency(gid, "k1") == ("fp", 1)
        assert recorder.get_meta(gid).serial == 2
        with contextlib.closing(master.client()) as direct:
            assert direct.xlen(keys.game_log(gid)) == 2
            assert direct.get(keys.idempotency_record(gid, "k1")) == "fp 1"


def test_idempotency_record_layout(cluster, client, keys):
    """One String per record, "<fingerprint> <serial>", with the configured TTL."""
    recorder = RedisRecorder(client, keys, idempotency_ttl_s=600)
    gid = create(recorder, "layout")
    recorder.append(gid, 1, ev(1), "the key", "abc")
    record = keys.idempotency_record(gid, "the key")
    assert record.endswith(":idem:" + __import__("hashlib").sha256(b"the key").hexdigest())
    assert client.get(record) == b"abc 1"
    assert 590_000 < client.pttl(record) <= 600_000
    assert RedisRecorder(client, keys).idempotency_ttl_s == 86400  # the default: 24 h


def test_min_replicas_1_acknowledges_what_the_replica_has(cluster, client, keys):
    """With one replica per master, ``min_replicas=1`` appends on every master; once an
    append returns, the master's replica has the move (read there, at once)."""
    recorder = RedisRecorder(client, keys, min_replicas=1, replica_timeout_ms=3000)
    for master, gid in games_on_every_master(cluster, keys, "acked").items():
        create(recorder, gid)
        (replica,) = cluster.replicas_of(master)
        with contextlib.closing(replica.client()) as on_replica:
            on_replica.execute_command("READONLY")
            for serial in (1, 2, 3):
                appended = recorder.append(gid, serial, ev(serial), f"k{serial}", "fp")
                assert not appended.replayed
                assert on_replica.xlen(keys.game_log(gid)) == serial
                assert on_replica.get(keys.idempotency_record(gid, f"k{serial}")) == \
                    f"fp {serial}"
        assert recorder.append(gid, 4, ev(4), "k2", "fp").replayed
        assert recorder.lookup_idempotency(gid, "k3") == ("fp", 3)
        with pytest.raises(SerialConflict):
            recorder.append(gid, 2, ev(2))


def test_min_replicas_2_is_not_replicated(cluster, client, keys):
    """Each master has one replica: ``min_replicas=2`` never gets there. The move is in the
    log all the same; a retry with its key is NotReplicated again (never a replay), a
    lookup too; another body with that key is still a reuse; serials still conflict."""
    recorder = RedisRecorder(client, keys, min_replicas=2, replica_timeout_ms=400)
    for master, gid in games_on_every_master(cluster, keys, "short").items():
        create(recorder, gid)
        # On the game's master, WAIT 2 400 (once, or again after loading the script) and
        # NotReplicated when it has run out.
        with commands_run(master.url, "WAIT") as waits:
            start = time.monotonic()
            with pytest.raises(NotReplicated) as info:
                recorder.append(gid, 1, ev(1), "k1", "fp")
            elapsed = time.monotonic() - start
        assert waits in ([["2", "400"]], [["2", "400"]] * 2), waits
        assert 0.4 * len(waits) <= elapsed < 0.4 * len(waits) + LATE_S
        assert (info.value.serial, info.value.acked, info.value.required) == (1, 1, 2)
        assert recorder.read(gid) == [ev(1)] and recorder.get_meta(gid).serial == 1
        with pytest.raises(NotReplicated) as again:
            recorder.append(gid, 1, ev(1), "k1", "fp")
        assert (again.value.serial, again.value.acked) == (1, 1)
        with pytest.raises(NotReplicated):
            recorder.lookup_idempotency(gid, "k1")
        with pytest.raises(IdempotencyKeyReused):
            recorder.append(gid, 2, ev(2), "k1", "another-body")
        with pytest.raises(SerialConflict):
            recorder.append(gid, 1, ev(1))
        with pytest.raises(NotReplicated) as plain:
            recorder.append(gid, 2, ev(2))
        assert plain.value.serial == 2
        assert recorder.read(gid) == [ev(1), ev(2)]
        # Enough replicas for a recorder that asks for fewer: the same record replays.
        relaxed = RedisRecorder(client, keys, min_replicas=1, replica_timeout_ms=3000)
        assert relaxed.append(gid, 1, ev(1), "k1", "fp").replayed


def test_the_script_is_loaded_again_where_it_is_missing(cluster, client, keys):
    """A node without the scripts (a restarted or promoted node, a SCRIPT FLUSH) gets them
    again, with and without the WAIT pipeline."""
    games = list(games_on_every_master(cluster, keys, "noscript").values())
    for min_replicas in (0, 1):
        for node in cluster.nodes:
            with contextlib.closing(node.client()) as c:
                c.script_flush()
        recorder = RedisRecorder(client, keys, min_replicas=min_replicas,
                                 replica_timeout_ms=3000)
        for gid in games:
            if min_replicas == 0:
                create(recorder, gid)
            recorder.append(gid, min_replicas + 1, ev(min_replicas + 1), "k", f"fp{gid}")
            assert recorder.lookup_idempotency(gid, "k") == (f"fp{gid}", 1)


def test_replica_timeout_must_be_shorter_than_the_socket_timeout(cluster):
    c = cluster.client(socket_timeout=1.0)
    try:
        with pytest.raises(ValueError, match="socket timeout"):
            RedisRecorder(c, min_replicas=1, replica_timeout_ms=1000)
        RedisRecorder(c, min_replicas=1, replica_timeout_ms=500)
        RedisRecorder(c, replica_timeout_ms=5000)  # no WAIT, no limit
    finally:
        c.close()


def test_wait_on_a_cluster_outlasts_the_socket_timeout(cluster, keys):
    c = cluster.client(socket_timeout=1.0)
    try:
        recorder = RedisRecorder(c, keys)
        gid = create(recorder, "idle-cluster-wait")
        with commands_run(cluster.node_for_key(keys.game_log(gid)).url, "XREAD") as reads:
            start = time.monotonic()
            assert recorder.wait(gid, 0, 2.5) == []
            elapsed = time.monotonic() - start
        assert 2.5 <= elapsed < 2.5 + LATE_S
        assert_blocking_reads(reads, keys.game_log(gid), 1000, 2500)
    finally:
        c.close()


# -- slot moves and failover, on a cluster of this module's own -----------------------------


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    """A cluster these tests may reshard and break (the session's stays as it is)."""
    with RedisClusterProcesses(tmp_path_factory.mktemp("own-cluster")) as c:
        yield c


def start_moving_slot(cluster: RedisClusterProcesses, slot: int, target) -> None:
    """Migrate the keys of ``slot`` to the master ``target`` (``redis-cli --cluster reshard``'s
    first half): IMPORTING/MIGRATING, then MIGRATE every key. The source still owns the slot
    and answers ASK for the keys it no longer has."""
    source = cluster.node_for_slot(slot)
    with contextlib.closing(source.client()) as src, \
            contextlib.closing(target.client()) as dst:
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.node_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.node_id)
        while True:
            names = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
            if not names:
                break
            src.execute_command("MIGRATE", target.host, target.port, "", 0, 5000,
                                "KEYS", *names)


def finish_moving_slot(cluster: RedisClusterProcesses, slot: int, target) -> None:
    """The second half: ``target`` owns ``slot`` (SETSLOT NODE on every master)."""
    for node in cluster.masters():
        with contextlib.closing(node.client()) as c:
            c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target.node_id)
    cluster.wait_until_ok()


def move_slot(cluster: RedisClusterProcesses, slot: int, target) -> None:
    start_moving_slot(cluster, slot, target)
    finish_moving_slot(cluster, slot, target)


@pytest.mark.parametrize("min_replicas", [0, 1])
def test_a_game_follows_its_slot_to_another_master(own_cluster, min_replicas):
    keys = KeySpace(f"moved{min_replicas}")
    client = own_cluster.client(socket_timeout=5.0)
    try:
        recorder = RedisRecorder(client, keys, min_replicas=min_replicas,
                                 replica_timeout_ms=3000)
        gid = create(recorder, "wanderer")
        recorder.append(gid, 1, ev(1), "k1", "fp")
        slot = own_cluster.keyslot(keys.game_log(gid))
        source = own_cluster.node_for_slot(slot)
        target = next(m for m in own_cluster.masters() if m is not source)
        move_slot(own_cluster, slot, target)
        # The client's slot table still names the source: the next commands are MOVED.
        assert client.get_node_from_key(keys.game_log(gid)).name == source.name
        recorder.append(gid, 2, ev(2), "k2", "fp")
        # ... and the first of them brought the table up to date.
        assert client.get_node_from_key(keys.game_log(gid)).name == target.name
        assert recorder.append(gid, 3, ev(3), "k1", "fp").replayed
        assert recorder.read(gid) == [ev(1), ev(2)]
        assert client.get_node_from_key(keys.game_log(gid)).name == target.name
        with contextlib.closing(target.client()) as direct:
            assert direct.xlen(keys.game_log(gid)) == 2
    finally:
        client.close()


@pytest.mark.parametrize("min_replicas", [0, 1])
def test_a_replay_follows_an_ask_redirect_during_a_migration(own_cluster, min_replicas):
    """Halfway through a slot migration the game's keys are on the target, the slot still
    on the source, which answers ASK: a replay (all of its keys exist there) follows it. A new
    append touches a key that exists nowhere yet: TRYAGAIN, a Redis error (the API's 503)."""
    keys = KeySpace(f"asked{min_replicas}")
    client = own_cluster.client(socket_timeout=5.0)
    try:
        recorder = RedisRecorder(client, keys, min_replicas=min_replicas,
                                 replica_timeout_ms=3000)
        gid = create(recorder, "halfway")
        recorder.append(gid, 1, ev(1), "k1", "fp")
        slot = own_cluster.keyslot(keys.game_log(gid))
        source = own_cluster.node_for_slot(slot)
        target = next(m for m in own_cluster.masters() if m is not source)
        start_moving_slot(own_cluster, slot, target)
        try:
            again = recorder.append(gid, 1, ev(1), "k1", "fp")
            assert again.replayed and again.event == ev(1)
            with pytest.raises(redis.RedisError):
                recorder.append(gid, 2, ev(2), "k2", "fp")
        finally:
            finish_moving_slot(own_cluster, slot, target)
        assert not recorder.append(gid, 2, ev(2), "k2", "fp").replayed  # not stored before
        assert recorder.read(gid) == [ev(1), ev(2)]
    finally:
        client.close()


def _until_it_works(call, timeout_s=30.0, expected=(redis.RedisError,)):
    """Call until it returns (errors in ``expected`` are retried); the errors seen."""
    seen = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call(), seen
        except expected as exc:
            seen.append(type(exc).__name__)
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_failover_keeps_acknowledged_moves(own_cluster):
    """``min_replicas=1``: moves acknowledged before the master is SIGKILLed are all on the
    promoted replica. The new master has no replica until the old one returns: an append
    there is stored but NotReplicated, and its retry replays once the old master is back as
    the new one's replica."""
    own_cluster.ensure_healthy()
    keys = KeySpace("failover")
    client = own_cluster.client(socket_timeout=5.0)
    try:
        # A WAIT that is meant to succeed gets the time a loaded host may need (as in the
        # tests above); the short one only bounds the wait that is meant to fail.
        patient = RedisRecorder(client, keys, min_replicas=1, replica_timeout_ms=3000)
        recorder = RedisRecorder(client, keys, min_replicas=1, replica_timeout_ms=500)
        gid = create(patient, "survivor")
        for serial in range(1, 21):
            patient.append(gid, serial, ev(serial), f"k{serial}", "fp")
        master = own_cluster.node_for_key(keys.game_log(gid))
        own_cluster.kill(master)
        promoted = own_cluster.wait_for_failover(master)
        assert promoted.node_id != master.node_id
        assert _until_it_works(lambda: recorder.read(gid))[0] == [ev(s) for s in range(1, 21)]
        with pytest.raises(NotReplicated) as info:
            _until_it_works(lambda: recorder.append(gid, 21, ev(21), "k21", "fp"))
        assert (info.value.serial, info.value.acked) == (21, 0)
        assert recorder.read(gid, after=20) == [ev(21)]
        own_cluster.restart(master)
        assert own_cluster.master_of(master).node_id == promoted.node_id
        again = patient.append(gid, 21, ev(21), "k21", "fp")
        assert again.replayed and again.event == ev(21)
        assert not patient.append(gid, 22, ev(22), "k22", "fp").replayed
        assert [e.serial for e in recorder.read(gid)] == list(range(1, 23))
    finally:
        client.close()
