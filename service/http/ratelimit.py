"""Rate limits: per client and per route class, counted in Redis so every API process shares
them.

* **Client**: a game's write token when the request carries that game's valid token
  (``Authorization: Bearer``; only its SHA-256 is used in the key), else the client's address.
  A token that is wrong, or for another game, counts against the address, so made-up tokens
  give no fresh buckets.
* **Route class**: ``analyses`` (POST /v1/analyses, POST /v1/games/{id}/analyses: the
  expensive one), ``games`` (POST /v1/games), ``appends`` (POST /v1/games/{id}/moves, POST
  /v1/games/{id}/engine/retry) and
  ``reads`` (everything else under /v1, and unknown paths). Operations (``/healthz``,
  ``/readyz``, ``/metrics``, ``/openapi.yaml``) are not limited.
* **Limits**: ``Settings.rate_limit_<class>``, e.g. ``"60/minute"`` or ``"10/second;300/minute"``
  (the ``limits`` package's notation), each a fixed window that starts at the client's first
  request in it. A request over any of its class's limits is answered 429
  (``application/problem+json``, type ``rate-limited``) with ``Retry-After``, and is not
  counted. Every limited answer, 429 or not, carries ``RateLimit-Limit``,
  ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds until the window restarts), for the
  limit of the class with the least left.

Counters live in the job queue's Redis (recomputable data; the move store may fsync every
write), under ``<key_prefix>:ratelimit:``, one key per client, class and limit, expiring with
its window. One script call per request checks and counts all of a class's limits at once. If
that Redis fails, requests pass unlimited for the next :data:`PAUSE_S` seconds (so an outage
does not add the Redis client's retries to every request), logged at most once a minute.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import redis
from flask import Flask, Response, current_app, g, request
from limits import parse_many

from ..application.games import token_hash, token_matches
from ..config import Settings
from .problems import Problem
from .views import bearer_token

log = logging.getLogger(__name__)

#: After a failure of the counters' Redis, rate limits are skipped this long, in seconds.
PAUSE_S = 5.0

CLASSES = ("analyses", "games", "appends", "reads")
#: The classes where a game's write token is a client of its own. Not analyses or game
#: creation: anyone can make a game, and so a token, so those are counted by address only.
TOKEN_CLASSES = frozenset({"appends", "reads"})

#: The POST (and DELETE) routes (endpoints) that are not reads.
WRITE_CLASSES = {
    "games.create_game": "games",
    "moves.append_move": "appends",
    "games.retry_engine": "appends",
    "analyses.submit_analysis": "analyses",
    "analyses.analyse_game": "analyses",
    "webhooks.create_webhook": "appends",
    "webhooks.delete_webhook": "appends",
}
#: Blueprints never limited.
EXEMPT_BLUEPRINTS = frozenset({"ops"})

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
    """The outcome for one request: whether it may pass, and the header values (of the
    limit with the least left)."""

    allowed: bool
    limit: Limit
    remaining: int
    reset_s: int

    def headers(self) -> dict[str, str]:
        return {"RateLimit-Limit": str(self.limit.amount),
                "RateLimit-Remaining": str(self.remaining),
                "RateLimit-Reset": str(self.reset_s)}


def parse_limits(text: str) -> list[Limit]:
    """``"10/second;300/minute"`` -> its limits (none for an empty text)."""
    if not text.strip():
        return []
    return [Limit(item.amount, item.get_expiry()) for item in parse_many(text)]


def route_class(endpoint: str | None, method: str) -> str | None:
    """The route class of a request (None: not limited)."""
    if endpoint is not None and endpoint.partition(".")[0] in EXEMPT_BLUEPRINTS:
        return None
    if method in ("POST", "DELETE") and endpoint in WRITE_CLASSES:
        return WRITE_CLASSES[endpoint]
    return "reads"


class RateLimiter:
    def __init__(self, settings: Settings, connection: redis.Redis) -> None:
        self.enabled = settings.rate_limit_enabled
        self.limits = {name: parse_limits(getattr(settings, f"rate_limit_{name}"))
                       for name in CLASSES}
        self.prefix = f"{settings.key_prefix}:ratelimit"
        self.redis = connection
        self.script = connection.register_script(_SCRIPT)
        self._last_error_log = 0.0
        self._paused_until = 0.0

    def init_app(self, app: Flask) -> None:
        app.extensions["boxfish_ratelimit"] = self
        if not self.enabled:
            return
        app.before_request(self._before)
        app.after_request(self._after)

    # The client.

    def client_of(self, services) -> str:
        """``token:<sha256 of the token, 32 hex digits>`` for a request carrying the write
        token of the game in its path, else ``ip:<address>``."""
        game_id = (request.view_args or {}).get("game_id")
        token = bearer_token(request.headers.get("Authorization"))
        if game_id and token and len(game_id) <= 64:
            try:
                meta = services.games.static_meta(game_id)
            except Exception:  # noqa: BLE001 - no such game, store down: by address
                meta = None
            if meta is not None and token_matches(meta, token):
                return f"token:{token_hash(token)[:32]}"
        return f"ip:{request.remote_addr or 'unknown'}"

    # Counting.

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

    # Flask hooks.

    def _before(self) -> None:
        name = route_class(request.endpoint, request.method)
        if name is None or not self.limits[name]:
            return
        services = current_app.extensions["boxfish"]
        client = (self.client_of(services) if name in TOKEN_CLASSES
                  else f"ip:{request.remote_addr or 'unknown'}")
        verdict = self.hit(name, client)
        if verdict is None:
            return
        g.rate_limit = verdict
        if not verdict.allowed:
            raise Problem(429, "rate-limited", "Too many requests",
                          f"this client made more than {verdict.limit} {name} requests; "
                          f"retry in {verdict.reset_s} s",
                          headers={"Retry-After": str(verdict.reset_s)},
                          route_class=name, limit=verdict.limit.amount,
                          window_s=verdict.limit.window_s)

    @staticmethod
    def _after(response: Response) -> Response:
        verdict = g.get("rate_limit")
        if verdict is not None:
            for name, value in verdict.headers().items():
                response.headers[name] = value
        return response
