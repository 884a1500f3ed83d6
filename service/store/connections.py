"""The service's Redis connections, built in one place from the settings.

* **The move store** (``REDIS_URL``): a ``redis.Redis``, or a ``redis.cluster.RedisCluster``
  when ``REDIS_URL`` names a node of a Redis Cluster. ``BOXFISH_REDIS_CLUSTER`` says which:
  ``auto`` (the default) asks the server at start (``INFO cluster``: ``cluster_enabled:1``),
  ``yes``/``no`` skip the question. The cluster client discovers every node from the one
  named, follows ``MOVED``/``ASK`` redirections and refreshes its slot table when a node fails
  or a failover moves a slot.
* **The job queue** (``BOXFISH_QUEUE_REDIS_URL``; without it the store's Redis): always a
  plain ``redis.Redis``. RQ does not run on a Redis Cluster (its keys are not hash-tagged and
  its scripts touch several of them), so a store on a cluster needs a queue Redis of its own,
  and the service refuses to start without one (:data:`QUEUE_NEEDED`). The rate limiter's
  counters live there too.

Timeouts and retries, chosen so that a Redis outage is a prompt 503 for the client (an error
:func:`store_unavailable` recognises) and never a request that hangs:

* every read or write on a socket waits at most ``BOXFISH_REDIS_SOCKET_TIMEOUT_S`` (a
  ``socket_timeout`` in the URL wins), a connection attempt at most that or
  :data:`CONNECT_TIMEOUT_S`, whichever is shorter (a host that is gone answers nothing);
* a plain connection retries a command once, after a short pause, when the connection broke
  (a Redis that restarted, a connection the server dropped), never after a timeout: a Redis
  that stopped answering costs one socket timeout, not several;
* the cluster client retries a command :data:`CLUSTER_RETRIES` time(s) after a connection
  error, a timeout or ``CLUSTERDOWN``, each time after refreshing its slot table, so a command
  that meets a failed-over master finds the promoted replica when the failover is over, and
  one that meets it during the failover gets its 503 within about two socket timeouts;
* idle pooled connections are checked (``PING``) before use every
  :data:`HEALTH_CHECK_INTERVAL_S`; a connection the server closed is replaced when taken from
  the pool. Nothing needs a restart when Redis comes back.

At start a store or cluster that does not answer yet is waited for up to
:data:`STARTUP_WAIT_S` (the API may start before Redis); then :class:`ConfigurationError`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import redis
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from ..config import Settings
from ..errors import ConfigurationError

log = logging.getLogger(__name__)

#: Longest wait for a connection to be accepted, in seconds (at most the socket timeout).
CONNECT_TIMEOUT_S = 2.0
#: Idle pooled connections are PINGed before use after this many seconds.
HEALTH_CHECK_INTERVAL_S = 30
#: Retries of a cluster command after a connection error, timeout or CLUSTERDOWN (each after
#: a refresh of the slot table).
CLUSTER_RETRIES = 1
#: How long the service waits at start for REDIS_URL to answer, in seconds.
STARTUP_WAIT_S = 15.0

QUEUE_NEEDED = ("REDIS_URL is a Redis Cluster, and the analysis job queue (RQ) cannot run on "
                "a cluster: set BOXFISH_QUEUE_REDIS_URL to a plain (non-cluster) Redis for "
                "the job queue")
QUEUE_ON_CLUSTER = ("BOXFISH_QUEUE_REDIS_URL is a Redis Cluster node, and the analysis job "
                    "queue (RQ) cannot run on a cluster: give it a plain (non-cluster) Redis")

StoreConnection = redis.Redis | RedisCluster
#: The job queue's connection (and the rate limiter's): always a plain Redis.
QueueConnection = redis.Redis


def socket_options(settings: Settings) -> dict:
    """The socket timeouts and health checks of every connection the API opens."""
    timeout = settings.redis_socket_timeout_s
    return {"socket_timeout": timeout,
            "socket_connect_timeout": min(timeout, CONNECT_TIMEOUT_S),
            "health_check_interval": HEALTH_CHECK_INTERVAL_S}


def plain_retry() -> Retry:
    """One retry, 50-100 ms later, of a command whose connection broke (not of a timeout)."""
    return Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.1), 1,
                 supported_errors=(redis.exceptions.ConnectionError,))


def plain_connection(url: str, settings: Settings) -> redis.Redis:
    """A ``redis.Redis`` on ``url`` with the service's timeouts and retry."""
    return redis.Redis.from_url(url, retry=plain_retry(), **socket_options(settings))


