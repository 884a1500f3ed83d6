"""A Redis failover that lost a game's last moves, made on one Redis server: the game's keys
are left as the promoted replica has them when it never received those moves.

The log Stream is rebuilt with its first ``keep`` entries (the same ids and fields; a Stream
never takes an id at or below its last one again, so deleting entries is not enough for the
next move to take the lost serial), the meta hash gets the serial, status and head of serial
``keep`` (the head chained over the kept events, as the append script chains it), and the
idempotency records of the lost moves go too (they were written with them). The API processes
serving the game are left running: they must find out from the store, as after a real
failover (see tests/service/test_failover_heads.py for one on a real Redis Cluster).
"""

from __future__ import annotations

import redis

from boxfish.service.store.events import MoveEvent
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import replay_head


def lose_moves(client: redis.Redis, key_prefix: str, game_id: str, keep: int) -> str:
    """Cut ``game_id``'s log (under ``key_prefix``) back to its first ``keep`` moves, in one
    MULTI/EXEC; returns the head at ``keep`` (the id of a stream's event there is
    ``<keep>.<head>``). Raises AssertionError if the log has no more than ``keep`` moves."""
    keys = KeySpace(key_prefix)
    log_key, meta_key = keys.game_log(game_id), keys.game_meta(game_id)
    entries = client.xrange(log_key)
    assert len(entries) > keep, f"the log of {game_id} has {len(entries)} moves"
    kept = entries[:keep]
    events = [MoveEvent.from_json(fields[b"e"]) for _, fields in kept]
    head = replay_head("", events)
    lost_serials = {str(n).encode() for n in range(keep + 1, len(entries) + 1)}
    lost_records = [key for key in client.scan_iter(match=keys.idempotency_record(game_id, "*")
                                                    .rsplit(":", 1)[0] + ":*")
                    if (client.get(key) or b"").rpartition(b" ")[2] in lost_serials]
    pipe = client.pipeline(transaction=True)
    pipe.delete(log_key, *lost_records)
    for entry_id, fields in kept:
        pipe.xadd(log_key, fields, id=entry_id)
    status = "finished" if events and events[-1].finished else "in_progress"
    pipe.hset(meta_key, mapping={"serial": keep, "status": status, "head": head})
    pipe.execute()
    return head
