"""``boxfish solve --distributed``: a solve spread over real RQ workers (``boxfish worker``
processes) on a real Redis, each test with its own queue and keys. Values come from the
reference solver (tests/engine/dots/reference) or from published tables, never from the
engine under test."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager

from rq import Queue, Worker
from rq.job import Job

from boxfish.engine.dots.positions import safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.service.application.wiring import exact_values
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.solve_results import SolveResults
from tests.engine.dots.reference import reference_move_values, reference_value
from tests.service.conftest import _env, start_worker, stop_process


def _own(settings, **update):
    tag = f"{settings.key_prefix}-solve-{uuid.uuid4().hex[:6]}"
    return settings.model_copy(update={"key_prefix": tag, "queue_name": tag,
                                       "search_threads": 1, **update})


@contextmanager
def _workers(settings, n, tmp_path):
    procs = [start_worker(settings, tmp_path / f"worker-{i}.log") for i in range(n)]
    try:
        yield procs
    finally:
        for proc in procs:
            stop_process(proc)


def _coordinator(settings, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "boxfish.service.runtime.cli", "solve", *args, "--distributed",
         "--redis", settings.redis_url, "--queue", settings.queue_name, "--json",
         "--progress", "1"],
        env=_env(settings), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen, timeout_s: float) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _wait_until(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _move_values(w: int, h: int, drawn: int) -> dict[tuple, int]:
    t = tables(w, h)
    return {tuple(t.moves[ln]): v for ln, v in reference_move_values(w, h, drawn).items()}


def test_3x3_from_the_empty_board_with_every_first_move(settings, redis_client, tmp_path):
    """Value -3 (published; the reference solver agrees), and every first move's value is the
    reference's; progress lines on stderr; the values in the store of exact values."""
    own = _own(settings, exact_store_mb=16)
    with _workers(own, 2, tmp_path):
        result, err = _result(_coordinator(own, "3", "3", "--split-depth", "2",
                                           "--every-move"), 120)
    assert result["value"] == -3 == reference_value(3, 3, 0)
    truth = _move_values(3, 3, 0)
    assert {tuple(m["move"]): m["value"] for m in result["root_moves"]} == truth
    assert truth[tuple(result["best_move"])] == -3
    assert "subproblems" in err and "remaining" in err, err
    store = exact_values(redis_client, KeySpace(own.key_prefix), own)
    stored = store.lookup(3, 3, 0)
    t = tables(3, 3)
    assert stored.value == -3 and stored.all
    assert {tuple(t.moves[ln]): v for ln, v in stored.moves} == truth


def _kill_a_worker_mid_job(own, procs, tmp_path) -> Job:
    """Freeze (SIGSTOP) the process group of a worker that RQ shows running a job; if the job
    is still started, it is mid-job: SIGKILL it (else let it go on and try again). A new
    worker takes the killed one's place."""
    queue = Queue(own.queue_name, connection=_redis(own))
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, "no worker could be killed mid-job"
        running = {w.get_current_job_id(): w.pid for w in Worker.all(queue=queue)
                   if any(p.pid == w.pid for p in procs)}
        running.pop(None, None)
        if not running:
            time.sleep(0.01)
            continue
        job_id, pid = next(iter(running.items()))
        job = Job.fetch(job_id, connection=queue.connection)
        group = os.getpgid(pid)
        os.killpg(group, signal.SIGSTOP)
        if job.get_status(refresh=True) != "started":
            os.killpg(group, signal.SIGCONT)
            continue
        os.killpg(group, signal.SIGKILL)
        procs[:] = [p for p in procs if p.pid != pid]
        procs.append(start_worker(own, tmp_path / f"worker-{pid}.log"))
        return job


def _redis(settings):
    import redis
    return redis.Redis.from_url(settings.redis_url)


