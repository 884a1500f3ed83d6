"""What operations ask of the running service: whether its Redis answers, and how many
workers are alive (RQ workers whose last heartbeat is recent)."""

from __future__ import annotations

from datetime import UTC, datetime

from rq import Queue, Worker

from ..config import WORKER_TTL_S
from .wiring import Backend


def live_workers(queue: Queue) -> int:
    """RQ workers on ``queue`` whose last heartbeat is recent."""
    now = datetime.now(UTC)
    count = 0
    for worker in Worker.all(queue=queue):
        beat = worker.last_heartbeat
        if beat is None:
            continue
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=UTC)
        if (now - beat).total_seconds() <= WORKER_TTL_S + 30:
            count += 1
    return count


def readiness(backend: Backend) -> tuple[int, int]:
    """PING the move store's and the job queue's Redis; then the live analysis workers and
    the live webhook workers. Raises what redis-py raises when either cannot be reached."""
    backend.redis.ping()
    backend.queue_redis.ping()
    return live_workers(backend.analyses.queue), live_workers(backend.webhooks.queue)