def cluster_connection(url: str, settings: Settings,
                       wait_s: float = STARTUP_WAIT_S) -> RedisCluster:
    """A ``RedisCluster`` discovered from the node at ``url``; waits up to ``wait_s`` for the
    cluster to answer (its client reads the slot table when it is made)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            # The cluster loop retries without pausing (the backoff is not used): only the
            # count matters; each retry refreshes the slot table first.
            return RedisCluster.from_url(url, retry=Retry(NoBackoff(), CLUSTER_RETRIES),
                                         **socket_options(settings))
        except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
            if isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.
                          AuthorizationError) or time.monotonic() + 0.5 > deadline:
                raise ConfigurationError(
                    f"the Redis Cluster at REDIS_URL ({_shown(url)}) did not answer within "
                    f"{wait_s:g} s: {exc}") from exc
            time.sleep(0.5)


def cluster_enabled(url: str, settings: Settings, wait_s: float = STARTUP_WAIT_S,
                    what: str = "REDIS_URL", timeout_s: float | None = None) -> bool:
    """Whether the Redis at ``url`` is a Redis Cluster node (``INFO cluster``), waiting up to
    ``wait_s`` for it to answer (each try at most ``timeout_s``, default the socket
    timeout); :class:`ConfigurationError` if it does not."""
    timeout = timeout_s or settings.redis_socket_timeout_s
    client = redis.Redis.from_url(url, socket_timeout=timeout,
                                  socket_connect_timeout=min(timeout, CONNECT_TIMEOUT_S))
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                return int(client.info("cluster").get("cluster_enabled", 0)) == 1
            except redis.exceptions.ResponseError as exc:  # INFO renamed or not allowed
                raise ConfigurationError(
                    f"cannot tell whether {what} ({_shown(url)}) is a Redis Cluster ({exc}); "
                    f"set BOXFISH_REDIS_CLUSTER to yes or no") from exc
            except redis.exceptions.RedisError as exc:
                if isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.
                              AuthorizationError) or time.monotonic() + 0.5 > deadline:
                    raise ConfigurationError(
                        f"{what} ({_shown(url)}) did not answer within {wait_s:g} s, so "
                        f"whether it is a Redis Cluster is unknown ({exc}); start Redis "
                        f"first, or set BOXFISH_REDIS_CLUSTER to yes or no") from exc
                time.sleep(0.5)
    finally:
        client.close()


def store_is_cluster(settings: Settings, wait_s: float = STARTUP_WAIT_S) -> bool:
    """Whether the move store is a Redis Cluster: ``BOXFISH_REDIS_CLUSTER``, or (``auto``)
    what ``REDIS_URL`` says."""
    if settings.redis_cluster != "auto":
        return settings.redis_cluster == "yes"
    if not settings.redis_url:
        return False
    return cluster_enabled(settings.redis_url, settings, wait_s)


def check_queue(settings: Settings, cluster: bool) -> None:
    """:class:`ConfigurationError` if the job queue would be on a Redis Cluster: the store's
    cluster (no ``BOXFISH_QUEUE_REDIS_URL``) or a queue URL that is a cluster node (asked only
    in ``auto`` mode, and only if it answers at once: a queue Redis that is down does not stop
    the move store from serving)."""
    if cluster and not settings.queue_redis_url:
        raise ConfigurationError(QUEUE_NEEDED)
    if settings.queue_redis_url and settings.redis_cluster == "auto":
        try:
            on_cluster = cluster_enabled(settings.queue_redis_url, settings, wait_s=0,
                                         what="BOXFISH_QUEUE_REDIS_URL", timeout_s=1.0)
        except ConfigurationError:
            return
        if on_cluster:
            raise ConfigurationError(QUEUE_ON_CLUSTER)


@dataclass(frozen=True)
class Connections:
    """The move store's connection (``cluster``: a ``RedisCluster``) and the job queue's."""

    store: StoreConnection
    queue: redis.Redis
    cluster: bool

    def close(self) -> None:
        if self.queue is not self.store:
            self.queue.close()
        self.store.close()


def store_connection(settings: Settings, cluster: bool,
                     wait_s: float = STARTUP_WAIT_S) -> StoreConnection:
    if not settings.redis_url:
        raise ConfigurationError("no Redis: set REDIS_URL (or run 'boxfish serve', which "
                                 "starts one)")
    if cluster:
        return cluster_connection(settings.redis_url, settings, wait_s)
    return plain_connection(settings.redis_url, settings)


def queue_connection(settings: Settings, store: StoreConnection) -> redis.Redis:
    """The job queue's Redis: ``BOXFISH_QUEUE_REDIS_URL``, else ``store`` itself (which must
    then not be a cluster)."""
    if settings.queue_redis_url:
        return plain_connection(settings.queue_redis_url, settings)
    if isinstance(store, RedisCluster):
        raise ConfigurationError(QUEUE_NEEDED)
    return store


def connect(settings: Settings, wait_s: float = STARTUP_WAIT_S) -> Connections:
    """Both connections from ``settings``; :class:`ConfigurationError` (a message for the
    operator) when the service cannot start with them."""
    if not settings.redis_url:
        raise ConfigurationError("no Redis: set REDIS_URL (or run 'boxfish serve', which "
                                 "starts one)")
    cluster = store_is_cluster(settings, wait_s)
    check_queue(settings, cluster)
    store = store_connection(settings, cluster, wait_s)
    return Connections(store=store, queue=queue_connection(settings, store), cluster=cluster)


def worker_queue_url(settings: Settings) -> str:
    """The URL an analysis worker (``boxfish worker``) takes its jobs from: the queue Redis.
    A worker reaches the move store only for an engine-move job (and then through
    :func:`connect`), so with ``BOXFISH_QUEUE_REDIS_URL`` set nothing is asked of
    ``REDIS_URL`` at start; without it ``REDIS_URL`` holds the queue and must be no cluster,
    which (``auto``) is asked, waiting as long as it takes for it to answer (a worker may
    start before Redis). :class:`ConfigurationError` when there is no queue Redis."""
    if not settings.job_queue_url:
        raise ConfigurationError("set REDIS_URL (or BOXFISH_QUEUE_REDIS_URL) to the Redis the "
                                 "API uses")
    if settings.queue_redis_url:
        check_queue(settings, cluster=False)
        return settings.queue_redis_url
    if settings.redis_cluster == "yes":
        raise ConfigurationError(QUEUE_NEEDED)
    if settings.redis_cluster == "auto":
        logged = False
        while True:
            try:
                cluster = cluster_enabled(settings.redis_url, settings, wait_s=STARTUP_WAIT_S)
                break
            except ConfigurationError as exc:
                if not isinstance(exc.__cause__, redis.exceptions.ConnectionError
                                  | redis.exceptions.TimeoutError) or isinstance(
                        exc.__cause__, redis.exceptions.AuthenticationError):
                    raise
                if not logged:
                    log.warning("boxfish worker: waiting for REDIS_URL to answer: %s", exc)
                    logged = True
        if cluster:
            raise ConfigurationError(QUEUE_NEEDED)
    return settings.redis_url


#: redis-py's errors for a Redis (or a Redis Cluster) that cannot serve now. ConnectionError
#: covers a refused or broken connection, ``LOADING`` (BusyLoadingError), a full client pool
#: and a refused login; ClusterError covers ``CLUSTERDOWN`` and ``MASTERDOWN`` and a command
#: redirected too often (slots moving); RedisClusterException what the cluster client raises
#: when no node answers or a slot has no node (SlotNotCoveredError).
_UNAVAILABLE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.RedisClusterException,
)
#: Cluster-client errors that are a mistake of the code, not an outage.
_CLUSTER_MISUSE = (redis.exceptions.CrossSlotTransactionError,
                   redis.exceptions.InvalidPipelineStack)
#: Error replies (first word) of a server that cannot serve now, for a client that has no
#: class of its own for them (a plain ResponseError): ``NOREPLICAS`` (min-replicas-to-write),
#: ``UNBLOCKED`` (a blocking read ended by a failover), ``BUSY`` (a script running long).
_UNAVAILABLE_REPLIES = frozenset({"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
                                  "READONLY", "NOREPLICAS", "UNBLOCKED", "BUSY", "OOM"})


def store_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says that Redis cannot serve now (down, restarting, loading its data, a
    Redis Cluster in failover or without a master for a slot, a replica that was a master a
    moment ago, out of memory): an outage to answer 503, not a bug."""
    if isinstance(exc, _CLUSTER_MISUSE):
        return False
    if isinstance(exc, _UNAVAILABLE):
        return True
    if isinstance(exc, redis.exceptions.ResponseError):
        words = str(exc).split(None, 1)
        return bool(words) and words[0] in _UNAVAILABLE_REPLIES
    return False


def _shown(url: str) -> str:
    """``url`` without its password."""
    try:
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return parts._replace(netloc=netloc).geturl()
    except ValueError:
        pass
    return url