def test_a_worker_killed_mid_job_changes_nothing(settings, redis_client, tmp_path):
    """A worker is killed while its job runs: the job is failed as abandoned (its liveness
    key expired), its test is done again, and the value is the reference's."""
    own = _own(settings, job_liveness_s=1.0)
    drawn = safe_play(random.Random(7), 4, 4, 30).drawn
    lines = "".join(str(drawn >> ln & 1) for ln in range(tables(4, 4).nl))
    with _workers(own, 2, tmp_path) as procs:
        proc = _coordinator(own, "4", "4", "--lines", lines, "--split-depth", "2")
        killed = _kill_a_worker_mid_job(own, procs, tmp_path)
        result, err = _result(proc, 300)
    assert result["value"] == reference_value(4, 4, drawn) == 0
    position, beta = killed.args[2], killed.args[3]
    assert f"subproblem {position}: its worker died" in err, err
    assert Job.fetch(killed.id, connection=redis_client).get_status() == "failed"
    results = SolveResults(redis_client, KeySpace(own.key_prefix))
    done = results.tests_done(killed.args[4])
    assert all(n == 1 for n in done.values()), done
    # The killed test is done again while it is wanted; by the time the dead worker is
    # noticed the solve may have moved past it (a sibling refuted its parent's test).
    if f"{position}:{beta}" in done:
        lo, hi, _nodes, _jobs = results.bounds(4, 4, [position])[position]
        assert lo >= beta or hi < beta, (lo, hi, beta)


def test_a_coordinator_restarted_mid_solve_redoes_nothing(settings, redis_client, tmp_path):
    """The coordinator is killed (SIGKILL) after some subproblems finished and started again:
    the same value as the reference's, and no subproblem test finished twice."""
    own = _own(settings)
    drawn = safe_play(random.Random(7), 4, 4, 30).drawn
    lines = "".join(str(drawn >> ln & 1) for ln in range(tables(4, 4).nl))
    args = ("4", "4", "--lines", lines, "--split-depth", "2")
    results = SolveResults(redis_client, KeySpace(own.key_prefix))
    with _workers(own, 2, tmp_path):
        first = _coordinator(own, *args)
        run_id = _wait_until(lambda: next(iter(_runs(redis_client, own)), None), 60,
                             "the run")
        _wait_until(lambda: len(results.tests_done(run_id)) >= 5, 120, "5 finished tests")
        first.kill()
        first.communicate()
        before = results.tests_done(run_id)
        result, err = _result(_coordinator(own, *args), 300)
    assert result["value"] == reference_value(4, 4, drawn) == 0
    after = results.tests_done(run_id)
    assert all(n == 1 for n in after.values()), after
    assert set(before) <= set(after)


def _runs(client, settings) -> list[str]:
    prefix = KeySpace(settings.key_prefix).solve_run("", "tests")
    return [k.decode()[len(prefix):] for k in client.scan_iter(prefix + "*")]


def test_4x4_with_every_move_on_two_workers(settings, redis_client, tmp_path):
    """A 4x4 position of 32 undrawn lines, split one ply deep over 2 workers: its value and
    every move's are the reference solver's. (4x4 from the empty board, every first move
    worth 0 as Wilson's table has it, takes minutes on 2 cores: bench/dots_distributed_bench.py
    --every-move runs it.)"""
    own = _own(settings, solve_table_mb=256)
    drawn = safe_play(random.Random(11), 4, 4, 32).drawn
    lines = "".join(str(drawn >> ln & 1) for ln in range(tables(4, 4).nl))
    with _workers(own, 2, tmp_path):
        result, err = _result(_coordinator(own, "4", "4", "--lines", lines, "--every-move",
                                           "--split-depth", "1"), 600)
    truth = _move_values(4, 4, drawn)
    assert result["value"] == reference_value(4, 4, drawn) == max(truth.values())
    assert result["jobs"] > 1, result
    assert {tuple(m["move"]): m["value"] for m in result["root_moves"]} == truth
    assert truth[tuple(result["best_move"])] == result["value"]
