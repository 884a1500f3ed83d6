"""A failover that loses an acknowledged move, seen by a client holding an ETag and an event
stream's Last-Event-ID (issue 24).

On the real Redis Cluster, with the replicas' acknowledgement off (``min_replicas_ack=0``): the
game's master acknowledges move N while its replica is cut off (frozen, its replication link
closed), the master dies, the replica takes over without move N and another move takes serial
N. A conditional GET with the ETag of the lost state must answer ``200`` with the new state
and a new ETag, never ``304``; a stream resumed with the Last-Event-ID of the lost move must
bring the client to the new state.
"""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from boxfish.service.http.app import create_app
from boxfish.service.store.keys import KeySpace

from .conftest import CheckedClient
from .feed_check import OPERATOR_TOKEN, app_get, read_feed
from .test_events import only, read_events

#: Moves of a 2x2 game: three kept, one lost in the failover, one taking its serial.
KEPT = ([1, 1, 1], [1, 2, 1])
LOST = [1, 3, 1]
REPLACING = [2, 1, 2]


@pytest.fixture
def cluster_app(settings, redis_cluster, redis_client, spec):
    """The app on the shared cluster with ``min_replicas_ack=0``; the cluster made whole
    again afterwards (the killed master comes back as a replica)."""
    redis_cluster.ensure_healthy()
    own = settings.model_copy(update={"min_replicas_ack": 0, "operator_token": OPERATOR_TOKEN,
                                      "key_prefix": f"{settings.key_prefix}-heads"})
    store = redis_cluster.client(socket_timeout=5.0)
    app = create_app(own, connection=store, queue_connection=redis_client)
    try:
        yield app, CheckedClient(app.test_client(), spec)
    finally:
        store.close()
        redis_cluster.ensure_healthy()


def lose_next_write(redis_cluster, key: str, write) -> None:
    """Run ``write()`` (which must store something under ``key``'s slot and be acknowledged)
    so that the failover that follows loses it: the slot's replica is frozen and its
    replication link closed first, so the master acknowledges the write alone; then the master
    is killed, the replica thawed and promoted (``CLUSTER FAILOVER TAKEOVER``) without it."""
    master = redis_cluster.node_for_key(key)
    (replica,) = redis_cluster.replicas_of(master)
    with contextlib.closing(master.client()) as mc:
        assert mc.execute_command("WAIT", 1, 5000) == 1  # the replica has all before
        os.kill(replica.process.pid, signal.SIGSTOP)
        try:
            mc.client_kill_filter(_type="replica")
            write()
            # The write is the master's alone: no replica is connected to receive it.
            assert mc.execute_command("WAIT", 1, 200) == 0
        finally:
            redis_cluster.kill(master)
            os.kill(replica.process.pid, signal.SIGCONT)
    with contextlib.closing(replica.client()) as rc:
        rc.execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
    assert redis_cluster.wait_for_failover(master) is replica


def test_a_lost_and_replaced_move_is_never_taken_for_the_one_the_client_saw(
        cluster_app, redis_cluster, settings):
    app, client = cluster_app
    created = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2})
    assert created.status_code == 201
    gid = created.json["id"]
    auth = {"Authorization": f"Bearer {created.json['write_token']}"}
    for move in KEPT:
        assert client.post(f"/v1/games/{gid}/moves", json={"move": move},
                           headers=auth).status_code == 201

    held = {}

    def lost_write():
        """Move 3, and what the client holds of it: the game's ETag and the id of the
        stream's event for it."""
        assert client.post(f"/v1/games/{gid}/moves", json={"move": LOST},
                           headers=auth).status_code == 201
        seen = client.get(f"/v1/games/{gid}")
        assert seen.status_code == 200 and seen.json["serial"] == 3
        held["etag"] = seen.headers["ETag"]
        picture = client.get(f"/v1/games/{gid}/board.svg?at=3")
        assert picture.status_code == 200
        held["picture"] = (picture.headers["ETag"], picture.data)
        stream = app.test_client().get(f"/v1/games/{gid}/events",
                                       headers={"Last-Event-ID": "0"}, buffered=False)
        events = only(read_events(stream, 3)[0], None)
        stream.close()
        assert [(e[0], e[2]["move"]) for e in events] == [("move", m) for m in (*KEPT, LOST)]
        held["event_id"] = events[2][1]
        held["feed"] = read_feed(app_get(client))
        assert [m for _, m, _ in held["feed"].moves[gid]] == [tuple(m) for m in (*KEPT, LOST)]

    keys = KeySpace(app.extensions["boxfish"].settings.key_prefix)
    lose_next_write(redis_cluster, keys.game_log(gid), lost_write)

    # The failover lost move 3; another move takes serial 3.
    assert client.get(f"/v1/games/{gid}/moves").json["serial"] == 2
    replaced = client.post(f"/v1/games/{gid}/moves", json={"move": REPLACING, "serial": 3},
                           headers=auth)
    assert replaced.status_code == 201, replaced.json
    current = client.get(f"/v1/games/{gid}")
    assert current.json["serial"] == 3

    # What the client held for the lost state: a conditional GET with its ETag, a stream
    # resumed after its event.
    lost_etag, lost_event_id = held["etag"], held["event_id"]
    again = client.get(f"/v1/games/{gid}", headers={"If-None-Match": lost_etag})
    resumed = app.test_client().get(f"/v1/games/{gid}/events",
                                    headers={"Last-Event-ID": lost_event_id}, buffered=False)
    first = read_events(resumed, 1)[0][0]
    resumed.close()
    assert (again.status_code, first[0]) == (200, "game"), (
        f"If-None-Match: {lost_etag} answered {again.status_code}; a stream resumed after "
        f"{lost_event_id!r} began with {first}")
    # The conditional GET answers the new state with the new ETag, which is current (304).
    assert again.json == current.json
    assert again.headers["ETag"] == current.headers["ETag"] != lost_etag
    assert client.get(f"/v1/games/{gid}",
                      headers={"If-None-Match": current.headers["ETag"]}).status_code == 304
    # The stream resends the whole state (its event id names the new head), then goes on.
    assert first[2] == current.json
    assert first[1] == current.headers["ETag"].strip('"') != lost_event_id
    # A picture of serial 3 the client cached is not current: the new one is sent; the lost
    # position, named with its head, is no position of the log; the new one is.
    picture_etag, picture = held["picture"]
    redrawn = client.get(f"/v1/games/{gid}/board.svg?at=3",
                         headers={"If-None-Match": picture_etag})
    assert redrawn.status_code == 200 and redrawn.headers["ETag"] != picture_etag
    assert redrawn.data != picture
    assert client.get(f"/v1/games/{gid}/board.svg?at={lost_etag.strip(chr(34))}"
                      ).status_code == 404
    named = client.get(f"/v1/games/{gid}/board.svg?at={current.headers['ETag'].strip(chr(34))}")
    assert named.status_code == 200 and named.data == redrawn.data
    # A reader of the feed resuming from its position after the lost move is told that the
    # game's partition was rewritten, and reads it again: the game's moves as the log has
    # them now, with the new head.
    feed = read_feed(app_get(client), held["feed"])
    assert [r["partition"] for r in feed.rewritten] == [held["feed"].partition_of[gid]]
    assert [m for _, m, _ in feed.moves[gid]] == [tuple(m) for m in (*KEPT, REPLACING)]
    assert feed.moves[gid][-1][2] == current.headers["ETag"].strip('"')
