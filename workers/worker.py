"""The worker process: an RQ worker on the analysis queue (``boxfish worker``), or on the
webhook queue with RQ's scheduler, which runs the delivery retries (``boxfish worker
--webhooks``).

Workers take their jobs from the job queue's Redis (``BOXFISH_QUEUE_REDIS_URL``, or
``REDIS_URL`` when it is a plain Redis that also holds the queue; RQ cannot run on a Redis
Cluster). An analysis job carries its whole position and needs nothing else. An engine-move
job (:mod:`workers.engine_move_job`) reads and appends to the move store (``REDIS_URL``, which may
be a Redis Cluster): a worker connects to it on its first such job
(:func:`workers.engine_move_job.process_player`), not at start, so a worker that never plays the
engine never asks anything of the move store.

A worker outlives an outage of that Redis: RQ's worker waits out a connection lost while it
waits for a job, but quits on one at any other moment (registering itself, a heartbeat,
saving a result), and cannot start without Redis. :func:`run_worker` then waits until Redis
answers again and starts a new RQ worker, so neither ``boxfish serve`` (which gives up on a
child that dies too often) nor an orchestrator has to restart anything.

Every job that names a liveness key has it kept alive by the process that runs it for as long
as RQ shows it started (:mod:`workers.liveness`), so the API fails a job only once that process
is gone, never because the job runs long.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from collections.abc import Sequence

import redis
from rq import Queue, SimpleWorker, Worker

from boxfish.service.config import WORKER_TTL_S
from boxfish.workers.liveness import KeepsJobsAlive

log = logging.getLogger(__name__)

#: First and longest pause between tries to reach the queue's Redis, in seconds.
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 10.0
#: An RQ worker that ran at least this long before it quit restarts without a pause.
STABLE_S = 60.0


def run_worker(redis_url: str, queue_names: str | Sequence[str], burst: bool = False,
               log_level: str = "WARNING", fork: bool = False,
               with_scheduler: bool = False, name: str = "analysis worker") -> bool:
    """Run one RQ worker on ``queue_names`` until it is told to stop (SIGINT/SIGTERM: warm
    shutdown, finishing the current job); a new one when the last quit because Redis failed
    (see above). ``with_scheduler``: the worker also runs RQ's scheduler, which enqueues the
    jobs scheduled for later (``enqueue_at``/``enqueue_in``) when they are due. ``name``
    appears in the log.

    By default jobs run in the worker process itself (RQ's ``SimpleWorker``): no fork per job,
    and the engine's per-board-size tables stay warm between jobs, which is most of the round
    trip of a small analysis. The job timeout still applies (SIGALRM); a job that crashes the
    process is failed by the API's liveness check and the worker is restarted by
    ``boxfish serve``. ``fork=True`` runs each job in a forked work horse (RQ's ``Worker``)
    for isolation, at about 10-30 ms more per job. Either way the process that runs a job
    keeps its liveness key alive until RQ has recorded its end
    (:class:`~workers.liveness.KeepsJobsAlive`).

    Returns whether any job was run. With ``burst`` the worker stops when the queue is empty
    (or at its first failure).
    """
    names = [queue_names] if isinstance(queue_names, str) else list(queue_names)
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    worker_class = _telling_stops(keeping_jobs_alive(Worker if fork else SimpleWorker))
    stop = _stop_on_signals()
    worked = False
    pause = RECONNECT_MIN_S
    while True:
        connection = redis.Redis.from_url(redis_url)
        try:
            if not _wait_for_redis(connection, stop, redis_url, name):
                return worked
            worker = worker_class([Queue(n, connection=connection) for n in names],
                                  connection=connection, worker_ttl=WORKER_TTL_S)
            started = time.monotonic()
            try:
                worked = worker.work(burst=burst, with_scheduler=with_scheduler,
                                     logging_level=log_level) or worked
            except redis.exceptions.RedisError as exc:  # starting or signing off
                log.warning("%s: its Redis failed (%s)", name, exc)
            if burst or stop.is_set() or worker.stop_requested:
                return worked
            pause = RECONNECT_MIN_S if time.monotonic() - started >= STABLE_S else pause
            log.warning("%s: the RQ worker quit; starting a new one in %.1f s", name, pause)
            if stop.wait(pause):
                return worked
            pause = min(pause * 2, RECONNECT_MAX_S)
        finally:
            stop = _stop_on_signals(stop)  # RQ's handlers replaced ours while it worked
            connection.close()


@functools.cache
def keeping_jobs_alive(worker_class: type) -> type:
    """``worker_class`` (an RQ worker class) with :class:`~workers.liveness.KeepsJobsAlive`."""
    return type(f"Live{worker_class.__name__}", (KeepsJobsAlive, worker_class), {})


class TellsStops:
    """Mixin of an RQ worker class: ``stop_requested`` says whether the worker was told to
    stop (a warm shutdown: SIGINT or SIGTERM, which RQ's worker answers with its public
    ``request_stop``, as it does RQ's shutdown command), rather than quitting on an error."""

    stop_requested = False

    def request_stop(self, signum, frame) -> None:
        self.stop_requested = True
        super().request_stop(signum, frame)


@functools.cache
def _telling_stops(worker_class: type) -> type:
    """``worker_class`` (an RQ worker class) with :class:`TellsStops`."""
    return type(worker_class.__name__, (TellsStops, worker_class), {})


def _stop_on_signals(event: threading.Event | None = None) -> threading.Event:
    """SIGINT/SIGTERM set the returned event (between RQ workers, which install their own)."""
    event = event or threading.Event()

    def handler(signum, frame):
        event.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    return event


def _wait_for_redis(connection: redis.Redis, stop: threading.Event, url: str,
                    name: str = "worker") -> bool:
    """Wait until ``connection`` answers PING (False: a stop was asked for first)."""
    pause = RECONNECT_MIN_S
    logged = False
    while not stop.is_set():
        try:
            connection.ping()
            if logged:
                log.warning("%s: the queue's Redis answers again", name)
            return True
        except redis.exceptions.RedisError as exc:
            if not logged:
                log.warning("%s: the queue's Redis (%s) does not answer (%s); retrying",
                            name, _host(url), exc)
                logged = True
        if stop.wait(pause):
            break
        pause = min(pause * 2, RECONNECT_MAX_S)
    return False


def _host(url: str) -> str:
    return url.split("@")[-1]
