"""A job's liveness key: how the API tells a job whose worker died from a slow one.

A job enqueued with the keyword arguments ``alive_key`` and ``alive_ttl_s`` (analysis and
engine-move jobs, see :meth:`service.application.analyses.AnalysisService.submit` and
:meth:`service.application.engine_seats.EngineSeats.ensure_job`) has that key set, with a TTL of
``alive_ttl_s``, by the worker process that runs it, and refreshed from a thread of that
process (:class:`Liveness`) for the whole of its run: from before RQ marks the job started until
after RQ has recorded its end (finished, failed, or requeued for a retry). So while the process
lives, the key exists whenever RQ shows the job started, however long the job runs and whatever
it is doing (setting up, searching, storing its result, running its callbacks); once the process
dies the key expires within ``alive_ttl_s`` and the API fails the job
(:meth:`service.application.analyses.AnalysisService.status`).

The workers of :mod:`workers.worker` do this (:class:`KeepsJobsAlive`) in the process that runs
the job: the worker itself (RQ's ``SimpleWorker``) or its forked work horse (RQ's ``Worker``).
"""

from __future__ import annotations

import contextlib
import logging
import threading

import redis

log = logging.getLogger(__name__)


class Liveness:
    """Sets a key with a short TTL and refreshes it from a daemon thread (every third of the
    TTL) until the ``with`` block ends; then deletes it. A Redis error while setting it is
    ignored (the next refresh tries again): the key is a signal, never a reason to fail."""

    def __init__(self, connection: redis.Redis, key: str, ttl_s: float) -> None:
        self.connection, self.key, self.ttl_ms = connection, key, max(100, int(ttl_s * 1000))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="boxfish-liveness", daemon=True)

    def _set(self) -> None:
        try:
            self.connection.set(self.key, 1, px=self.ttl_ms)
        except redis.RedisError:
            log.warning("liveness key %s could not be refreshed", self.key, exc_info=True)

    def _run(self) -> None:
        while not self._stop.wait(self.ttl_ms / 3000):
            self._set()

    def __enter__(self):
        self._set()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(redis.RedisError):
            self.connection.delete(self.key)


def job_liveness(job) -> contextlib.AbstractContextManager:
    """The :class:`Liveness` of an RQ ``job`` that names an ``alive_key`` (and its
    ``alive_ttl_s``, default 5 s) among its keyword arguments; a no-op context for any other
    job (or one whose arguments cannot be read: RQ fails it as usual)."""
    try:
        kwargs = job.kwargs or {}
        key, ttl_s = kwargs.get("alive_key"), float(kwargs.get("alive_ttl_s") or 5.0)
    except Exception:  # RQ reports an unreadable job itself
        return contextlib.nullcontext()
    if not key:
        return contextlib.nullcontext()
    return Liveness(job.connection, key, ttl_s)


class KeepsJobsAlive:
    """Mixin of an RQ worker class: each job runs inside its :func:`job_liveness`.

    RQ's ``perform_job`` runs in the process that runs the job (the worker itself, or the
    forked work horse) and spans the job's whole life there: it marks the job started, runs
    it, runs its success or failure callback and records its end."""

    def perform_job(self, job, queue, execution) -> bool:
        with job_liveness(job):
            return super().perform_job(job, queue, execution)
