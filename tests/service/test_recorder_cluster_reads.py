"""The blocking read behind the event stream on a Redis Cluster, after a failover.

redis-py's cluster client asks its default node (``COMMAND GETKEYS``) which keys an
``XREAD`` names. When that node was the master that died, every ``XREAD`` failed until some
other command refreshed the slot table, also for games on healthy masters: event streams of
games nobody wrote to stayed broken after the failover had ended. The recorder sends the
read to the node that owns the game's slot itself.
"""

from __future__ import annotations

import pytest

from boxfish.service.store.keys import KeySpace
from boxfish.service.store.redis_recorder import RedisRecorder
from tests.redis_cluster import RedisClusterProcesses
from tests.service.test_recorder_cluster import create, ev


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    """A cluster this test breaks (the session's stays as it is)."""
    with RedisClusterProcesses(tmp_path_factory.mktemp("reads-cluster")) as c:
        yield c


def test_a_blocking_read_survives_the_loss_of_the_clients_default_node(own_cluster):
    client = own_cluster.client(socket_timeout=3.0)
    try:
        keys = KeySpace("reads")
        recorder = RedisRecorder(client, keys)
        default = client.get_default_node()
        dead = next(m for m in own_cluster.masters() if m.name == default.name)
        # a game on another master, with one move
        gid = next(f"g{i}" for i in range(1000)
                   if own_cluster.node_for_key(keys.game_log(f"g{i}")) is not dead)
        create(recorder, gid)
        recorder.append(gid, 1, ev(1))
        assert recorder.wait(gid, 1, 0.2) == []  # a blocking read that times out
        own_cluster.kill(dead)
        own_cluster.wait_for_failover(dead)
        # the failover is over; nothing has written since: the read must still work
        assert recorder.wait(gid, 1, 0.3) == []
        assert [e.serial for e in recorder.wait(gid, 0, 0.3)] == [1]
        recorder.append(gid, 2, ev(2))
        assert [e.serial for e in recorder.wait(gid, 1, 0.3)] == [2]
    finally:
        client.close()
