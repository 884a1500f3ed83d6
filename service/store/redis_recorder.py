"""The Redis backend of the recorder, on one Redis server or on a Redis Cluster.

Layout (see :mod:`service.store.keys`): the log is a Stream whose entry ids are
``<serial>-0``, so ``XRANGE``/``XREAD`` by serial need no translation and Redis itself refuses
an id that is not greater than the last one; the metadata is a Hash; each idempotency record is
a String with a TTL. The append is the Lua script :data:`APPEND_LUA`, run with ``EVALSHA``, so
the serial check, the idempotency check, the ``XADD``, the metadata update and the record
happen in one step, which also writes the move's entry in the feed of every game
(:mod:`service.store.feed`) and reads the game's webhook registrations
(:mod:`service.store.webhook_registrations`) for the move's listeners. Every key of a game
carries the hash tag of its partition, ``{games:<p>}``, as its partition's feed does: on a
cluster they are in one slot, on one master, and the script may touch them together.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import time
from dataclasses import dataclass, replace

import redis
from redis.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    NoScriptError,
    SlotNotCoveredError,
    TryAgainError,
)

from ..errors import GameIdTaken
from .events import MoveEvent
from .feed import FeedEntry, created_body, partition_of
from .game_meta import EngineSeat, GameMeta
from .keys import KeySpace
from .recorder import (
    DEFAULT_RECENT_KEPT,
    Appended,
    FeedRewritten,
    GameNotFound,
    IdempotencyKeyReused,
    NotReplicated,
    Recorder,
    SerialConflict,
    StaleHead,
    _check_event,
    _check_recent_kept,
    _check_ttl,
)

log = logging.getLogger(__name__)

# KEYS: meta, log, idempotency record, the partition's feed, and optionally the game's webhook
# registrations (service.store.webhook_registrations).
# ARGV: as AppendArgs.argv() writes them, named at the top of the script.
# Returns {'ok', new head, registration json, ...} (with the registrations' key: the game's
#         webhook registrations, read in the same step, so that the move's listeners need no
#         read of their own; without it just {'ok', new head})
#       | {'nogame'} | {'conflict', current} | {'stale', current}
#       | {'idem', "<fingerprint> <serial>", event json of that serial, its head}.
# The meta's 'head' (recorder.next_head) names the log position: the script refuses an append
# whose expected head is not the stored one ('stale'), and writes the new head with the serial.
APPEND_LUA = """
local meta_key, log_key, record_key, feed_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local webhooks_key = KEYS[5]
local serial = ARGV[1]
local idempotency_key = ARGV[2]
local fingerprint = ARGV[3]
local event_json = ARGV[4]
local status = ARGV[5]
local record_ttl_ms = ARGV[6]
local rewrite_record = ARGV[7] == '1'
local check_head = ARGV[8] == '1'
local expected_head = ARGV[9]
local game_id = ARGV[10]
%FEED_ADD%
local cur = redis.call('HGET', meta_key, 'serial')
if not cur then return {'nogame'} end
if idempotency_key ~= '' then
  local rec = redis.call('GET', record_key)
  if rec then
    if rewrite_record then redis.call('SET', record_key, rec, 'KEEPTTL') end
    local s = string.match(rec, ' (%d+)$')
    local entry = redis.call('XRANGE', log_key, s .. '-0', s .. '-0')[1]
    if entry then return {'idem', rec, entry[2][2], entry[2][4]} end
    return {'idem', rec}
  end
end
if tonumber(cur) + 1 ~= tonumber(serial) then return {'conflict', cur} end
local head = redis.call('HGET', meta_key, 'head')
if check_head and head ~= expected_head then return {'stale', cur} end
local new = string.sub(redis.sha1hex(head .. '\\n' .. event_json), 1, 16)
redis.call('XADD', log_key, serial .. '-0', 'e', event_json, 'h', new)
redis.call('HSET', meta_key, 'serial', serial, 'status', status, 'head', new)
feed_add(feed_key, game_id, 'move', event_json, new)
if idempotency_key ~= '' then
  redis.call('SET', record_key, fingerprint .. ' ' .. serial, 'PX', record_ttl_ms)
