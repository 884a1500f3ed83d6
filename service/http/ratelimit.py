"""Rate limits: per client and per route class, counted in Redis so every API process shares
them.

* **Client**: a game's write token when the request carries that game's valid token
  (``Authorization: Bearer``; only its SHA-256 is used in the key), else the client's address
  (the connection's; behind ``Settings.trusted_proxy_hops`` trusted proxies, the one they
  forwarded in ``X-Forwarded-For``: ``create_app`` installs Werkzeug's ``ProxyFix``).
  A token that is wrong, or for another game, counts against the address, so made-up tokens
  give no fresh buckets.
* **Route class**: ``analyses`` (POST /v1/analyses, POST /v1/games/{id}/analyses: the
  expensive one), ``reviews`` (POST /v1/games/{id}/reviews: a search of every position of
  a game, a class of its own), ``games`` (POST /v1/games, POST /v1/games/import), ``appends`` (POST
  /v1/games/{id}/moves, POST /v1/games/{id}/engine/retry), ``animations`` (GET
  /v1/games/{id}/animation.gif: a frame drawn per move) and ``reads`` (everything else
  under /v1, and unknown paths). Operations (``/healthz``,
  ``/readyz``, ``/metrics``, ``/openapi.yaml``) are not limited.
* **Limits**: ``Settings.rate_limit_<class>``, e.g. ``"60/minute"`` or ``"10/second;300/minute"``
  (the ``limits`` package's notation), each a fixed window that starts at the client's first
  request in it. A request over any of its class's limits is answered 429
  (``application/problem+json``, type ``rate-limited``) with ``Retry-After``, and is not
  counted. Every limited answer, 429 or not, carries ``RateLimit-Limit``,
  ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds until the window restarts), for the
  limit of the class with the least left.

The counters are the store's (:mod:`service.store.rate_limits`: in the job queue's Redis,
shared by every API process); this module is the Flask side: which client and class a request
is, its 429 and its headers. If the counters' Redis fails, requests pass unlimited for a few
seconds.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, g, request

from ..application.games import token_hash, token_matches
from ..config import Settings
from ..store.connections import QueueConnection
from ..store.rate_limits import RateCounters, Verdict, parse_limits
from .problems import Problem
from .views import bearer_token

CLASSES = ("analyses", "reviews", "games", "appends", "animations", "reads")
#: The classes where a game's write token is a client of its own. Not analyses, reviews or game
#: creation: anyone can make a game, and so a token, so those are counted by address only.
TOKEN_CLASSES = frozenset({"appends", "reads"})

#: The POST (and DELETE) routes (endpoints) that are not reads.
WRITE_CLASSES = {
    "games.create_game": "games",
    "games.import_game": "games",
    "moves.append_move": "appends",
    "games.retry_engine": "appends",
    "analyses.submit_analysis": "analyses",
    "analyses.analyse_game": "analyses",
    "reviews.create_review": "reviews",
    "webhooks.create_webhook": "appends",
    "webhooks.delete_webhook": "appends",
}
#: The GET routes (endpoints) that are not plain reads: they cost far more than one.
COSTLY_READS = {"pictures.game_animation": "animations"}
#: Blueprints never limited.
EXEMPT_BLUEPRINTS = frozenset({"ops"})


def route_class(endpoint: str | None, method: str) -> str | None:
    """The route class of a request (None: not limited)."""
    if endpoint is not None and endpoint.partition(".")[0] in EXEMPT_BLUEPRINTS:
        return None
    if method in ("POST", "DELETE") and endpoint in WRITE_CLASSES:
        return WRITE_CLASSES[endpoint]
    if method == "GET" and endpoint in COSTLY_READS:
        return COSTLY_READS[endpoint]
    return "reads"


def limit_headers(verdict: Verdict) -> dict[str, str]:
    """The ``RateLimit-*`` headers of ``verdict`` (of the limit with the least left)."""
    return {"RateLimit-Limit": str(verdict.limit.amount),
            "RateLimit-Remaining": str(verdict.remaining),
            "RateLimit-Reset": str(verdict.reset_s)}


class RateLimiter:
    """The Flask hooks that count each request (:meth:`init_app`) on the counters of
    ``settings``' limits in ``connection`` (the job queue's Redis)."""

    def __init__(self, settings: Settings, connection: QueueConnection) -> None:
        self.enabled = settings.rate_limit_enabled
        self.counters = RateCounters(
            connection, f"{settings.key_prefix}:ratelimit",
            {name: parse_limits(getattr(settings, f"rate_limit_{name}")) for name in CLASSES})
        self.limits = self.counters.limits

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
            except Exception:  # no such game, store down: by address
                meta = None
            if meta is not None and token_matches(meta, token):
                return f"token:{token_hash(token)[:32]}"
        return f"ip:{request.remote_addr or 'unknown'}"

    # Flask hooks.

    def _before(self) -> None:
        name = route_class(request.endpoint, request.method)
        if name is None or not self.limits[name]:
            return
        services = current_app.extensions["boxfish"]
        client = (self.client_of(services) if name in TOKEN_CLASSES
                  else f"ip:{request.remote_addr or 'unknown'}")
        verdict = self.counters.hit(name, client)
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
            for name, value in limit_headers(verdict).items():
                response.headers[name] = value
        return response
