"""The worker process: an RQ worker on the analysis queue (``boxfish worker``)."""

from __future__ import annotations

import logging

import redis
from rq import Queue, SimpleWorker, Worker

from boxfish.service.config import WORKER_TTL_S


def run_worker(redis_url: str, queue_name: str, burst: bool = False,
               log_level: str = "WARNING", fork: bool = False) -> bool:
    """Run one RQ worker until it is told to stop (SIGINT/SIGTERM: warm shutdown, finishing
    the current job).

    By default jobs run in the worker process itself (RQ's ``SimpleWorker``): no fork per job,
    and the engine's per-board-size tables stay warm between jobs, which is most of the round
    trip of a small analysis. The job timeout still applies (SIGALRM); a job that crashes the
    process is failed by the API's liveness check and the worker is restarted by
    ``boxfish serve``. ``fork=True`` runs each job in a forked work horse (RQ's ``Worker``)
    for isolation, at about 10-30 ms more per job.
    """
    from boxfish.workers.analysis import process_runner

    process_runner()  # the job function's imports, and a bad setting fails here, not per job

    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    connection = redis.Redis.from_url(redis_url)
    worker_class = Worker if fork else SimpleWorker
    worker = worker_class([Queue(queue_name, connection=connection)], connection=connection,
                          worker_ttl=WORKER_TTL_S)
    return worker.work(burst=burst, with_scheduler=False, logging_level=log_level)
