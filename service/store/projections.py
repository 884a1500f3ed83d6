"""The storage of projections: state derived from the feed of every game, in the move store's
Redis (see docs/projections.md and :mod:`service.application.projections`, which runs them).

A projection ``name`` has numbered versions. Its pointer (``KeySpace.projection_pointer``)
names the version readers read (``current``) and the one being built (``target``, equal to
``current`` once built). Every key of one version shares one hash tag
(``{proj:<name>:v<N>}``), so that on a Redis Cluster they are in one slot and one script,
:data:`APPLY_LUA`, changes a game's counts, its ledger entry and a partition's checkpoint
together: the version's state is always the effect of a prefix of the applies made, even when
a projector dies between two, or the master holding it fails over and loses the last ones.

What a version keeps: per feed partition, a checkpoint (the last feed entry it took in) and a
ledger (game id -> ``"<log head> <source>"``: what it counted of that game, the source being
the projection's own compact JSON of it); and buckets, hashes of integer counters and of
short lists of samples (comma-separated ids, newest first, at most ``sample_cap``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import redis
from redis.cluster import RedisCluster

from .keys import KeySpace

# KEYS: the game's partition's ledger, the checkpoints, then the buckets the changes name.
# ARGV: as ApplyArgs.argv() writes them, named at the top of the script; after them the
# counter changes (bucket's KEYS index, field, delta) x counts, then the sample changes
# (bucket's KEYS index, field, member, '1' to add | '' to remove) to the end.
# Returns {'ok'} | {'stale', the ledger entry found} (the ledger entry is not the one the
# caller computed its changes from: nothing was changed).
APPLY_LUA = """
local ledger_key, checkpoints_key = KEYS[1], KEYS[2]
local game_id = ARGV[1]
local expected = ARGV[2]
local ledger_value = ARGV[3]
local partition = ARGV[4]
local checkpoint = ARGV[5]
local sample_cap = tonumber(ARGV[6])
local counts = tonumber(ARGV[7])
if game_id ~= '' then
  local cur = redis.call('HGET', ledger_key, game_id) or ''
  if cur ~= expected then return {'stale', cur} end
  local i = 8
  for _ = 1, counts do
    local key = KEYS[tonumber(ARGV[i])]
    if redis.call('HINCRBY', key, ARGV[i + 1], ARGV[i + 2]) == 0 then
      redis.call('HDEL', key, ARGV[i + 1])
    end
    i = i + 3
  end
  while i <= #ARGV do
    local key, sample_field, member = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
    local kept = {}
    if ARGV[i + 3] == '1' then table.insert(kept, member) end
    local list = redis.call('HGET', key, sample_field)
    if list then
      for m in string.gmatch(list, '[^,]+') do
        if m ~= member and #kept < sample_cap then table.insert(kept, m) end
      end
    end
    if #kept == 0 then
      redis.call('HDEL', key, sample_field)
    else
      redis.call('HSET', key, sample_field, table.concat(kept, ','))
    end
    i = i + 4
  end
  if ledger_value == '' then
    redis.call('HDEL', ledger_key, game_id)
  else
    redis.call('HSET', ledger_key, game_id, ledger_value)
  end
end
if partition ~= '' then
  if checkpoint == '' then
    redis.call('HDEL', checkpoints_key, partition)
  else
    redis.call('HSET', checkpoints_key, partition, checkpoint)
  end
end
return {'ok'}
"""

# KEYS: the pointer. ARGV: the schema the caller's code builds. If there is no target, or the
# target was built by another schema, a new version becomes the target (one more than any).
# Returns {current or '', target}.
ENSURE_LUA = """
local pointer_key = KEYS[1]
local schema = ARGV[1]
local current = redis.call('HGET', pointer_key, 'current')
local target = redis.call('HGET', pointer_key, 'target')
if not target or redis.call('HGET', pointer_key, 'schema:' .. target) ~= schema then
  target = tostring(tonumber(target or '0') + 1)
  redis.call('HSET', pointer_key, 'target', target, 'schema:' .. target, schema)
