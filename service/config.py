"""Service configuration, read once from the environment.

Every setting can be given as an environment variable ``BOXFISH_<NAME>`` (``REDIS_URL`` is also
read without the prefix, as most hosting platforms set it). Tests and the CLI build a
:class:`Settings` directly and pass it to :func:`service.http.app.create_app`; a worker process
reads its own once (see :func:`workers.analysis_job.process_runner`).

The constants the API and the workers share live here too, so the API never imports the
workers' modules.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: RQ's worker TTL, in seconds: a worker sends a heartbeat about every (this - 15) s, and
#: ``/readyz`` trusts a worker whose last heartbeat is younger than this plus a margin.
WORKER_TTL_S = 35

#: Default size of a worker process's search cache, in positions (see
#: :attr:`Settings.search_cache_entries`).
DEFAULT_SEARCH_CACHE_ENTRIES = 500_000

#: Default size of a worker process's compiled transposition table, in MiB per board size
#: (see :attr:`Settings.search_table_mb`).
DEFAULT_SEARCH_TABLE_MB = 64

#: A distributed solve (``boxfish solve --distributed``): the plies the tree is unfolded to
#: before its leaves become jobs (4x4 from the empty board: 936 subproblems).
SOLVE_SPLIT_DEPTH = 3
#: The RQ timeout of a subproblem job, in seconds: a day (a 4x5 subproblem may take hours).
SOLVE_JOB_TIMEOUT_S = 86_400
#: Jobs a distributed solve keeps queued beyond the ones running, per live worker.
SOLVE_QUEUED_PER_WORKER = 2
#: Times a subproblem's job may fail (an exception in it, not a dead worker's) before the
#: solve gives up.
SOLVE_MAX_FAILURES = 3


#: The projections of the feed ``boxfish project NAME`` runs (docs/projections.md; their
#: code: ``service.application.wiring.PROJECTIONS``).
PROJECTION_NAMES = ("explorer",)


def search_threads_for(workers: int) -> int:
    """The search threads of each of ``workers`` analysis workers sharing this machine: the
    CPUs this process may use, divided among them (at least 1)."""
    from boxfish.engine.analysis import usable_cores
    return max(1, usable_cores() // max(1, workers))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOXFISH_", extra="ignore", frozen=True,
                                      populate_by_name=True)

    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "BOXFISH_REDIS_URL"))
    #: Redis of the analysis job queue (RQ); default: the same as ``redis_url``. Jobs are
    #: recomputable, so this Redis may fsync less often than the move store's.
    queue_redis_url: str | None = None
    #: Prefix of every Redis key the store writes (lets several deployments share one Redis).
    key_prefix: str = "boxfish"
    #: Name of the RQ queue analysis jobs go to.
    queue_name: str = "boxfish-analysis"

    # Limits (all violations are 422, 413 or 503 problems).
    max_board_size: int = Field(default=20, ge=1, le=20)
    max_time_ms: int = Field(default=10_000, ge=1)
    default_time_ms: int = Field(default=1000, ge=1)
    max_moves: int = Field(default=1000, ge=0)
    max_multipv: int = Field(default=64, ge=1)
    max_body_bytes: int = Field(default=64 * 1024, ge=256)
    #: Deepest nesting of arrays and objects a JSON request body may have (checked on the raw
    #: bytes before parsing, so no parser or validator recursion can exceed it); deeper is 400
    #: ``reason`` ``too_deep``. The API's own bodies nest at most 3 levels.
    max_json_depth: int = Field(default=32, ge=2, le=200)
    max_queue_length: int = Field(default=100, ge=0)
    #: Upper bound of ``?wait=`` on POST /v1/analyses, in seconds.
    max_wait_s: float = Field(default=10.0, ge=0, le=60)

    #: How long finished analyses are kept (and reused for identical requests), in seconds.
    result_ttl_s: int = Field(default=3600, ge=1)
    #: How long failed analyses are kept, in seconds.
    failure_ttl_s: int = Field(default=86400, ge=1)
    #: RQ's job timeout is ``time_ms`` plus this margin (engine start-up, state rebuild).
    job_timeout_margin_s: int = Field(default=30, ge=1)
    #: A started job whose worker has not refreshed its liveness key for this long is failed.
    job_liveness_s: float = Field(default=5.0, gt=0)

    #: Run each analysis in a forked work horse (isolation) instead of in the worker process.
    worker_fork: bool = False
    #: Entries (positions and memoised values) a worker process keeps between jobs, per game
    #: and board size (an ``engine.SearchCache``): successive positions of one game start
    #: warm. 0 (or less) turns the cache off; an empty value means the default.
    search_cache_entries: int = DEFAULT_SEARCH_CACHE_ENTRIES
    #: Size of the compiled Dots-and-Boxes core's transposition table a worker process keeps
    #: between jobs, in MiB per board size (``engine.SearchCache(table_bytes=...)``, part of
    #: the search cache above, which keeps the two board sizes used last; unused when that
    #: is off). Allocated on the first compiled search of a board size.
    search_table_mb: int = Field(default=DEFAULT_SEARCH_TABLE_MB, ge=1, le=65536)
    #: Threads each analysis of a worker process searches with (the compiled Dots-and-Boxes
    #: core's; ``engine.analyse(threads=...)``). Unset or empty: the CPUs the worker may use
    #: shared among the analysis workers started together, so that workers times threads
    #: stays within the cores: ``boxfish serve --workers N`` and ``boxfish worker --workers
    #: N`` give their workers ``max(1, CPUs // N)`` (:func:`search_threads_for`), a lone
    #: ``boxfish worker`` every CPU.
    search_threads: int | None = Field(default=None, ge=1, le=64)

    #: Socket timeout of the API's Redis connections, in seconds (a ``socket_timeout`` in the
    #: Redis URL wins). An event stream's blocking read is split into reads shorter than it,
    #: so a stream may stay idle for any time. It also bounds how long a request waits for a
    #: Redis that has stopped answering before it gets a 503 (see :mod:`service.store.connections`).
    redis_socket_timeout_s: float = Field(default=5.0, gt=0)

    # The move store on Redis Cluster, and replicated acknowledgements.
    #: Whether ``redis_url`` names a node of a Redis Cluster: ``auto`` asks it at start
    #: (``INFO cluster``: ``cluster_enabled:1``), ``yes`` or ``no`` skip the question. On a
    #: cluster the job queue needs a plain Redis of its own (``queue_redis_url``).
    redis_cluster: Literal["auto", "yes", "no"] = "auto"
    #: Replicas that must have a move before its append answers 201 (``WAIT``); 0: the
    #: master's acknowledgement is enough. Not reached within ``replica_ack_timeout_ms``: 503
    #: ``not_replicated`` (the move is in the log; a retry with the same Idempotency-Key
    #: answers 201 once it is replicated).
    min_replicas_ack: int = Field(default=0, ge=0, le=100)
    #: How long an append waits for ``min_replicas_ack`` replicas, in milliseconds.
    replica_ack_timeout_ms: int = Field(default=1000, ge=1, le=60_000)
    #: How long an append's Idempotency-Key is remembered, in seconds (one key per record,
    #: expiring with it): a retry after that is judged as a new append (409 if it carries
    #: its ``serial``, the engine's verdict on the move if not).
    idempotency_ttl_s: int = Field(default=86_400, ge=1, le=365 * 86_400)
    #: How many of the newest games the index behind ``GET /v1/games`` keeps (a sorted set
    #: trimmed at each game created; older games stay readable by id, only not listed).
    recent_games_kept: int = Field(default=1000, ge=1, le=1_000_000)
    #: The opening explorer (docs/explorer.md): how many moves into a game it goes (the
    #: positions after 0 to this many - 1 moves, with the moves played from them). A change
    #: makes the running projector build a new version (docs/projections.md).
    explorer_max_moves: int = Field(default=12, ge=1, le=100)
    #: The store of exact values (service/store/exact_values.py), in the move store's Redis:
    #: its budget in MiB (BOXFISH_EXACT_STORE_MB; 0 turns it off). Past it, the cheapest
    #: proofs are evicted first.
    exact_store_mb: int = Field(default=256, ge=0, le=1 << 20)
    #: A distributed solve's job (workers/solve_job.py): the compiled table a worker keeps
    #: per board size for them, in MiB (0: the engine's own budget, a quarter of the
    #: machine's memory, at most 4 GiB, grown as it fills).
    solve_table_mb: int = Field(default=0, ge=0, le=1 << 20)

    @field_validator("redis_cluster", mode="before")
    @classmethod
    def _cluster_mode(cls, raw):
        if isinstance(raw, bool):
            return "yes" if raw else "no"
        if isinstance(raw, str):
            value = raw.strip().lower()
            value = {"true": "yes", "1": "yes", "on": "yes",
                     "false": "no", "0": "no", "off": "no", "": "auto"}.get(value, value)
            if value not in ("auto", "yes", "no"):
                raise ValueError(f"BOXFISH_REDIS_CLUSTER must be auto, yes or no, got {raw!r}")
            return value
        return raw

    @model_validator(mode="after")
    def _replica_wait_fits(self) -> Settings:
        # WAIT blocks on the store's connection: it must end (and its answer arrive) well
        # within the socket timeout, or an append that is not replicated in time would end as
        # a lost connection instead of a 503 not_replicated. The margin is the event
        # stream's: 1 s, or half of a socket timeout under 2 s.
        socket_ms = self.redis_socket_timeout_s * 1000
        longest = max(socket_ms - 1000, socket_ms / 2)
        if self.min_replicas_ack > 0 and self.replica_ack_timeout_ms > longest:
            raise ValueError(
                f"BOXFISH_REPLICA_ACK_TIMEOUT_MS ({self.replica_ack_timeout_ms}) must be at most "
                f"{longest:.0f} with BOXFISH_REDIS_SOCKET_TIMEOUT_S "
                f"{self.redis_socket_timeout_s:g}: the WAIT for replicas blocks on the store's "
                f"connection, so it must end within the socket timeout less a margin")
        return self

    # Server-Sent Events.
    sse_keepalive_s: float = Field(default=15.0, gt=0)
    #: Concurrent event streams per API process; beyond it, 503. Each open stream holds one
    #: server thread, so keep it below the thread count (``boxfish serve`` sets it to three
    #: quarters of ``--threads`` unless given).
    sse_max_streams: int = Field(default=8, ge=1)

    #: The operators' token: ``GET /v1/feed`` answers requests that carry it
    #: (``Authorization: Bearer <token>``); unset, operator endpoints answer 403 to everyone.
    operator_token: str | None = Field(default=None, repr=False, min_length=16)

    #: In-process LRU of rebuilt game states, in entries.
    state_cache_size: int = Field(default=1024, ge=1)

    #: Time a client has to send a request's line, headers and body, counted from its first
    #: byte; a stalled or trickling client then gets 408 and its connection closed. It also
    #: bounds each write of a response (a client that stops reading). Event streams and
    #: ``?wait=`` may run longer: only reading the request and each write are bounded.
    #: Enforced by the gunicorn worker (``boxfish.service.http.gunicorn_worker``).
    request_timeout_s: float = Field(default=30.0, gt=0)

    # Rate limits (``boxfish.service.http.ratelimit``): per client (a game's write token when the
    # request carries that game's token, else the client's IP) and per route class; counted in
    # the job queue's Redis, so every API process shares them. Each is a list of limits such
    # as "60/minute" or "10/second;300/minute"; an empty value means no limit for that class.
    rate_limit_enabled: bool = True
    #: POST /v1/analyses and POST /v1/games/{id}/analyses.
    rate_limit_analyses: str = "60/minute"
    #: POST /v1/games/{id}/reviews (one review runs an analysis of every position of a game:
    #: a class of its own, so a review does not use up the analyses' limit).
    rate_limit_reviews: str = "10/minute"
    #: POST /v1/games.
    rate_limit_games: str = "120/minute"
    #: POST /v1/games/{id}/moves and POST /v1/games/{id}/engine/retry.
    rate_limit_appends: str = "1200/minute"
    #: GET /v1/games/{id}/animation.gif (a frame drawn per move: 0.3 s of CPU for a 60-move
    #: 5x5 game, about 1 s for 250 moves; 30 a minute keep one client to about half a core).
    rate_limit_animations: str = "30/minute"
    #: Every other /v1 route (GET games, moves, index, events, analyses, pictures).
    rate_limit_reads: str = "3000/minute"

    #: Proxies in front of the API whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are
    #: trusted (a load balancer, an Ingress controller: count each that appends to
    #: ``X-Forwarded-For``). 0: none, the connection's address is the client's, and such
    #: headers are ignored (a client may send any). N > 0: the client is the N-th address from
    #: the right of ``X-Forwarded-For`` (Werkzeug's ``ProxyFix``), so the rate limits count
    #: the client behind the proxies, not the proxy. More than the proxies there are lets a
    #: client choose its address (and so its rate-limit bucket).
    trusted_proxy_hops: int = Field(default=0, ge=0, le=10)

    @field_validator("rate_limit_analyses", "rate_limit_reviews", "rate_limit_games",
                     "rate_limit_appends", "rate_limit_animations", "rate_limit_reads")
    @classmethod
    def _rate_limits(cls, raw: str) -> str:
        if raw.strip():
            from limits import parse_many
            parse_many(raw)  # ValueError: a message naming the string
        return raw.strip()

    # Webhooks (``boxfish.service.application.webhooks``, delivered by
    # ``boxfish worker --webhooks``).
    #: Name of the RQ queue webhook deliveries go to (its own, so analyses never wait behind
    #: deliveries; served by workers with RQ's scheduler, which runs the retries).
    webhook_queue_name: str = "boxfish-webhooks"
    #: Accept webhook and callback URLs that resolve to loopback, private, link-local,
    #: reserved, shared or cloud-metadata addresses (tests, a private network); by default
    #: they are refused (422 ``private_address``) at registration and at every delivery.
    webhook_allow_private: bool = False
    #: Webhooks a game may have (inactive ones count until deleted); beyond, 422
    #: ``limit_exceeded``.
    webhook_max_per_game: int = Field(default=10, ge=0, le=1000)
    #: Attempts of one delivery in all (the first and its retries); then it ends as failed.
    webhook_max_attempts: int = Field(default=8, ge=1, le=100)
    #: Time one delivery attempt may take (connect, send, answer), in seconds.
    webhook_timeout_s: float = Field(default=5.0, gt=0, le=300)
    #: The backoff before a retry, in seconds: the n-th retry waits a random time (full
    #: jitter) up to this times 2^(n-1), capped at ``webhook_max_backoff_s``; a receiver's
    #: ``Retry-After`` (on a 429 or 5xx) is waited for if longer.
    webhook_backoff_s: float = Field(default=1.0, gt=0, le=3600)
    #: Longest pause before a retry, in seconds (the backoff and ``Retry-After`` alike).
    webhook_max_backoff_s: float = Field(default=3600.0, gt=0, le=86_400)

    #: The API's port under ``boxfish serve`` when ``--port`` is not given (the container
    #: image's command gives none, so ``BOXFISH_PORT`` moves it).
    port: int = Field(default=8000, ge=1, le=65535)

    # Embedded Redis (``boxfish serve`` without REDIS_URL).
    data_dir: str = "./boxfish-data"
    redis_port: int = Field(default=0, ge=0, le=65535)
    appendfsync: Literal["always", "everysec", "no"] = "always"
    #: AOF fsync policy of the embedded queue Redis (analysis jobs only).
    queue_appendfsync: Literal["always", "everysec", "no"] = "everysec"

    @field_validator("search_cache_entries", mode="before")
    @classmethod
    def _entries(cls, raw):
        if not isinstance(raw, str):
            return raw
        if not raw.strip():
            return DEFAULT_SEARCH_CACHE_ENTRIES
        try:
            return int(raw)
        except ValueError:
            raise ValueError(
                f"BOXFISH_SEARCH_CACHE_ENTRIES must be an integer, got {raw!r}") from None

    @field_validator("search_threads", mode="before")
    @classmethod
    def _threads(cls, raw):
        if isinstance(raw, str) and not raw.strip():
            return None
        return raw

    @property
    def job_queue_url(self) -> str | None:
        return self.queue_redis_url or self.redis_url
