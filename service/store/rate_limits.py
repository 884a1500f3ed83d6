"""Rate-limit counters in Redis, shared by every API process: fixed windows per client and
route class.

A limit (:class:`Limit`, written ``"60/minute"`` or ``"10/second;300/minute"``, the ``limits``
package's notation) is a fixed window that starts at a client's first request in it.
Counters live in the job queue's Redis (recomputable data; the move store may fsync every
write), under ``<key_prefix>:ratelimit:``, one key per client, class and limit, expiring with
its window. One script call per request checks and counts all of a class's limits at once
(:meth:`RateCounters.hit`); a request over any of them is not counted. If that Redis fails,
nothing is counted for the next :data:`PAUSE_S` seconds (so an outage does not add the Redis
client's retries to every request), logged at most once a minute.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import redis
from limits import parse_many

log = logging.getLogger(__name__)

#: After a failure of the counters' Redis, rate limits are skipped this long, in seconds.
PAUSE_S = 5.0

# Checks every limit of a class (KEYS[i] with ARGV[2i-1] requests per ARGV[2i] ms); if none
# is exhausted, counts the request in all of them, starting a window where none runs.
# Returns {blocked, count_1, pttl_1, count_2, pttl_2, ...}.
_SCRIPT = """
local n = #KEYS
local counts, ttls = {}, {}
local blocked = 0
for i = 1, n do
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  ttls[i] = redis.call('PTTL', KEYS[i])
  if counts[i] >= tonumber(ARGV[2 * i - 1]) then blocked = 1 end
end
if blocked == 0 then
  for i = 1, n do
    counts[i] = redis.call('INCR', KEYS[i])
    if ttls[i] < 0 then
      redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
      ttls[i] = tonumber(ARGV[2 * i])
    end
  end
end
local out = {blocked}
for i = 1, n do
  out[#out + 1] = counts[i]
  out[#out + 1] = ttls[i]
end
return out
"""


@dataclass(frozen=True)
class Limit:
    amount: int
    window_s: int

    def __str__(self) -> str:
        return f"{self.amount} per {self.window_s} s"


@dataclass(frozen=True)
class Verdict:
    """The outcome for one request: whether it may pass, and (of the limit with the least
    left) the limit, the requests left in its window and the seconds until it restarts."""

    allowed: bool
    limit: Limit
    remaining: int
    reset_s: int


def parse_limits(text: str) -> list[Limit]:
    """``"10/second;300/minute"`` -> its limits (none for an empty text)."""
    if not text.strip():
        return []
    return [Limit(item.amount, item.get_expiry()) for item in parse_many(text)]


class RateCounters:
    """The counters of each route class's ``limits`` (a class name -> its limits), under
    ``prefix`` on ``connection``."""

    def __init__(self, connection: redis.Redis, prefix: str,
                 limits: dict[str, list[Limit]]) -> None:
        self.limits = limits
        self.prefix = prefix
        self.script = connection.register_script(_SCRIPT)
        self._last_error_log = 0.0
        self._paused_until = 0.0

    def keys(self, name: str, client: str) -> list[str]:
        # One hash tag per client and class: a class's keys share a Redis Cluster slot.
        return [f"{self.prefix}:{{{name}:{client}}}:{limit.amount}/{limit.window_s}"
                for limit in self.limits[name]]

    def hit(self, name: str, client: str) -> Verdict | None:
        """Check and count one request of class ``name`` from ``client`` (None: the class has
        no limits, or Redis failed)."""
        limits = self.limits[name]
        if not limits or time.monotonic() < self._paused_until:
            return None
        args = []
        for limit in limits:
            args += [limit.amount, limit.window_s * 1000]
        try:
            out = self.script(keys=self.keys(name, client), args=args)
        except redis.exceptions.RedisError as exc:
            now = time.monotonic()
            self._paused_until = now + PAUSE_S
            if now - self._last_error_log > 60:
                self._last_error_log = now
                log.warning("rate limits not applied: their Redis failed: %s", exc)
            return None
        blocked = bool(out[0])
        verdicts = []
        for i, limit in enumerate(limits):
            count, ttl_ms = int(out[1 + 2 * i]), int(out[2 + 2 * i])
            reset_s = math.ceil(ttl_ms / 1000) if ttl_ms > 0 else limit.window_s
            verdicts.append(Verdict(not blocked, limit, max(0, limit.amount - count), reset_s))
        if blocked:  # the exhausted limit that frees up last
            return max((v for v in verdicts if v.remaining == 0), key=lambda v: v.reset_s)
        return min(verdicts, key=lambda v: (v.remaining, -v.reset_s))