end
if not webhooks_key then return {'ok', new} end
local reply = redis.call('HVALS', webhooks_key)
table.insert(reply, 1, new)
table.insert(reply, 1, 'ok')
return reply
"""


# The feed entry of a step (service.store.feed): serial = the last entry's + 1, head chained as
# feed.next_feed_head; fields f (feed head) first, so the last entry's head is its fields[2].
FEED_ADD_LUA = """
local function feed_add(feed_key, game_id, kind, body, game_head)
  local last = redis.call('XREVRANGE', feed_key, '+', '-', 'COUNT', 1)[1]
  local fserial, fhead = 0, ''
  if last then
    fserial = tonumber(string.match(last[1], '^(%d+)-'))
    fhead = last[2][2]
  end
  local new = string.sub(redis.sha1hex(fhead .. '\\n' .. game_id .. '\\n' .. kind .. '\\n'
                                       .. body), 1, 16)
  redis.call('XADD', feed_key, (fserial + 1) .. '-0', 'f', new, 'g', game_id, 'k', kind,
             'e', body, 'h', game_head)
end
"""
APPEND_LUA = APPEND_LUA.replace("%FEED_ADD%", FEED_ADD_LUA)


@dataclass(frozen=True, slots=True)
class AppendArgs:
    """The arguments of :data:`APPEND_LUA`, by name; :meth:`argv` writes them in the order
    the script reads them (Redis passes strings: a flag is ``'1'`` or ``''``)."""

    #: The serial of the event, which must be the game's current serial + 1.
    serial: int
    #: The idempotency key, None for none.
    idempotency_key: str | None
    #: The request body's fingerprint, recorded with the key.
    fingerprint: str
    #: The event as stored (:meth:`MoveEvent.to_json`).
    event_json: str
    #: The game's status after the move.
    status: str
    #: How long the idempotency record lives, in milliseconds.
    record_ttl_ms: int
    #: Rewrite a record found (the same value and TTL): a write of this connection's after
    #: the move, for WAIT to count the replicas that have it.
    rewrite_record: bool
    #: The log's head at ``serial - 1`` the caller built its state to; None: not checked.
    expected_head: str | None
    #: The game's id, written into its feed entry.
    game_id: str

    def argv(self) -> list:
        return [self.serial, self.idempotency_key or "", self.fingerprint, self.event_json,
                self.status, self.record_ttl_ms, _flag(self.rewrite_record),
                _flag(self.expected_head is not None), self.expected_head or "", self.game_id]


def _flag(value: bool) -> str:
    return "1" if value else ""


# KEYS: meta, idempotency record.
# ARGV: '1' to rewrite a record found (as AppendArgs.rewrite_record).
# Returns {'nogame'} | {'none'} | {'rec', "<fingerprint> <serial>"}.
LOOKUP_LUA = """
local meta_key, record_key = KEYS[1], KEYS[2]
local rewrite_record = ARGV[1] == '1'

local rec = redis.call('GET', record_key)
if rec then
  if rewrite_record then redis.call('SET', record_key, rec, 'KEEPTTL') end
  return {'rec', rec}
