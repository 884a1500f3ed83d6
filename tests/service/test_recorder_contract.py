"""The recorder contract, run against every backend: in-memory, Redis (a real server), Redis
Cluster (3 masters, 3 replicas: ``tests/redis_cluster.py``), and Redis Cluster with every append
waiting for a replica (``min_replicas=1``, the ``EVALSHA``+``WAIT`` pipeline on the slot's node).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from boxfish.service.store.events import MoveEvent
from boxfish.service.store.game_meta import EngineSeat, GameMeta
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import (
    FeedRewritten,
    GameNotFound,
    IdempotencyKeyReused,
    InMemoryRecorder,
    SerialConflict,
    replay_head,
)
from boxfish.service.store.redis_recorder import RedisRecorder

BACKENDS = ["memory", "redis", "cluster", "cluster-min-replicas-1"]


@pytest.fixture(scope="module")
def cluster_client(redis_cluster):
    client = redis_cluster.client(socket_timeout=5.0)
    yield client
    client.close()


@pytest.fixture(params=BACKENDS)
def make_recorder(request):
    """``make_recorder(**options)``: a recorder of the backend under test; ``options`` are the
    constructor's (``idempotency_ttl_s``, ``recent_kept``; on Redis also ``min_replicas``
    etc.). With ``own_keys=True`` a Redis recorder writes under a key prefix of its own (below
    the session's), so the index of recent games holds only this test's games."""
    backend = request.param

    def make(own_keys: bool = False, **options):
        if backend == "memory":
            return InMemoryRecorder(**options)
        prefix = request.getfixturevalue("settings").key_prefix
        keys = KeySpace(f"{prefix}:{uuid.uuid4().hex[:8]}" if own_keys else prefix)
        if backend == "redis":
            return RedisRecorder(request.getfixturevalue("redis_client"), keys, **options)
        request.getfixturevalue("redis_cluster").ensure_healthy()
        client = request.getfixturevalue("cluster_client")
        if backend == "cluster-min-replicas-1":
            options = {"min_replicas": 1, "replica_timeout_ms": 3000, **options}
        return RedisRecorder(client, keys, **options)
    return make


@pytest.fixture
def recorder(make_recorder):
    return make_recorder()


def new_game(recorder, created_at: int = 1, **fields) -> str:
    gid = uuid.uuid4().hex[:12]
    recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                  params={"width": 2, "height": 2}, token_sha256="t",
                                  created_at=created_at, **fields))
    return gid


def ev(serial: int, status: str = "in_progress") -> MoveEvent:
    return MoveEvent(serial=serial, move=(serial, 1, 1), player=serial % 2, completed=0,
                     scores=(0, 0), to_move=1 - serial % 2, status=status, at=serial)


def test_create_and_meta(recorder):
    gid = new_game(recorder)
    meta = recorder.get_meta(gid)
    assert (meta.game, meta.params, meta.serial, meta.status) == (
        "dots-and-boxes", {"width": 2, "height": 2}, 0, "in_progress")
    with pytest.raises(ValueError):
        recorder.create_game(meta)
    assert meta.engine is None  # a game without an engine seat has none


def test_engine_seat_round_trips_and_survives_appends(recorder):
    gid = uuid.uuid4().hex[:12]
    seat = EngineSeat(seat=1, time_ms=250)
    recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                  params={"width": 2, "height": 2}, token_sha256="t",
                                  created_at=1, engine=seat))
    assert recorder.get_meta(gid).engine == seat
    recorder.append(gid, 1, ev(1))
    meta = recorder.get_meta(gid)
    assert (meta.serial, meta.engine) == (1, seat)


def test_append_and_read(recorder):
    gid = new_game(recorder)
    for s in (1, 2, 3):
        appended = recorder.append(gid, s, ev(s))
        assert appended.event == ev(s) and not appended.replayed
    assert recorder.get_meta(gid).serial == 3
    assert recorder.read(gid) == [ev(1), ev(2), ev(3)]
    assert recorder.read(gid, after=1) == [ev(2), ev(3)]
    assert recorder.read(gid, after=1, upto=2) == [ev(2)]
    assert recorder.read(gid, after=3) == []
    assert recorder.read(gid, after=2, upto=2) == []


def test_events_read_back_carry_the_log_head_after_them(recorder):
    """Each event read (``read`` and ``wait``) carries the log's head after it, the head the
    meta had at its serial: what an open event stream checks a move against."""
    gid = new_game(recorder)
    heads = []
    for s in (1, 2, 3):
        recorder.append(gid, s, ev(s))
        heads.append(recorder.get_meta(gid).head)
    assert heads == [replay_head("", [ev(i) for i in range(1, s + 1)]) for s in (1, 2, 3)]
    assert [e.head for e in recorder.read(gid)] == heads
    assert [e.head for e in recorder.read(gid, after=1, upto=2)] == heads[1:2]
    assert [e.head for e in recorder.wait(gid, 1, 0.5)] == heads[1:]


def test_an_append_returns_its_event_with_the_log_head_after_it(recorder):
    """What ``POST .../moves`` shows as the move's ``position``: the appended event carries
    the head the log has after it, a replay too; without an expected head, the stored one is
    chained all the same."""
    gid = new_game(recorder)
    first = recorder.append(gid, 1, ev(1), expected_head="")
    assert first.event.head == recorder.get_meta(gid).head == replay_head("", [ev(1)])
    second = recorder.append(gid, 2, ev(2), idempotency_key="k2", fingerprint="f")
    assert second.event.head == recorder.get_meta(gid).head == replay_head("", [ev(1), ev(2)])
    again = recorder.append(gid, 2, ev(2), idempotency_key="k2", fingerprint="f")
    assert again.replayed and again.event.head == second.event.head


def test_serial_conflict_changes_nothing(recorder):
    gid = new_game(recorder)
    recorder.append(gid, 1, ev(1))
    for wrong in (1, 3, 7):
        with pytest.raises(SerialConflict) as info:
            recorder.append(gid, wrong, ev(wrong))
        assert info.value.current_serial == 1
    assert recorder.read(gid) == [ev(1)]
    assert recorder.get_meta(gid).serial == 1


def test_status_follows_last_event(recorder):
    gid = new_game(recorder)
    recorder.append(gid, 1, ev(1, "finished"))
    assert recorder.get_meta(gid).status == "finished"


def test_idempotency(recorder):
    gid = new_game(recorder)
    first = recorder.append(gid, 1, ev(1), "key-a", "fp1")
    assert not first.replayed
    assert recorder.lookup_idempotency(gid, "key-a") == ("fp1", 1)
    assert recorder.lookup_idempotency(gid, "key-b") is None
    recorder.append(gid, 2, ev(2))
    again = recorder.append(gid, 3, ev(3), "key-a", "fp1")
    assert again.replayed and again.event == ev(1)
    with pytest.raises(IdempotencyKeyReused) as info:
        recorder.append(gid, 3, ev(3), "key-a", "fp2")
    assert info.value.serial == 1
    assert recorder.read(gid) == [ev(1), ev(2)]


def test_unknown_game(recorder):
    for call in (lambda: recorder.get_meta("nope"), lambda: recorder.read("nope"),
                 lambda: recorder.append("nope", 1, ev(1)),
                 lambda: recorder.lookup_idempotency("nope", "k")):
        with pytest.raises(GameNotFound):
            call()


def test_event_serial_must_match_expected(recorder):
    gid = new_game(recorder)
    with pytest.raises(ValueError):
        recorder.append(gid, 1, ev(2))


def test_wait_returns_new_events_or_times_out(recorder):
    gid = new_game(recorder)
    assert recorder.wait(gid, 0, 0.05) == []
    recorder.append(gid, 1, ev(1))
    assert recorder.wait(gid, 0, 1.0) == [ev(1)]
    # An event appended while a wait blocks: appended once the wait's own first read found
    # nothing after serial 1, so the wait gets it from its blocking part.
    found_nothing = threading.Event()
    read = recorder.read

    def watched_read(game_id, after=0, upto=None):
        events = read(game_id, after, upto)
        if (game_id, after, events) == (gid, 1, []):
            found_nothing.set()
        return events

    recorder.read = watched_read
    got = []
    waiter = threading.Thread(target=lambda: got.extend(recorder.wait(gid, 1, 30.0)))
    waiter.start()
    assert found_nothing.wait(30), "the wait did not read"
    recorder.append(gid, 2, ev(2))
    waiter.join(30)
    assert got == [ev(2)] and not waiter.is_alive()


def test_concurrent_appends_never_fork(recorder):
    """Many threads race for the same serials: each serial is taken exactly once."""
    gid = new_game(recorder)
    wins: list[tuple[int, int]] = []
    lock = threading.Lock()

    def racer(tid: int) -> None:
        for _ in range(40):
            current = recorder.get_meta(gid).serial
            event = MoveEvent(current + 1, (tid, current + 1, 1), 0, 0, None, None,
                              "in_progress", tid)
            try:
                recorder.append(gid, current + 1, event)
            except SerialConflict:
                continue
            with lock:
                wins.append((current + 1, tid))

    threads = [threading.Thread(target=racer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = recorder.read(gid)
    assert [e.serial for e in log] == list(range(1, len(log) + 1))
    assert sorted(s for s, _ in wins) == [e.serial for e in log]
    assert {(e.serial, e.at) for e in log} == set(wins)


def test_idempotency_records_expire(make_recorder):
    """After its TTL a record is gone: the key is a new key (the serial it took is taken, so
    the same request is a conflict; a request for the next serial appends afresh)."""
    recorder = make_recorder(idempotency_ttl_s=0.4)
    gid = new_game(recorder)
    recorder.append(gid, 1, ev(1), "key-a", "fp1")
    assert recorder.lookup_idempotency(gid, "key-a") == ("fp1", 1)
    assert recorder.append(gid, 1, ev(1), "key-a", "fp1").replayed
    deadline = time.monotonic() + 5
    while recorder.lookup_idempotency(gid, "key-a") is not None:
        assert time.monotonic() < deadline, "the record did not expire"
        time.sleep(0.05)
    with pytest.raises(SerialConflict) as info:
        recorder.append(gid, 1, ev(1), "key-a", "fp1")
    assert info.value.current_serial == 1
    fresh = recorder.append(gid, 2, ev(2), "key-a", "fp2")
    assert not fresh.replayed and fresh.event == ev(2)
    assert recorder.lookup_idempotency(gid, "key-a") == ("fp2", 2)
    assert recorder.read(gid) == [ev(1), ev(2)]


def test_idempotency_records_last_their_ttl(make_recorder):
    recorder = make_recorder(idempotency_ttl_s=30)
    gid = new_game(recorder)
    recorder.append(gid, 1, ev(1), "key-a", "fp1")
    time.sleep(0.3)
    assert recorder.lookup_idempotency(gid, "key-a") == ("fp1", 1)
    assert recorder.append(gid, 2, ev(2), "key-a", "fp1").replayed


def test_idempotency_keys_of_any_shape(recorder):
    """Keys are opaque: long, with spaces, colons, braces (not a hash tag) or non-ASCII."""
    gid = new_game(recorder)
    keys = ["x" * 300, "a b c", "k:{game:other}:idem", "ключ-✓"]
    for serial, key in enumerate(keys, start=1):
        recorder.append(gid, serial, ev(serial), key, f"fp{serial}")
    for serial, key in enumerate(keys, start=1):
        assert recorder.lookup_idempotency(gid, key) == (f"fp{serial}", serial)
        assert recorder.append(gid, 9, ev(9), key, f"fp{serial}").event == ev(serial)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_ttl_must_be_positive(make_recorder, bad):
    with pytest.raises(ValueError):
        make_recorder(idempotency_ttl_s=bad)


def test_recent_games_newest_first_with_current_meta(make_recorder):
    recorder = make_recorder(own_keys=True)
    assert recorder.recent_games(5) == []
    seat = EngineSeat(seat=1, time_ms=300)
    first, second = new_game(recorder, created_at=1000), new_game(recorder, created_at=3000)
    third = new_game(recorder, created_at=2000, engine=seat)
    recorder.append(first, 1, ev(1))
    listed = recorder.recent_games(10)
    assert [m.game_id for m in listed] == [second, third, first]
    assert listed[2] == recorder.get_meta(first) and listed[2].serial == 1
    assert listed[1].engine == seat and listed[1].created_at == 2000
    assert [m.game_id for m in recorder.recent_games(2)] == [second, third]
    assert [m.game_id for m in recorder.recent_games(1)] == [second]


def test_recent_games_keeps_only_the_newest(make_recorder):
    recorder = make_recorder(own_keys=True, recent_kept=3)
    ids = [new_game(recorder, created_at=1000 + i) for i in range(5)]
    assert [m.game_id for m in recorder.recent_games(10)] == ids[:1:-1]
    old = new_game(recorder, created_at=10)  # older than all kept: not listed
    assert [m.game_id for m in recorder.recent_games(10)] == ids[:1:-1]
    assert recorder.get_meta(old).created_at == 10  # still readable by id


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_recent_kept_must_be_positive(make_recorder, bad):
    with pytest.raises(ValueError):
        make_recorder(recent_kept=bad)


def test_recent_games_skips_a_game_whose_meta_is_gone(settings, redis_client):
    keys = KeySpace(f"{settings.key_prefix}:{uuid.uuid4().hex[:8]}")
    recorder = RedisRecorder(redis_client, keys)
    kept, gone = new_game(recorder, created_at=1), new_game(recorder, created_at=2)
    redis_client.delete(keys.game_meta(gone))
    assert redis_client.zscore(keys.games_recent(), gone) == 2
    assert [m.game_id for m in recorder.recent_games(10)] == [kept]


# -- the feed of every game (service.store.feed) ---------------------------------------------

def _read_all(recorder, position=None):
    """Every entry after ``position`` (a FeedPosition), partition by partition."""
    from boxfish.service.store.feed import FEED_PARTITIONS
    out = []
    for p in range(FEED_PARTITIONS):
        after = position.of(p) if position is not None else None
        while True:
            got = recorder.read_feed(p, after, limit=7)
            out += got
            if not got:
                break
            after = got[-1].position
    return out


def test_the_feed_has_every_create_and_every_move_in_order(make_recorder):
    from boxfish.service.store.feed import FeedPosition, next_feed_head, partition_of
    recorder = make_recorder(own_keys=True)
    games = [new_game(recorder) for _ in range(6)]
    for serial in range(1, 4):
        for gid in games:
            recorder.append(gid, serial, ev(serial), idempotency_key=f"k{serial}",
                            fingerprint="f")
    # replays append nothing to the feed
    recorder.append(games[0], 1, ev(1), idempotency_key="k1", fingerprint="f")
    entries = _read_all(recorder)
    assert len(entries) == 6 * 4
    for gid in games:
        mine = [e for e in entries if e.game_id == gid]
        assert [e.kind for e in mine] == ["created", "move", "move", "move"]
        assert mine[0].created == {"game": "dots-and-boxes", "params": {"width": 2, "height": 2},
                                   "created_at": 1}
        assert [e.event.serial for e in mine[1:]] == [1, 2, 3]
        assert [e.event.head for e in mine[1:]] == [e.head for e in recorder.read(gid)]
        assert {e.partition for e in mine} == {partition_of(gid)}
    by_partition = {}
    for e in entries:
        by_partition.setdefault(e.partition, []).append(e)
    for p, part in by_partition.items():
        assert [e.serial for e in part] == list(range(1, len(part) + 1))
        head = ""
        for e in part:
            head = next_feed_head(head, e.game_id, e.kind, e.body)
            assert e.head == head
        assert recorder.feed_heads()[p] == part[-1].position
    # a reader resumes from a position: only what came after
    position = FeedPosition()
    for e in entries:
        position = position.after(e)
    assert FeedPosition.parse(str(position)) == position
    late = new_game(recorder)
    recorder.append(late, 1, ev(1))
    assert [(e.game_id, e.kind) for e in _read_all(recorder, position)] == [
        (late, "created"), (late, "move")]
    assert [(e.game_id, e.kind) for e in recorder.follow_feed(position, 1.0)] == [
        (late, "created"), (late, "move")]


def test_a_feed_position_with_another_history_is_refused(make_recorder):
    from boxfish.service.store.feed import partition_of
    recorder = make_recorder(own_keys=True)
    gid = new_game(recorder)
    p = partition_of(gid)
    serial, head = recorder.read_feed(p)[-1].position
    with pytest.raises(FeedRewritten) as err:
        recorder.read_feed(p, (serial, "0" * 16))
    assert (err.value.partition, err.value.serial) == (p, serial)
    with pytest.raises(FeedRewritten):
        recorder.read_feed(p, (serial + 5, head))
    assert recorder.read_feed(p, (serial, head)) == []


def test_follow_feed_waits_for_an_entry(make_recorder):
    from boxfish.service.store.feed import FeedPosition
    recorder = make_recorder(own_keys=True)
    gid = new_game(recorder)
    position = FeedPosition()
    for e in _read_all(recorder):
        position = position.after(e)
    assert recorder.follow_feed(position, 0.2) == []
    timer = threading.Timer(0.3, lambda: recorder.append(gid, 1, ev(1)))
    timer.start()
    try:
        got = recorder.follow_feed(position, 10.0)
    finally:
        timer.join()
    assert [(e.game_id, e.event.serial) for e in got] == [(gid, 1)]


def test_read_games_gives_each_games_metadata_and_log_together(recorder):
    games = [new_game(recorder) for _ in range(5)]
    for i, gid in enumerate(games):
        for serial in range(1, i + 1):
            recorder.append(gid, serial, ev(serial))
    got = recorder.read_games([games[3], "no-such-game", *games])
    assert got[1] is None
    for gid, pair in zip([games[3], None, *games], got, strict=True):
        if gid is None:
            continue
        meta, events = pair
        assert meta == recorder.get_meta(gid)
        assert events == recorder.read(gid)
        assert [e.head for e in events] == [e.head for e in recorder.read(gid)]
        assert (events[-1].head if events else "") == meta.head
