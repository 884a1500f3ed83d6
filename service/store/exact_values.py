"""The store of exact values in Redis: entries (JSON) by position, shared by every worker and
process. What a position's name and entry hold is the application's
(:mod:`service.application.exact_values`); this is where they are kept.

Entries live in the move store's Redis (one Redis or a Redis Cluster) in ``EXACT_SHARDS``
shards, each its own hash tag (:meth:`~service.store.keys.KeySpace.exact_shard`), so no key
is hot and each write is one script on one slot. The budget (``max_bytes``) is split evenly
over the shards as a number of entries (``ENTRY_BYTES`` each, measured by
``bench/exact_store_bench.py``); past it a write evicts the entries whose proofs were the
cheapest to make again. Losing the store loses no game: analyses merely search again.
"""

from __future__ import annotations

import hashlib
import json

from .connections import StoreConnection
from .keys import KeySpace

#: Shards of the store (hash tags): enough to spread over any cluster's masters.
EXACT_SHARDS = 64
#: Bytes an entry takes in Redis, for the budget: a 5x5 entry with 20-35 moves' values, its
#: cost and its share of the shards' hashes and sorted sets took 532 (MEMORY USAGE over 20,000
#: entries, bench/exact_store_bench.py --size-entries); rounded up.
ENTRY_BYTES = 560

# KEYS: entries, costs, stats; ARGV: field, entry JSON, cost, the shard's most entries.
# Writes the entry, scores it by its cost (the higher of the old and new), evicts the
# cheapest while the shard holds too many; returns how many it evicted.
_RECORD = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local old = redis.call('ZSCORE', KEYS[2], ARGV[1])
if (not old) or tonumber(old) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
redis.call('HINCRBY', KEYS[3], 'writes', 1)
local n = redis.call('HLEN', KEYS[1])
local most = tonumber(ARGV[4])
local evicted = 0
while n > most do
  local low = redis.call('ZPOPMIN', KEYS[2])
  if #low == 0 then break end
  redis.call('HDEL', KEYS[1], low[1])
  n = n - 1
  evicted = evicted + 1
end
if evicted > 0 then redis.call('HINCRBY', KEYS[3], 'evictions', evicted) end
return evicted
"""

# KEYS: entries, stats; ARGV: field. The entry (or nil), counting a hit or a miss.
_LOOKUP = """
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HINCRBY', KEYS[2], 'hits', 1)
else redis.call('HINCRBY', KEYS[2], 'misses', 1) end
return v
"""


class ExactValueStore:
    """The store on ``connection`` (the move store's: plain or a cluster) under ``keys``, of at
    most ``max_bytes`` (see the module docstring)."""

    def __init__(self, connection: StoreConnection, keys: KeySpace, max_bytes: int,
                 shards: int = EXACT_SHARDS) -> None:
        self.redis = connection
        self.keys = keys
        self.shards = shards
        self.max_bytes = max_bytes
        self.shard_entries = max(1, max_bytes // (shards * ENTRY_BYTES))

    def _where(self, position: str):
        shard = int.from_bytes(hashlib.sha1(position.encode()).digest()[:4], "big") % self.shards
        return self.keys.exact_shard(shard)

    def get(self, position: str) -> dict | None:
        """The entry of ``position`` (the application's canonical name of it), or None;
        counted as a hit or a miss."""
        entries, _costs, stats = self._where(position)
        raw = self.redis.eval(_LOOKUP, 2, entries, stats, position)
        return None if raw is None else json.loads(raw)

    def peek(self, position: str) -> dict | None:
        """The entry of ``position``, or None, counted neither as a hit nor a miss (a writer's
        read of what it is about to replace)."""
        raw = self.redis.hget(self._where(position)[0], position)
        return None if raw is None else json.loads(raw)

    def put(self, position: str, entry: dict, cost: float) -> int:
        """Store ``entry`` (JSON-ready) for ``position``, scored by ``cost`` (the seconds its
        proof took; the higher of the old and new score is kept). Returns the entries
        evicted to keep the shard within its budget."""
        keys = self._where(position)
        return int(self.redis.eval(_RECORD, 3, *keys, position,
                                   json.dumps(entry, separators=(",", ":")), cost,
                                   self.shard_entries))

    # -- for operators -------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Entries, bytes (Redis's ``MEMORY USAGE`` of the shards), hits, misses, writes and
        evictions, over every shard."""
        out = {"entries": 0, "bytes": 0, "hits": 0, "misses": 0, "writes": 0, "evictions": 0}
        for shard in range(self.shards):
            entries, costs, stats = self.keys.exact_shard(shard)
            out["entries"] += int(self.redis.hlen(entries))
            for key in (entries, costs):
                out["bytes"] += int(self.redis.memory_usage(key) or 0)
            for k, v in self.redis.hgetall(stats).items():
                name = k.decode() if isinstance(k, bytes) else k
                if name in out:
                    out[name] += int(v)
        return out

    def clear(self) -> None:
        """Delete every entry and counter of the store."""
        for shard in range(self.shards):
            for key in self.keys.exact_shard(shard):
                self.redis.delete(key)
