"""The service's parts wired together, without Flask: the move store (its recorder and the
games' webhook registrations), the games service with its listeners (the engine seat's, the
webhooks'), the analysis queue, the engine seats and the webhooks, on the store's and the job
queue's Redis connections.

The API (:func:`service.http.app.create_app`, which adds the HTTP side) and the workers (an
engine-move job appends moves through the games service, see :mod:`workers.engine_move_job`)
build them here, the same way; this module imports no Flask, so neither does a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from ..config import PROJECTION_NAMES, Settings
from ..store import connections
from ..store.exact_values import ExactValueStore
from ..store.keys import KeySpace
from ..store.projections import ProjectionStore
from ..store.recorder import InMemoryRecorder, Recorder
from ..store.redis_recorder import RedisRecorder
from ..store.webhook_registrations import RedisWebhookRegistrations, WebhookRegistrations
from .analyses import AnalysisService
from .engine_seats import EngineSeatListener, EngineSeats
from .exact_values import ExactValues
from .explorer import Explorer, ExplorerProjection
from .games import GameListener, GameService
from .projections import ProjectionRunner
from .reviews import ReviewService
from .state_cache import StateCache
from .webhooks import WebhookListener, Webhooks


def redis_recorder(connection: connections.StoreConnection, keys: KeySpace,
                   settings: Settings) -> RedisRecorder:
    """The Redis recorder on ``connection`` with the settings' replicated acknowledgements,
    idempotency record lifetime and size of the index of recent games."""
    return RedisRecorder(connection, keys, min_replicas=settings.min_replicas_ack,
                         replica_timeout_ms=settings.replica_ack_timeout_ms,
                         idempotency_ttl_s=settings.idempotency_ttl_s,
                         recent_kept=settings.recent_games_kept)


def exact_values(connection: connections.StoreConnection, keys: KeySpace,
                 settings: Settings) -> ExactValues | None:
    """The store of exact values on the move store's ``connection``, of the settings' budget
    (None when ``exact_store_mb`` is 0)."""
    if settings.exact_store_mb <= 0:
        return None
    return ExactValues(ExactValueStore(connection, keys, settings.exact_store_mb << 20))


def webhook_registrations(recorder: Recorder, connection: connections.StoreConnection,
                          keys: KeySpace) -> WebhookRegistrations:
    """The webhook registrations kept with the games of ``recorder``: an in-memory recorder's
    own, else those on the move store's Redis ``connection``."""
    if isinstance(recorder, InMemoryRecorder):
        return recorder.webhook_registrations
    return RedisWebhookRegistrations(connection, keys)


def game_listeners(settings: Settings, queue_connection: redis.Redis, keys: KeySpace,
                   registrations: WebhookRegistrations) -> list[GameListener]:
    """What is told of each game created and each move appended, in the API and in a worker
    that appends (see :class:`service.application.games.GameListener`): the engine seat's and
    the webhooks' listeners, which enqueue on ``queue_connection`` (the webhooks'
    ``registrations`` are in the move store)."""
    return [EngineSeatListener(EngineSeats(queue_connection, settings, keys)),
            WebhookListener(Webhooks.from_settings(queue_connection, settings, keys,
                                                   registrations))]


def game_service(settings: Settings, recorder: Recorder, queue_connection: redis.Redis,
                 keys: KeySpace, registrations: WebhookRegistrations) -> GameService:
    """The games service on ``recorder``, with this process's state cache and the
    listeners of :func:`game_listeners`: the API's, and a worker's that appends moves."""
    return GameService(recorder, StateCache(settings.state_cache_size),
                       listeners=game_listeners(settings, queue_connection, keys,
                                                registrations))


@dataclass
class Backend:
    """The service's parts on its two Redis connections (see :func:`build`)."""

    settings: Settings
    #: The move store's connection: a ``redis.Redis`` or a ``redis.cluster.RedisCluster``.
    redis: connections.StoreConnection
    #: The job queue's (and the API's rate limiter's): always a plain ``redis.Redis``.
    queue_redis: redis.Redis
    keys: KeySpace
    recorder: Recorder
    webhook_registrations: WebhookRegistrations
    games: GameService
    analyses: AnalysisService
    #: Game reviews, on the analyses' queue.
    reviews: ReviewService
    #: The engine's move jobs, for the games' ``engine`` status.
    engine_seats: EngineSeats
    webhooks: Webhooks
    #: The store of exact values (None: turned off).
    exact_values: ExactValues | None
    #: The opening explorer's reader (its projector: ``boxfish project explorer``).
    explorer: Explorer


def build(settings: Settings, connection: connections.StoreConnection | None = None,
          recorder: Recorder | None = None,
          queue_connection: redis.Redis | None = None) -> Backend:
    """Every part, from ``settings``. ``connection`` (the move store's Redis, plain or a Redis
    Cluster) defaults to one from ``settings.redis_url``
    (:func:`service.store.connections.connect`: a cluster is detected, or named by
    ``redis_cluster``); ``recorder`` defaults to the Redis recorder on it
    (:func:`redis_recorder`), the webhook registrations to those kept with its games
    (:func:`webhook_registrations`); ``queue_connection`` (the job queue's Redis) to
    ``settings.queue_redis_url`` or, without one, ``connection``, which must then not be a
    cluster. Raises :class:`~service.store.connections.ConfigurationError` when the service
    cannot start with these settings."""
    if connection is None:
        conns = connections.connect(settings)
        connection = conns.store
        queue_connection = queue_connection or conns.queue
    elif queue_connection is None:
        queue_connection = connections.queue_connection(settings, connection)
    keys = KeySpace(settings.key_prefix)
    recorder = recorder or redis_recorder(connection, keys, settings)
    registrations = webhook_registrations(recorder, connection, keys)
    webhooks = Webhooks.from_settings(queue_connection, settings, keys, registrations)
    exact = exact_values(connection, keys, settings)
    analyses = AnalysisService(queue_connection, settings, keys,
                               callbacks_meta=webhooks.job_meta(), exact_values=exact)
    return Backend(
        settings=settings, redis=connection, queue_redis=queue_connection, keys=keys,
        recorder=recorder, webhook_registrations=registrations,
        games=game_service(settings, recorder, queue_connection, keys, registrations),
        analyses=analyses, reviews=ReviewService(analyses),
        engine_seats=EngineSeats(queue_connection, settings, keys), webhooks=webhooks,
        exact_values=exact,
        explorer=Explorer(ProjectionStore(connection, keys), explorer_projection(settings)))


def explorer_projection(settings: Settings) -> ExplorerProjection:
    """The opening explorer's projection, as the settings shape it."""
    return ExplorerProjection(max_moves=settings.explorer_max_moves)


#: The projections ``boxfish project NAME`` runs, by name (``config.PROJECTION_NAMES``).
PROJECTIONS = {"explorer": explorer_projection}
assert set(PROJECTIONS) == set(PROJECTION_NAMES)


def projection_runner(settings: Settings, name: str,
                      connection: connections.StoreConnection | None = None,
                      recorder: Recorder | None = None) -> ProjectionRunner:
    """The runner of projection ``name`` (a key of :data:`PROJECTIONS`; KeyError otherwise)
    on the move store (``connection`` defaults to ``settings``' store Redis, ``recorder`` to
    the Redis recorder on it)."""
    projection = PROJECTIONS[name](settings)
    if connection is None:
        connection = connections.store_connection(settings,
                                                  connections.store_is_cluster(settings))
    keys = KeySpace(settings.key_prefix)
    recorder = recorder or redis_recorder(connection, keys, settings)
    return ProjectionRunner(recorder, ProjectionStore(connection, keys), projection)