end
if redis.call('EXISTS', meta_key) == 0 then return {'nogame'} end
return {'none'}
"""

# KEYS: meta, the partition's feed. ARGV: game id, the created entry's body (feed.created_body),
# then field, value, field, value, ... Returns 1 if created, 0 if the id is taken.
CREATE_LUA = """
%FEED_ADD%
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
feed_add(KEYS[2], ARGV[1], 'created', ARGV[2], '')
return 1
"""
CREATE_LUA = CREATE_LUA.replace("%FEED_ADD%", FEED_ADD_LUA)

#: Errors of a cluster node after which the slot table is refreshed and the script and WAIT
#: are sent once more (to the slot's owner now). An ASK redirect is followed as such.
_RETRY_ON_ANOTHER_NODE = (MovedError, TryAgainError, ClusterDownError, SlotNotCoveredError,
                          redis.ConnectionError)


def _xread(client: redis.Redis, asking: bool, key: str, after_id: str, block_ms: int):
    """``XREAD BLOCK`` of one stream on ``client``, after ``ASKING`` on the same connection
    when the slot is migrating (see ``RedisRecorder._on_owner``)."""
    if not asking:
        return client.xread({key: after_id}, block=block_ms)
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("ASKING")
    pipe.xread({key: after_id}, block=block_ms)
    return pipe.execute()[-1]


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _event(fields: dict) -> MoveEvent:
    """The event of a log entry, with the head written beside it (``h``)."""
    if b"e" in fields:
        return MoveEvent.from_json(fields[b"e"], fields[b"h"].decode())
    return MoveEvent.from_json(fields["e"], fields["h"])


def _meta(game_id: str, raw: dict) -> GameMeta:
    """The metadata of ``game_id`` from its meta hash as read (``HGETALL``, not empty)."""
    d = {_s(k): _s(v) for k, v in raw.items()}
    return GameMeta(game_id=game_id, game=d["game"], params=json.loads(d["params"]),
                    token_sha256=d["token_sha256"], created_at=int(d["created_at"]),
                    serial=int(d["serial"]), status=d["status"], head=d["head"],
                    engine=(EngineSeat.from_dict(json.loads(d["engine"]))
                            if "engine" in d else None))


def _fields(raw: dict) -> dict:
    return {_s(k): v for k, v in raw.items()}


def _serial_of(entry_id) -> int:
    return int(_s(entry_id).partition("-")[0])


def _feed_entry(partition: int, entry_id, raw: dict) -> FeedEntry:
    f = raw if b"f" in raw else {k.encode(): v.encode() for k, v in raw.items()}
    return FeedEntry(partition, _serial_of(entry_id), f[b"f"].decode(), f[b"g"].decode(),
                     f[b"k"].decode(), f[b"e"].decode(), f[b"h"].decode())


def _record(rec) -> tuple[str, int]:
    fp, _, serial = _s(rec).rpartition(" ")
    return fp, int(serial)


class RedisRecorder(Recorder):
    """A recorder on a Redis connection: a ``redis.Redis`` (one server) or a
    ``redis.cluster.RedisCluster`` (redis-py's cluster client, which follows slot moves and
    failovers). Its pools are shared, never global.

    ``idempotency_ttl_s``: how long an idempotency record is kept (the key expires in Redis);
    after that, the same key is a new key.

    ``recent_kept``: how many of the newest games the index of :meth:`recent_games` keeps
    (the sorted set ``KeySpace.games_recent()``, trimmed at each game created).

    ``min_replicas`` and ``replica_timeout_ms``: with ``min_replicas = N > 0`` an append is
    acknowledged (returned) only once ``WAIT N replica_timeout_ms`` says that N replicas of
    the master holding the game have it; if fewer confirm within the timeout it raises
    :class:`NotReplicated`. ``WAIT`` counts the replicas that have acknowledged the
    replication offset its connection reached with its last write (Redis 7; Redis 6.2 moves
    that offset with every command of the connection), so it goes down the connection that
    ran the append script, right after it (one round trip: a pipeline of ``EVALSHA`` and
    ``WAIT``; on a cluster, on a connection of the node that owns the game's slot). A retry
    with the same idempotency key that finds its record rewrites the record (the same value
    and TTL) before its ``WAIT``: that write comes after the move in the master's history, so
    the replicas that confirm it have the move, whichever connection or process stored it.
    :meth:`lookup_idempotency` does the same, so a replay built from it promises as much. The
    ``WAIT`` also follows a script that appended nothing (a serial conflict, a reused key):
    it returns at once when the replicas are in step, else after ``replica_timeout_ms``.

    What is promised, and what is not (Redis replication is asynchronous; ``WAIT`` narrows
    the window in which an acknowledged write can be lost, it does not make Redis a
    consensus store):

    * With ``min_replicas = 0`` a returned append is on the master: in its memory, and on its
      disk as its ``appendonly``/``appendfsync`` say (``boxfish serve``'s own Redis fsyncs
      every write before it answers). If a replica that had not received it takes over (a
      failover), the move is lost although it was acknowledged, and its serial can be taken
      by another move.
    * With ``min_replicas = N >= 1`` and a returned append, the move was on at least N
      replicas when it was acknowledged. It survives the loss of the master unless a replica
      without it is promoted: Redis Cluster lets the most up-to-date replica (the largest
      replication offset) try first, but it does not guarantee that it wins, and an operator's
      ``CLUSTER FAILOVER FORCE``/``TAKEOVER`` may promote any replica. With N equal to the
      number of replicas of every master, every replica that could be promoted has it. It is
      lost if the master and every replica that had it are lost together (the replicas hold
      it in memory; on disk only as their own persistence settings say).
    * :class:`NotReplicated` does not roll the move back: it is in the log, readers may see
      it, its serial is taken. It may survive a failover or be lost in one; if it is lost,
      its idempotency record is lost with it (they were written in one step), so a retry with
      the same key appends it afresh.
    * Reads go to the master, so they may show moves that no replica has yet.
    """

    def __init__(self, connection: redis.Redis | RedisCluster, keys: KeySpace | None = None,
                 *, min_replicas: int = 0, replica_timeout_ms: int = 1000,
                 idempotency_ttl_s: float = 86400,
                 recent_kept: int = DEFAULT_RECENT_KEPT) -> None:
        if not isinstance(min_replicas, numbers.Integral) or min_replicas < 0:
            raise ValueError(f"min_replicas must be an integer >= 0, not {min_replicas!r}")
        # WAIT's timeout 0 means "for ever": a lost replica would hang every append.
        if not isinstance(replica_timeout_ms, numbers.Integral) or replica_timeout_ms < 1:
            raise ValueError("replica_timeout_ms must be an integer >= 1 (WAIT's 0 blocks for "
                             f"ever), not {replica_timeout_ms!r}")
        _check_ttl(idempotency_ttl_s)
        _check_recent_kept(recent_kept)
        self.recent_kept = recent_kept
        self.redis = connection
        self.keys = keys or KeySpace()
        self.cluster = isinstance(connection, RedisCluster)
        self.min_replicas = int(min_replicas)
        self.replica_timeout_ms = int(replica_timeout_ms)
        self.idempotency_ttl_s = idempotency_ttl_s
        self._ttl_ms = max(1, round(idempotency_ttl_s * 1000))
        # WAIT blocks on the connection: it must answer within the socket timeout (less the
        # margin the blocking stream reads keep), or a slow replica would end as a timeout.
        if self.min_replicas and replica_timeout_ms / 1000 > self._max_block_s:
            raise ValueError(f"replica_timeout_ms ({replica_timeout_ms}) must be at most "
                             f"{self._max_block_s * 1000:.0f}: the connection's socket timeout "
                             f"({self._socket_timeout()} s) less a margin")
        self._append = connection.register_script(APPEND_LUA)
        self._lookup = connection.register_script(LOOKUP_LUA)
        self._create = connection.register_script(CREATE_LUA)

    # -- games -----------------------------------------------------------------------------

    def create_game(self, meta: GameMeta) -> None:
        fields = {"game": meta.game, "params": json.dumps(meta.params, sort_keys=True),
                  "token_sha256": meta.token_sha256, "created_at": meta.created_at,
                  "serial": 0, "status": meta.status, "head": ""}
        if meta.engine is not None:
            fields["engine"] = json.dumps(meta.engine.to_dict(), sort_keys=True)
        args = [meta.game_id, created_body(meta.game, meta.params, meta.created_at),
                *(x for kv in fields.items() for x in kv)]
        keys = [self.keys.game_meta(meta.game_id), self.keys.feed(partition_of(meta.game_id))]
        if not self._create(keys=keys, args=args):
            raise GameIdTaken(meta.game_id)
        self._index_recent(meta)

    def _index_recent(self, meta: GameMeta) -> None:
        """Add the game to the index of recent games and trim it to the newest
        ``recent_kept``: one pipeline on the index's key, a command of its own after the
        create script (on a cluster the index is in another slot than the game's keys). The
        game is stored already: if the index cannot be written the game is only missing from
        the listing, which is logged, not raised."""
        key = self.keys.games_recent()
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.zadd(key, {meta.game_id: meta.created_at})
            pipe.zremrangebyrank(key, 0, -self.recent_kept - 1)
            pipe.execute()
        except redis.RedisError:
            log.warning("game %s is stored but not in the index of recent games",
                        meta.game_id, exc_info=True)

    def get_meta(self, game_id: str) -> GameMeta:
        raw = self.redis.hgetall(self.keys.game_meta(game_id))
        if not raw:
            raise GameNotFound(game_id)
        return _meta(game_id, raw)

    def recent_games(self, limit):
        """``ZREVRANGE`` of the index, then the games' metadata: in one pipeline on one
        server; one ``HGETALL`` per game on a cluster (the games' keys are in many slots)."""
        count = min(limit, self.recent_kept)
        ids = [_s(i) for i in self.redis.zrevrange(self.keys.games_recent(), 0, count - 1)]
        if self.cluster:
            found = []
            for game_id in ids:
                try:
                    found.append(self.get_meta(game_id))
                except GameNotFound:
                    continue
            return found
        pipe = self.redis.pipeline(transaction=False)
        for game_id in ids:
            pipe.hgetall(self.keys.game_meta(game_id))
        return [_meta(game_id, raw) for game_id, raw in zip(ids, pipe.execute(), strict=True)
                if raw]

    # -- appends ---------------------------------------------------------------------------

    def append(self, game_id, expected_serial, event, idempotency_key=None, fingerprint="",
               expected_head=None):
        _check_event(expected_serial, event)
        if idempotency_key == "" or " " in fingerprint:
            raise ValueError("empty idempotency key or a fingerprint with spaces")
        keys = [self.keys.game_meta(game_id), self.keys.game_log(game_id),
                self.keys.idempotency_record(game_id, idempotency_key or ""),
                self.keys.feed(partition_of(game_id)), self.keys.game_webhooks(game_id)]
        args = AppendArgs(serial=expected_serial, idempotency_key=idempotency_key,
                          fingerprint=fingerprint, event_json=event.to_json(),
                          status=event.status, record_ttl_ms=self._ttl_ms,
                          rewrite_record=bool(self.min_replicas), expected_head=expected_head,
                          game_id=game_id)
        try:
            res, acked = self._run(self._append, keys, args.argv())
        except (TryAgainError, ClusterError):
            # A slot migrating: its new node runs a script only if every key it names exists
            # there (else TRYAGAIN, which the cluster client retries until its TTL is spent:
            # ClusterError). A replay's keys all may, but a game's registrations often do not
            # exist: the script again without them. Nothing ran before (TRYAGAIN comes before
            # the script); a script that did run and lost its answer meets its own serial or
            # idempotency record, as any retry does.
            keys = keys[:4]
            res, acked = self._run(self._append, keys, args.argv())
        tag = _s(res[0])
        if tag == "ok":
            self._check_replicated(event.serial, acked)
            return Appended(replace(event, head=_s(res[1])),
                            webhooks=tuple(json.loads(v) for v in res[2:])
                            if len(keys) == 5 else None)
        if tag == "nogame":
            raise GameNotFound(game_id)
        if tag == "conflict":
            raise SerialConflict(int(res[1]))
        if tag == "stale":
            raise StaleHead(int(res[1]))
        fp, serial = _record(res[1])
        if fp != fingerprint:
            raise IdempotencyKeyReused(serial)
        self._check_replicated(serial, acked)
        if len(res) > 2:
            done = replace(MoveEvent.from_json(res[2]), head=_s(res[3]))
        else:
            done = self._event_at(game_id, serial)
        return Appended(done, replayed=True)

    def _event_at(self, game_id: str, serial: int) -> MoveEvent:
        entries = self.redis.xrange(self.keys.game_log(game_id), f"{serial}-0", f"{serial}-0")
        return _event(entries[0][1])

    def lookup_idempotency(self, game_id, key):
        keys = [self.keys.game_meta(game_id), self.keys.idempotency_record(game_id, key)]
        res, acked = self._run(self._lookup, keys, [_flag(bool(self.min_replicas))])
        tag = _s(res[0])
        if tag == "nogame":
            raise GameNotFound(game_id)
        if tag == "none":
            return None
        fp, serial = _record(res[1])
        self._check_replicated(serial, acked)
        return fp, serial

    def _check_replicated(self, serial: int, acked: int | None) -> None:
        if acked is not None and acked < self.min_replicas:
            raise NotReplicated(serial, acked, self.min_replicas)

    # -- running a script, and WAIT after it on the same connection -----------------------

    def _run(self, script, keys: list[str], args: list) -> tuple[list, int | None]:
        """Run ``script``; with ``min_replicas``, then ``WAIT`` on the same connection.
        Returns the script's reply and the number of replicas that confirmed (None without
        ``min_replicas``)."""
        if not self.min_replicas:
            return script(keys=keys, args=args), None
        return self._on_owner(keys[0], lambda client, asking: self._run_and_wait(
            client, script, keys, args, asking))

    def _run_and_wait(self, client: redis.Redis, script, keys, args, asking=False):
        """``EVALSHA`` and ``WAIT`` in one pipeline on one connection of ``client`` (a plain
        client of one server); after ``NOSCRIPT`` the script is loaded and the pair sent
        again. Raises the script's error, if any."""
        for _ in range(2):
            pipe = client.pipeline(transaction=False)  # WAIT inside MULTI would not wait
            if asking:
                pipe.execute_command("ASKING")
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            pipe.execute_command("WAIT", self.min_replicas, self.replica_timeout_ms)
            res, acked = pipe.execute(raise_on_error=False)[-2:]
            if isinstance(res, NoScriptError):
                script.sha = client.script_load(script.script)
                continue
            if isinstance(res, Exception):
                raise res
            if isinstance(acked, Exception):
                raise acked
            return res, int(acked)
        raise res

    # -- reads -----------------------------------------------------------------------------

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
        BLOCK`` calls (on one stream key, so one slot on a cluster), each shorter than the
        connection's socket timeout (which would otherwise end a longer one with
        ``redis.TimeoutError``)."""
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
            block = max(1, int(min(remaining, self._max_block_s) * 1000))
            res = self._on_owner(log, lambda c, asking, block=block: _xread(
                c, asking, log, f"{after}-0", block))
            if res:
                return [_event(fields) for _, fields in res[0][1]]

    # -- the feed ------------------------------------------------------------------------

    def read_feed(self, partition, after=None, limit=1000):
        """One round trip: the entry ``after`` names (to check its head) and those after
        it, in a pipeline on the node of the partition's slot."""
        key = self.keys.feed(partition)
        start = f"{after[0] + 1}-0" if after is not None else "-"

        def fn(client, asking):
            pipe = client.pipeline(transaction=False)
            if asking:
                pipe.execute_command("ASKING")
            if after is not None:
                pipe.xrange(key, f"{after[0]}-0", f"{after[0]}-0")
            pipe.xrange(key, start, "+", count=limit)
            return pipe.execute()

        res = self._on_owner(key, fn)
        if after is not None:
            at = res[-2]
            if not at or _s(_fields(at[0][1])["f"]) != after[1]:
                raise FeedRewritten(partition, after[0])
        return [_feed_entry(partition, entry_id, fields) for entry_id, fields in res[-1]]

    def read_games(self, game_ids):
        """One transaction (``MULTI``: each partition's games read at one instant) per
        partition named: every game's ``HGETALL`` of its metadata and ``XRANGE`` of its log
        (a partition's keys are in one slot, so on one node)."""
        by_partition: dict[int, list[str]] = {}
        for game_id in dict.fromkeys(game_ids):
            by_partition.setdefault(partition_of(game_id), []).append(game_id)
        found: dict[str, tuple[GameMeta, list[MoveEvent]] | None] = {}
        for ids in by_partition.values():

            def fn(client, asking, ids=ids):
                if asking:  # a slot migrating: one game at a time, as the base class does
                    return None
                pipe = client.pipeline(transaction=True)
                for game_id in ids:
                    pipe.hgetall(self.keys.game_meta(game_id))
                    pipe.xrange(self.keys.game_log(game_id))
                return pipe.execute()

            res = self._on_owner(self.keys.game_meta(ids[0]), fn)
            if res is None:
                found.update(zip(ids, super().read_games(ids), strict=True))
                continue
            for i, game_id in enumerate(ids):
                raw, entries = res[2 * i], res[2 * i + 1]
                found[game_id] = ((_meta(game_id, raw), [_event(f) for _, f in entries])
                                  if raw else None)
        return [found[g] for g in game_ids]

    def _feed_last(self, partition):
        last = self.redis.xrevrange(self.keys.feed(partition), "+", "-", count=1)
        if not last:
            return None
        return _serial_of(last[0][0]), _s(_fields(last[0][1])["f"])

    def _on_owner(self, key: str, fn):
        """``fn(client, asking)`` with a plain client of the server that holds ``key``: the
        connection itself on one server; on a cluster, one connection of the node that owns
        the key's slot. A redirect or a lost node refreshes the slot table and ``fn`` runs once
        more on the owner now; an ASK (a slot migrating) runs it on the node named, with
        ``asking`` true (``fn`` sends ``ASKING`` first on the same connection); a second
        failure is raised (a RedisError).

        Everything the recorder sends to one node goes through here: ``WAIT`` must follow the
        script on its connection, and ``XREAD`` must not go through redis-py's cluster routing,
        which asks its default node which keys an ``XREAD`` names (``COMMAND GETKEYS``): once
        that node's master had died, every blocking read failed until another command
        refreshed the slot table, also for games on healthy masters."""
        if not self.cluster:
            return fn(self.redis, False)
        node = self.redis.get_node_from_key(key)
        asking = False
        for attempt in (1, 2):
            try:
                return fn(self.redis.get_redis_connection(node), asking)
            except _RETRY_ON_ANOTHER_NODE:  # MOVED (a subclass of ASK) included
                if attempt == 2:
                    raise
                self.redis.nodes_manager.initialize()
                node = self.redis.get_node_from_key(key)
                asking = False
            except AskError as exc:
                if attempt == 2:
                    raise
                node = self.redis.nodes_manager.get_node(exc.host, exc.port)
                if node is None:
                    raise
                asking = True
        raise AssertionError("unreachable")

    def _socket_timeout(self) -> float | None:
        if self.cluster:
            kwargs = self.redis.get_connection_kwargs()
        else:
            pool = getattr(self.redis, "connection_pool", None)
            kwargs = getattr(pool, "connection_kwargs", {})
        return kwargs.get("socket_timeout")

    @property
    def _max_block_s(self) -> float:
        """The longest single blocking read: the socket timeout less a margin for the round
        trip (1 s, or half of a socket timeout under 2 s); unbounded without a timeout."""
        timeout = self._socket_timeout()
        if not timeout:
            return math.inf
        return max(timeout - 1.0, timeout / 2)

    def close(self) -> None:
        self.redis.close()

