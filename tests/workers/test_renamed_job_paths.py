"""Jobs that a version before the worker modules' renames queued name the old import paths
(``boxfish.workers.analysis``, ``.engine_seat``, ``.webhooks``); they must still run after an
upgrade: the old paths import the renamed modules themselves (``boxfish.workers.RENAMED``)."""

from __future__ import annotations

import subprocess
import sys

from rq import Callback, Queue
from rq.job import Job
from rq.utils import import_attribute

import boxfish.workers.analysis_job as analysis_job
import boxfish.workers.engine_move_job as engine_move_job
import boxfish.workers.webhook_delivery as webhook_delivery
from boxfish.workers import RENAMED

from .test_analysis_job import trivial


def test_every_old_path_is_the_renamed_module_itself():
    assert import_attribute("boxfish.workers.analysis.run_analysis") is analysis_job.run_analysis
    assert (import_attribute("boxfish.workers.engine_seat.play_engine_move")
            is engine_move_job.play_engine_move)
    for name in ("deliver", "analysis_succeeded", "analysis_failed"):
        assert (import_attribute(f"boxfish.workers.webhooks.{name}")
                is getattr(webhook_delivery, name))
    assert set(RENAMED) == {"boxfish.workers.analysis", "boxfish.workers.engine_seat",
                            "boxfish.workers.webhooks"}


def test_an_old_path_loads_its_module_only_when_a_job_needs_it():
    code = ("import sys, boxfish.workers\n"
            "assert 'boxfish.workers.webhook_delivery' not in sys.modules\n"
            "import boxfish.workers.webhooks as old, boxfish.workers.webhook_delivery as new\n"
            "assert old is new and old.__name__ == 'boxfish.workers.webhook_delivery'\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_job_queued_under_the_old_paths_runs(settings, redis_client, work_here, spy_runner):
    """An analysis job as the old version enqueued it: the function and its success callback by
    their old paths, run by the worker to the end."""
    queue_name = f"{settings.queue_name}-old-paths"
    request = trivial(time_ms=650)
    q = Queue(queue_name, connection=redis_client)
    job = q.enqueue("boxfish.workers.analysis.run_analysis", request.model_dump(mode="json"),
                    on_success=Callback("boxfish.workers.webhooks.analysis_succeeded"))
    assert Job.fetch(job.id, connection=redis_client).func_name == \
        "boxfish.workers.analysis.run_analysis"
    work_here(queue_name)
    job.refresh()
    assert job.get_status() == "finished", job.latest_result()
    assert spy_runner.seen == [request]
    assert job.return_value()["exact"]
