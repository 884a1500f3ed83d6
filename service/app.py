"""The Flask app factory."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import redis
from flask import Flask

from . import connections, security
from .analyses import AnalysisService
from .config import Settings
from .engine_seat import EngineSeatListener, EngineSeats
from .errors import register_error_handlers
from .games import GameListener, GameService
from .keys import KeySpace
from .metrics import Metrics
from .ratelimit import RateLimiter
from .recorder import Recorder
from .redis_recorder import RedisRecorder
from .state_cache import StateCache
from .webhooks import WebhookListener, Webhooks


@dataclass
class Services:
    """Everything a view needs, built once per app (``app.extensions["boxfish"]``)."""

    settings: Settings
    #: The move store's connection: a ``redis.Redis`` or a ``redis.cluster.RedisCluster``.
    redis: connections.StoreConnection
    #: The job queue's (and the rate limiter's): always a plain ``redis.Redis``.
    queue_redis: redis.Redis
    recorder: Recorder
    games: GameService
    analyses: AnalysisService
    #: The engine's move jobs, for the games' ``engine`` status.
    engine_seats: EngineSeats
    webhooks: Webhooks
    metrics: Metrics
    sse_slots: threading.BoundedSemaphore


def redis_recorder(connection: connections.StoreConnection, keys: KeySpace,
                   settings: Settings) -> RedisRecorder:
    """The Redis recorder on ``connection`` with the settings' replicated acknowledgements,
    idempotency record lifetime and size of the index of recent games."""
    return RedisRecorder(connection, keys, min_replicas=settings.min_replicas_ack,
                         replica_timeout_ms=settings.replica_ack_timeout_ms,
                         idempotency_ttl_s=settings.idempotency_ttl_s,
                         recent_kept=settings.recent_games_kept)


def game_listeners(settings: Settings, queue_connection: redis.Redis,
                   keys: KeySpace) -> list[GameListener]:
    """What is told of each game created and each move appended, in the API and in a worker
    that appends (see :class:`service.games.GameListener`): the engine seat's and the
    webhooks' listeners."""
    return [EngineSeatListener(EngineSeats(queue_connection, settings, keys)),
            WebhookListener(Webhooks.from_settings(queue_connection, settings, keys))]


def game_service(settings: Settings, recorder: Recorder, queue_connection: redis.Redis,
                 keys: KeySpace) -> GameService:
    """The games service on ``recorder``, with this process's state cache and the
    listeners of :func:`game_listeners`: the API's, and a worker's that appends moves."""
    return GameService(recorder, StateCache(settings.state_cache_size),
                       listeners=game_listeners(settings, queue_connection, keys))


def find_openapi() -> str | None:
    """openapi.yaml shipped in the package (a link to the repository root's copy in a source
    checkout), at the repository root, or in the working directory."""
    for candidate in (Path(__file__).resolve().parent / "openapi.yaml",
                      Path(__file__).resolve().parent.parent / "openapi.yaml",
                      Path(os.getcwd()) / "openapi.yaml"):
        if candidate.is_file():
            return str(candidate)
    return None


def create_app(settings: Settings | None = None,
               connection: connections.StoreConnection | None = None,
               recorder: Recorder | None = None,
               queue_connection: redis.Redis | None = None) -> Flask:
    """Build the app. ``connection`` (the move store's Redis, plain or a Redis Cluster)
    defaults to one from ``settings.redis_url`` (:func:`service.connections.connect`: a
    cluster is detected, or named by ``redis_cluster``); ``recorder`` defaults to the Redis
    recorder on it, with the replica and idempotency settings; ``queue_connection`` (the job
    queue's Redis) to ``settings.queue_redis_url`` or, without one, ``connection``, which
    must then not be a cluster. Raises :class:`service.connections.ConfigurationError` when
    the service cannot start with these settings."""
    settings = settings or Settings()
    if connection is None:
        conns = connections.connect(settings)
        connection = conns.store
        queue_connection = queue_connection or conns.queue
    elif queue_connection is None:
        queue_connection = connections.queue_connection(settings, connection)
    keys = KeySpace(settings.key_prefix)
    recorder = recorder or redis_recorder(connection, keys, settings)
    metrics = Metrics()
    webhooks = Webhooks.from_settings(queue_connection, settings, keys)
    services = Services(
        settings=settings, redis=connection, queue_redis=queue_connection, recorder=recorder,
        games=game_service(settings, recorder, queue_connection, keys),
        analyses=AnalysisService(queue_connection, settings, keys,
                                 callbacks_meta=webhooks.job_meta()),
        engine_seats=EngineSeats(queue_connection, settings, keys),
        webhooks=webhooks, metrics=metrics,
        sse_slots=threading.BoundedSemaphore(settings.sse_max_streams))

    app = Flask(__name__)
    app.url_map.merge_slashes = False  # a doubled slash is a 404 problem, not an HTML redirect
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["BOXFISH_OPENAPI_PATH"] = find_openapi()
    app.json.sort_keys = False
    app.extensions["boxfish"] = services

    from .views import analyses, games, moves, ops, pages, pictures
    from .views import webhooks as webhook_views
    for module in (games, moves, analyses, pictures, webhook_views, ops, pages):
        app.register_blueprint(module.bp)
    register_error_handlers(app)
    metrics.init_app(app)
    RateLimiter(settings, queue_connection).init_app(app)

    def gauges():
        return {"boxfish_analysis_queue_length": ("Analysis jobs waiting",
                                                  services.analyses.queue_length()),
                "boxfish_webhook_queue_length": ("Webhook deliveries waiting (retries "
                                                 "scheduled for later not counted)",
                                                 services.webhooks.queue.count),
                "boxfish_state_cache_entries": ("Game states in this process's cache",
                                                len(services.games.cache))}
    metrics.add_scrape_gauges(gauges)
    security.init_app(app)  # last: its headers go on every answer of what is installed before
    return app
