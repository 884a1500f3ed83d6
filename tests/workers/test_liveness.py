"""A job's liveness key (``workers/liveness.py``), kept by the worker that runs the job: set
before RQ marks the job started, refreshed however long it runs, still there while RQ records its
end (its callback runs), gone afterwards. A real RQ worker (the one ``boxfish worker`` runs, in
this process) on a real Redis; the job and its callback write what they see to a Redis list."""

from __future__ import annotations

import time
import uuid

from rq import Callback, Queue, get_current_job
from rq.job import Job

from boxfish.workers.liveness import KeepsJobsAlive
from boxfish.workers.worker import keeping_jobs_alive

PROBE = "tests.workers.test_liveness.probe"
#: The liveness key's TTL in these tests: refreshed every third of it, so it lapses only if
#: its refresher stalls for well over a second (a job that outlives it shows the refreshes).
ALIVE_TTL_S = 1.5


def probe(out_key: str, alive_key: str | None = None, alive_ttl_s: float = 5.0,
          run_s: float = 0.0, fail: bool = False) -> str:
    """The job: records (in ``out_key``) whether its liveness key exists and its status as RQ
    shows it, at its start and after ``run_s`` seconds."""
    job = get_current_job()
    conn = job.connection
    conn.rpush(out_key, f"start:{conn.exists(alive_key)}:{job.get_status(refresh=True).value}")
    time.sleep(run_s)
    conn.rpush(out_key, f"end:{conn.exists(alive_key)}")
    if fail:
        raise RuntimeError("the probe failed as asked")
    return "ok"


def _record_ended(job, connection, what: str) -> None:
    status = connection.hget(job.key, "status").decode()
    connection.rpush(job.args[0], f"{what}:{connection.exists(job.kwargs['alive_key'])}:{status}")


def probe_succeeded(job, connection, result, *args, **kwargs) -> None:
    _record_ended(job, connection, "succeeded")


def probe_failed(job, connection, *args, **kwargs) -> None:
    _record_ended(job, connection, "failed")


def test_the_workers_keep_jobs_alive():
    from rq import SimpleWorker, Worker

    for base in (SimpleWorker, Worker):
        cls = keeping_jobs_alive(base)
        assert issubclass(cls, KeepsJobsAlive) and issubclass(cls, base)
        assert keeping_jobs_alive(base) is cls


def _run_probe(settings, redis_client, work_here, **kwargs) -> tuple[list[str], Job, str]:
    queue = Queue(f"{settings.queue_name}-liveness", connection=redis_client)
    tag = uuid.uuid4().hex
    out, alive = f"{settings.key_prefix}:probe:{tag}", f"{settings.key_prefix}:alive:{tag}"
    job = queue.enqueue(PROBE, out, alive_key=alive, alive_ttl_s=ALIVE_TTL_S, **kwargs,
                        on_success=Callback("tests.workers.test_liveness.probe_succeeded"),
                        on_failure=Callback("tests.workers.test_liveness.probe_failed"))
    work_here(queue.name)
    seen = [v.decode() for v in redis_client.lrange(out, 0, -1)]
    redis_client.delete(out)
    return seen, job, alive


def test_a_job_is_alive_from_its_start_to_its_recorded_end(settings, redis_client, work_here):
    # The job runs twice the key's TTL.
    seen, job, alive = _run_probe(settings, redis_client, work_here, run_s=2 * ALIVE_TTL_S)
    assert seen == ["start:1:started", "end:1", "succeeded:1:started"]
    assert job.get_status(refresh=True) == "finished"
    assert not redis_client.exists(alive)


def test_a_failing_job_is_alive_until_its_failure_is_recorded(settings, redis_client,
                                                              work_here):
    # The job fails after outliving the key's TTL.
    seen, job, alive = _run_probe(settings, redis_client, work_here,
                                  run_s=1.2 * ALIVE_TTL_S, fail=True)
    assert seen == ["start:1:started", "end:1", "failed:1:started"]
    assert job.get_status(refresh=True) == "failed"
    assert not redis_client.exists(alive)