end
return {current or '', target}
"""

# KEYS: the pointer. ARGV: the schema. A new version becomes the target (one more than any),
# whatever is being built. Returns the new target.
REBUILD_LUA = """
local pointer_key = KEYS[1]
local schema = ARGV[1]
local target = tonumber(redis.call('HGET', pointer_key, 'target') or '0') + 1
redis.call('HSET', pointer_key, 'target', target, 'schema:' .. target, schema)
return target
"""

# KEYS: the pointer. ARGV: the version built. If it is still the target, it becomes current
# (the readers' version) and the old current's schema is forgotten. Returns the old current
# ('' for none), or false when the target has moved on (another rebuild asked for).
SWITCH_LUA = """
local pointer_key = KEYS[1]
local version = ARGV[1]
if redis.call('HGET', pointer_key, 'target') ~= version then return false end
local old = redis.call('HGET', pointer_key, 'current') or ''
redis.call('HSET', pointer_key, 'current', version)
if old ~= '' and old ~= version then redis.call('HDEL', pointer_key, 'schema:' .. old) end
return old
"""


@dataclass(frozen=True, slots=True)
class ApplyArgs:
    """The arguments of :data:`APPLY_LUA`, by name; :meth:`argv` writes them in the order the
    script reads them, then the changes."""

    #: The game whose ledger entry is set ('' for a checkpoint alone).
    game_id: str
    #: The ledger entry the changes were computed from ('' for none): the compare of the
    #: compare-and-set.
    expected: str
    #: The game's new ledger entry ('' removes it: the game counts for nothing).
    ledger_value: str
    #: The feed partition whose checkpoint is written (None: none is).
    partition: int | None
    #: The checkpoint, ``<serial>.<head>`` ('' for the partition's start).
    checkpoint: str
    #: The longest a list of samples grows.
    sample_cap: int
    #: Counter changes: (bucket's KEYS index, field, delta).
    counts: tuple[tuple[int, str, int], ...] = field(default=())
    #: Sample changes: (bucket's KEYS index, field, member, add or remove).
    samples: tuple[tuple[int, str, str, bool], ...] = field(default=())

    def argv(self) -> list:
        out = [self.game_id, self.expected, self.ledger_value,
               "" if self.partition is None else self.partition, self.checkpoint,
               self.sample_cap, len(self.counts)]
        for index, name, delta in self.counts:
            out += [index, name, delta]
        for index, name, member, add in self.samples:
            out += [index, name, member, "1" if add else ""]
        return out


@dataclass(frozen=True, slots=True)
class Changes:
    """What one apply changes: counter deltas and samples added or removed, per bucket and
    field (the bucket named as the projection names it)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (bucket, field, member) -> True to add, False to remove.
    samples: dict[tuple[str, str, str], bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Apply:
    """One apply (:meth:`ProjectionStore.apply`): if ``game_id``'s ledger entry is
    ``expected``, ``changes``, the entry set to ``ledger_value``, and the partition's
    checkpoint set to ``checkpoint`` (None: left)."""

    game_id: str
    expected: str
    ledger_value: str
    changes: Changes
    checkpoint: tuple[int, str] | None


@dataclass(frozen=True, slots=True)
class Versions:
    """A projection's pointer: the version readers read (None: none built yet) and the one
    being built (None: none asked for)."""

    current: int | None
    target: int | None


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def parse_checkpoint(text: str) -> tuple[int, str]:
    serial, _, head = text.partition(".")
    return int(serial), head


class ProjectionStore:
    """Projections' state on the move store's Redis ``connection`` (one server or a Redis
    Cluster), under ``keys``. Thread-safe (redis-py's pools)."""

    def __init__(self, connection: redis.Redis | RedisCluster, keys: KeySpace) -> None:
        self.redis = connection
        self.keys = keys
        self.cluster = isinstance(connection, RedisCluster)
        self._apply = connection.register_script(APPLY_LUA)
        self._ensure = connection.register_script(ENSURE_LUA)
        self._rebuild = connection.register_script(REBUILD_LUA)
        self._switch = connection.register_script(SWITCH_LUA)

    # -- versions --------------------------------------------------------------------------

    def versions(self, name: str) -> Versions:
        current, target = self.redis.hmget(self.keys.projection_pointer(name),
                                           ["current", "target"])
        return Versions(int(current) if current else None, int(target) if target else None)

    def ensure_target(self, name: str, schema: str) -> Versions:
        """The pointer, with a target built by ``schema`` (a new version when the target was
        built by another, or there is none)."""
        current, target = self._ensure(keys=[self.keys.projection_pointer(name)],
                                       args=[schema])
        return Versions(int(current) if _s(current) else None, int(target))

    def request_rebuild(self, name: str, schema: str) -> int:
        """Make a new version the target (a rebuild from the start); returns it."""
        return int(self._rebuild(keys=[self.keys.projection_pointer(name)], args=[schema]))

    def switch(self, name: str, version: int) -> tuple[bool, int | None]:
        """Make ``version`` current if it is still the target: ``(switched, old current)``."""
        old = self._switch(keys=[self.keys.projection_pointer(name)], args=[version])
        if old is None:
            return False, None
        return True, int(old) if _s(old) else None

    def drop(self, name: str, version: int, batch: int = 500) -> int:
        """Delete every key of ``version`` (``UNLINK``, in batches); returns how many."""
        pattern = f"{self.keys.projection_base(name, version)}:*"
        found = 0
        chunk: list = []
        for key in self.redis.scan_iter(match=pattern, count=batch):
            chunk.append(key)
            if len(chunk) >= batch:
                found += self.redis.unlink(*chunk)
                chunk = []
        if chunk:
            found += self.redis.unlink(*chunk)
        return found

    # -- a version's state ------------------------------------------------------------------

    def checkpoints(self, name: str, version: int) -> dict[int, tuple[int, str]]:
        raw = self.redis.hgetall(self.keys.projection_checkpoints(name, version))
        return {int(_s(p)): parse_checkpoint(_s(v)) for p, v in raw.items()}

    def ledger(self, name: str, version: int, partition: int,
               game_ids: list[str]) -> list[str]:
        """The ledger entries of ``game_ids`` (all of ``partition``; '' for none)."""
        if not game_ids:
            return []
        raw = self.redis.hmget(self.keys.projection_ledger(name, version, partition),
                               game_ids)
        return [_s(v) if v is not None else "" for v in raw]

    def ledger_items(self, name: str, version: int,
                     partition: int) -> Iterator[tuple[str, str]]:
        """Every (game id, ledger entry) of ``partition`` (``HSCAN``: an entry changed
        meanwhile may come twice or as it is after the change)."""
        key = self.keys.projection_ledger(name, version, partition)
        for game_id, value in self.redis.hscan_iter(key, count=500):
            yield _s(game_id), _s(value)

    def bucket(self, name: str, version: int, bucket: str) -> dict[str, str]:
        raw = self.redis.hgetall(self.keys.projection_bucket(name, version, bucket))
        return {_s(k): _s(v) for k, v in raw.items()}

    def apply(self, name: str, version: int, partition: int, game_id: str, expected: str,
              ledger_value: str, changes: Changes, checkpoint: tuple[int, str] | None,
              sample_cap: int) -> bool:
        """In one step: if ``game_id``'s ledger entry is ``expected``, apply ``changes``, set
        the entry to ``ledger_value`` ('' removes it) and ``partition``'s checkpoint to
        ``checkpoint`` (None: leave it). Returns False, changing nothing, when the entry is
        another (a concurrent projector's apply: read it again)."""
        keys, argv = self._apply_call(name, version, partition, Apply(
            game_id, expected, ledger_value, changes, checkpoint), sample_cap)
        return _s(self._apply(keys=keys, args=argv)[0]) == "ok"

    def apply_many(self, name: str, version: int, partition: int, applies: list[Apply],
                   sample_cap: int) -> list[bool]:
        """:meth:`apply` of each of ``applies`` in order, in one pipeline (one round trip,
        and one fsync of an ``appendfsync always`` server); each is its own step. Returns
        what each returned."""
        if not applies:
            return []
        calls = [self._apply_call(name, version, partition, a, sample_cap) for a in applies]
        client = self.redis
        if self.cluster:  # every key of a version is in one slot: a plain client of its node
            node = self.redis.get_node_from_key(calls[0][0][0])
            client = self.redis.get_redis_connection(node)
        pipe = client.pipeline(transaction=False)
        for keys, argv in calls:
            self._apply(keys=keys, args=argv, client=pipe)
        return [_s(res[0]) == "ok" for res in pipe.execute()]

    def _apply_call(self, name: str, version: int, partition: int, a: Apply,
                    sample_cap: int) -> tuple[list[str], list]:
        """The keys and arguments of :data:`APPLY_LUA` for ``a``."""
        game_id, expected, ledger_value, changes, checkpoint = (
            a.game_id, a.expected, a.ledger_value, a.changes, a.checkpoint)
        buckets: dict[str, int] = {}

        def index(bucket: str) -> int:
            if bucket not in buckets:
                buckets[bucket] = len(buckets) + 3
            return buckets[bucket]

        counts = tuple((index(b), f, d) for (b, f), d in changes.counts.items() if d)
        samples = tuple((index(b), f, m, add) for (b, f, m), add in changes.samples.items())
        args = ApplyArgs(game_id=game_id, expected=expected, ledger_value=ledger_value,
                         partition=None if checkpoint is None else partition,
                         checkpoint="" if checkpoint is None else f"{checkpoint[0]}."
                                                                  f"{checkpoint[1]}",
                         sample_cap=sample_cap, counts=counts, samples=samples)
        keys = [self.keys.projection_ledger(name, version, partition),
                self.keys.projection_checkpoints(name, version),
                *(self.keys.projection_bucket(name, version, b) for b in buckets)]
        return keys, args.argv()

    def set_checkpoint(self, name: str, version: int, partition: int,
                       checkpoint: tuple[int, str] | None) -> None:
        """Set ``partition``'s checkpoint alone (None: back to the partition's start)."""
        args = ApplyArgs(game_id="", expected="", ledger_value="", partition=partition,
                         checkpoint="" if checkpoint is None else f"{checkpoint[0]}."
                                                                  f"{checkpoint[1]}",
                         sample_cap=0)
        self._apply(keys=[self.keys.projection_ledger(name, version, partition),
                          self.keys.projection_checkpoints(name, version)], args=args.argv())
