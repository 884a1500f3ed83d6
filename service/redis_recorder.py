"""The Redis backend of the recorder.

Layout (see :mod:`service.keys`): the log is a Stream whose entry ids are ``<serial>-0``, so
``XRANGE``/``XREAD`` by serial need no translation and Redis itself refuses an id that is not
greater than the last one; the metadata is a Hash; idempotency records are a Hash. The append is
the Lua script :data:`APPEND_LUA`, run with ``EVALSHA`` (redis-py's ``register_script``), so the
serial check, the idempotency check, the ``XADD`` and the metadata update happen in one step.
"""

from __future__ import annotations

import json
import math
import time

import redis

from .events import MoveEvent
from .keys import KeySpace
from .recorder import (
    Appended,
    GameMeta,
    GameNotFound,
    IdempotencyKeyReused,
    Recorder,
    SerialConflict,
    _check_event,
)

# KEYS: meta, log, idem. ARGV: serial, idempotency key ('' = none), fingerprint, event json,
# status after the move.
# Returns {'ok'} | {'nogame'} | {'conflict', current} | {'idem', "<fingerprint> <serial>"}.
APPEND_LUA = """
local cur = redis.call('HGET', KEYS[1], 'serial')
if not cur then return {'nogame'} end
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[3], ARGV[2])
  if rec then return {'idem', rec} end
end
if tonumber(cur) + 1 ~= tonumber(ARGV[1]) then return {'conflict', cur} end
redis.call('XADD', KEYS[2], ARGV[1] .. '-0', 'e', ARGV[4])
redis.call('HSET', KEYS[1], 'serial', ARGV[1], 'status', ARGV[5])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[3], ARGV[2], ARGV[3] .. ' ' .. ARGV[1]) end
return {'ok'}
"""

# KEYS: meta. ARGV: field, value, field, value, ... Returns 1 if created, 0 if the id is taken.
CREATE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _event(fields: dict) -> MoveEvent:
    return MoveEvent.from_json(fields[b"e"] if b"e" in fields else fields["e"])


class RedisRecorder(Recorder):
    """A recorder on a Redis connection (``redis.Redis``; its pool is shared, never global)."""

    def __init__(self, connection: redis.Redis, keys: KeySpace | None = None) -> None:
        self.redis = connection
        self.keys = keys or KeySpace()
        self._append = connection.register_script(APPEND_LUA)
        self._create = connection.register_script(CREATE_LUA)

    def create_game(self, meta: GameMeta) -> None:
        fields = {"game": meta.game, "params": json.dumps(meta.params, sort_keys=True),
                  "token_sha256": meta.token_sha256, "created_at": meta.created_at,
                  "serial": 0, "status": meta.status}
        args = [x for kv in fields.items() for x in kv]
        if not self._create(keys=[self.keys.game_meta(meta.game_id)], args=args):
            raise ValueError(f"game {meta.game_id!r} exists")

    def get_meta(self, game_id: str) -> GameMeta:
        raw = self.redis.hgetall(self.keys.game_meta(game_id))
        if not raw:
            raise GameNotFound(game_id)
        d = {_s(k): _s(v) for k, v in raw.items()}
        return GameMeta(game_id=game_id, game=d["game"], params=json.loads(d["params"]),
                        token_sha256=d["token_sha256"], created_at=int(d["created_at"]),
                        serial=int(d["serial"]), status=d["status"])

    def append(self, game_id, expected_serial, event, idempotency_key=None, fingerprint=""):
        _check_event(expected_serial, event)
        if idempotency_key == "" or " " in fingerprint:
            raise ValueError("empty idempotency key or a fingerprint with spaces")
        keys = [self.keys.game_meta(game_id), self.keys.game_log(game_id),
                self.keys.game_idempotency(game_id)]
        args = [expected_serial, idempotency_key or "", fingerprint, event.to_json(),
                event.status]
        res = self._append(keys=keys, args=args)
        tag = _s(res[0])
        if tag == "ok":
            return Appended(event)
        if tag == "nogame":
            raise GameNotFound(game_id)
        if tag == "conflict":
            raise SerialConflict(int(res[1]))
        fp, serial = _s(res[1]).split(" ")
        if fp != fingerprint:
            raise IdempotencyKeyReused(int(serial))
        return Appended(self._event_at(game_id, int(serial)), replayed=True)

    def _event_at(self, game_id: str, serial: int) -> MoveEvent:
        entries = self.redis.xrange(self.keys.game_log(game_id), f"{serial}-0", f"{serial}-0")
        return _event(entries[0][1])

    def lookup_idempotency(self, game_id, key):
        rec = self.redis.hget(self.keys.game_idempotency(game_id), key)
        if rec is None:
            if not self.redis.exists(self.keys.game_meta(game_id)):
                raise GameNotFound(game_id)
            return None
        fp, serial = _s(rec).split(" ")
        return fp, int(serial)

    def read(self, game_id, after=0, upto=None):
        if upto is not None and upto <= after:
            self.get_meta(game_id)
            return []
        start = f"{after + 1}-0"
        end = f"{upto}-0" if upto is not None else "+"
        entries = self.redis.xrange(self.keys.game_log(game_id), start, end)
        if not entries and not self.redis.exists(self.keys.game_meta(game_id)):
            raise GameNotFound(game_id)
        return [_event(fields) for _, fields in entries]

    def wait(self, game_id, after, timeout_s):
        """Blocks up to ``timeout_s`` however long that is: the wait is a series of ``XREAD
        BLOCK`` calls, each shorter than the connection's socket timeout (which would
        otherwise end a longer one with ``redis.TimeoutError``)."""
        events = self.read(game_id, after)
        if events or timeout_s <= 0:
            return events
        deadline = time.monotonic() + timeout_s
        log = self.keys.game_log(game_id)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            # XREAD returns entries with an id greater than the one given: "<after>-0".
            res = self.redis.xread({log: f"{after}-0"},
                                   block=max(1, int(min(remaining, self._max_block_s) * 1000)))
            if res:
                return [_event(fields) for _, fields in res[0][1]]

    @property
    def _max_block_s(self) -> float:
        """The longest single blocking read: the socket timeout less a margin for the round
        trip (1 s, or half of a socket timeout under 2 s); unbounded without a timeout."""
        pool = getattr(self.redis, "connection_pool", None)
        timeout = getattr(pool, "connection_kwargs", {}).get("socket_timeout")
        if not timeout:
            return math.inf
        return max(timeout - 1.0, timeout / 2)

    def close(self) -> None:
        self.redis.close()
