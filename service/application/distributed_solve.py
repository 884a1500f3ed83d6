"""A solve spread over many workers (``boxfish solve --distributed``): the coordinator.

The position is split a few plies deep (:class:`boxfish.engine.dots.split.Split`: symmetric
and transposed positions folded, no box to take at an inner node); each leaf test "is
value(leaf) >= beta?" is an RQ job (:mod:`workers.solve_job`) that any ``boxfish worker`` on
the queue may take, on any machine. The coordinator finds the value by MTD(f) over zero-window
tests of the root (with ``every_move``: of each of its children, each move's exact value,
at once), each test asking only for the leaf tests alpha-beta cannot prune
(:meth:`Split.tests`; younger brothers speculatively too while there are fewer tests than
workers), and keeps a bounded number of jobs queued (``SOLVE_QUEUED_PER_WORKER`` per live
worker); a queued job whose test is no longer wanted is cancelled.

Everything proven lives in Redis (:class:`~service.store.solve_results.SolveResults`): a
restarted coordinator reads the leaves' bounds, derives every test's state from them, takes
over the jobs still out (their ids are kept with the run) and enqueues only what is missing.
A job whose worker died (its liveness key expired, :mod:`workers.liveness`) is failed as an
abandoned job and enqueued again; a job that raises is enqueued again up to
``SOLVE_MAX_FAILURES`` times, then :class:`~service.errors.SubproblemFailed`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from rq import Queue, Worker
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus

from boxfish.engine.dots.split import Split, next_beta

from ..config import (
    SOLVE_JOB_TIMEOUT_S,
    SOLVE_MAX_FAILURES,
    SOLVE_QUEUED_PER_WORKER,
    Settings,
)
from ..errors import SubproblemFailed
from ..store.keys import KeySpace
from ..store.solve_results import SolveResults
from .analyses import fail_abandoned, job_abandoned, job_error_text
from .exact_values import ExactValues

JOB_FUNCTION = "boxfish.workers.solve_job.run_subproblem"
#: Longest wait for a job's news between two looks at the jobs out, in seconds.
POLL_S = 1.0

log = logging.getLogger(__name__)


@dataclass(slots=True)
class DistributedProgress:
    """Where a distributed solve stands. ``subproblems``: the split's leaves; ``proven``:
    those with a proven bound (``exact``: an exact value); ``running``, ``queued``: jobs out;
    ``wanted``: leaf tests the current root tests wait for; ``jobs``, ``nodes``: finished
    jobs and their nodes over every start of the run (``running_nodes``: the running jobs'
    so far); ``projected_nodes``: (low, high)
    estimate of the nodes still to search, nodes per finished job times the tests wanted
    now (low) or those and every untouched subproblem (high; alpha-beta prunes many);
    ``root``: the root value's proven bounds; ``moves``: (line, lower, upper) of each root
    move (``every_move``); ``value``, ``best_line`` once ``done``."""

    subproblems: int
    proven: int
    exact: int
    running: int
    queued: int
    wanted: int
    jobs: int
    nodes: int
    projected_nodes: tuple[float, float] | None
    nodes_this_start: int
    running_nodes: int
    elapsed_s: float
    root: tuple[int, int]
    moves: list[tuple[int, int, int]] = field(default_factory=list)
    done: bool = False
    value: int | None = None
    best_line: int | None = None


class DistributedSolve:
    """The distributed solve of ``split``'s root, its jobs on ``queue_name`` in the Redis of
    ``connection`` (the job queue's), its results under ``settings.key_prefix``.
    ``every_move``: every root move's exact value too. ``exact_values``: where the values
    proven at the end go (None: nowhere)."""

    def __init__(self, connection: redis.Redis, settings: Settings, split: Split,
                 queue_name: str, every_move: bool = False,
                 exact_values: ExactValues | None = None) -> None:
        self.redis = connection
        self.settings = settings
        self.split = split
        self.keys = KeySpace(settings.key_prefix)
        self.results = SolveResults(connection, self.keys)
        self.queue = Queue(queue_name, connection=connection)
        self.exact_values = exact_values
        self.every_move = every_move
        self.run_id = (f"{split.w}x{split.h}-{split.root:x}-d{split.depth}"
                       + ("-every" if every_move else ""))
        self.root_lines = split.root_children()
        self.targets = (list(dict.fromkeys(self.root_lines.values())) if every_move
                        and self.root_lines else [split.root])
        self.hex = {k: f"{k:x}" for k in split.leaves}
        self.by_hex = {v: k for k, v in self.hex.items()}
        self.jobs: dict[int, Job] = {}
        self.failures: dict[int, int] = {}
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask a running :meth:`run` to return (safe from a signal handler); the jobs out
        go on and a next start takes them over."""
        self._stop.set()

    # -- the solve -------------------------------------------------------------------------

    def run(self, on_progress: Callable[[DistributedProgress], None] | None = None,
            progress_s: float = 10.0) -> DistributedProgress:
        """Solve until done or stopped; returns the last progress (``done`` and ``value``
        when solved). ``on_progress`` every ``progress_s`` seconds and at the end. Raises
        :class:`SubproblemFailed` (and Redis's errors)."""
        self.results.start_run(self.run_id)
        self._take_over()
        start = last = time.monotonic()
        nodes0 = self.results.counters(self.run_id)["nodes"]
        while True:
            bounds = self.split.bounds(self._leaf_bounds())
            wanted: dict[int, int] = {}
            # enough tests for every worker (and the queue) to have one
            eager = (Worker.count(queue=self.queue) + 1) * SOLVE_QUEUED_PER_WORKER
            for target in self.targets:
                lo, hi = bounds[target]
                if lo < hi:
                    beta = next_beta(lo, hi, self.split.nodes[target].rem)
                    self.split.tests(bounds, target, beta, wanted, eager=eager)
            done = not wanted and all(bounds[t][0] == bounds[t][1] for t in self.targets)
            if not done:
                self._reconcile(wanted)
                self._enqueue(wanted)
            now = time.monotonic()
            if done or self._stop.is_set() or (on_progress is not None
                                               and now - last >= progress_s):
                p = self._progress(bounds, wanted, start, nodes0, done)
                if done:
                    self._store(p)
                if on_progress is not None:
                    on_progress(p)
                last = now
                if done or self._stop.is_set():
                    return p
            self.results.wait_news(self.run_id, POLL_S)

    def _leaf_bounds(self) -> dict[int, tuple[int, int]]:
        raw = self.results.bounds(self.split.w, self.split.h, list(self.by_hex))
        return {self.by_hex[h]: (lo, hi) for h, (lo, hi, _n, _j) in raw.items()}

    # -- the jobs ----------------------------------------------------------------------------

    def _take_over(self) -> None:
        """Adopt the jobs a previous start left out (forget those gone)."""
        for hx, job_id in self.results.jobs(self.run_id).items():
            key = self.by_hex.get(hx)
            try:
                job = Job.fetch(job_id, connection=self.redis)
            except NoSuchJobError:
                job = None
            if key is None or job is None:
                self.results.set_job(self.run_id, hx, None)
            else:
                self.jobs[key] = job

    def _drop(self, key: int) -> None:
        del self.jobs[key]
        self.results.set_job(self.run_id, self.hex[key], None)

    def _reconcile(self, wanted: dict[int, int]) -> None:
        """Look at every job out: forget the ended ones (a failed one counts against its
        subproblem unless its worker died), fail those whose worker is gone, cancel queued
        ones no longer wanted."""
        for key, job in list(self.jobs.items()):
            try:
                status = job.get_status(refresh=True)
            except (InvalidJobOperation, NoSuchJobError):  # expired: its result is stored
                self._drop(key)
                continue
            if status == JobStatus.FINISHED:
                self._drop(key)
            elif status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
                error = job_error_text(job)
                self._drop(key)
                if "died" not in error and status != JobStatus.CANCELED:
                    self.failures[key] = self.failures.get(key, 0) + 1
                    log.warning("subproblem %s failed: %s", self.hex[key], error)
                    if self.failures[key] >= SOLVE_MAX_FAILURES:
                        raise SubproblemFailed(self.hex[key], self.failures[key], error)
            elif status == JobStatus.STARTED:
                alive = self.keys.solve_alive(job.id)
                if job_abandoned(self.redis, job, alive, self.settings.job_liveness_s):
                    log.warning("subproblem %s: its worker died; it is done again",
                                self.hex[key])
                    try:
                        fail_abandoned(self.redis, job, alive)
                    except Exception:  # RQ's cleanup of a half-recorded execution may
                        # raise; the job is dead either way (its liveness key expired)
                        log.warning("failing job %s as abandoned raised", job.id,
                                    exc_info=True)
                    self._drop(key)
            elif key not in wanted:
                try:
                    job.cancel()
                except (InvalidJobOperation, NoSuchJobError, ValueError):
                    pass  # a worker took it meanwhile: it runs, and its bound is kept
                self._drop(key)

    def _enqueue(self, wanted: dict[int, int]) -> None:
        workers = Worker.count(queue=self.queue)
        room = max(1, workers) * SOLVE_QUEUED_PER_WORKER - sum(
            1 for j in self.jobs.values() if j.get_status(refresh=False) == JobStatus.QUEUED)
        for key, beta in wanted.items():
            if room <= 0:
                return
            if key in self.jobs:
                continue
            job_id = f"bxsolve-{uuid.uuid4().hex}"
            hx = self.hex[key]
            self.jobs[key] = self.queue.enqueue(
                JOB_FUNCTION, self.split.w, self.split.h, hx, beta, self.run_id,
                self.settings.key_prefix, alive_key=self.keys.solve_alive(job_id),
                alive_ttl_s=self.settings.job_liveness_s, job_id=job_id,
                job_timeout=SOLVE_JOB_TIMEOUT_S, result_ttl=self.settings.result_ttl_s,
                failure_ttl=self.settings.failure_ttl_s,
                description=f"solve {self.split.w}x{self.split.h} {hx} >= {beta}")
            self.results.set_job(self.run_id, hx, job_id)
            room -= 1

    # -- reporting ---------------------------------------------------------------------------

    def _progress(self, bounds, wanted: dict[int, int], start: float, nodes0: int,
                  done: bool) -> DistributedProgress:
        leaves = self.split.leaves
        proven = [k for k in leaves if bounds[k] != self.split.initial(k)]
        touched = set(proven)
        counters = self.results.counters(self.run_id)
        jobs, nodes = int(counters["jobs"]), int(counters["nodes"])
        statuses = [j.get_status(refresh=False) for j in self.jobs.values()]
        running_nodes = sum(int(j.get_meta(refresh=True).get("nodes", 0))
                            for j, st in zip(self.jobs.values(), statuses, strict=True)
                            if st == JobStatus.STARTED)
        projected = None
        if jobs:
            per_job = nodes / jobs
            untouched = sum(1 for k in leaves if k not in touched and k not in wanted)
            projected = (per_job * len(wanted), per_job * (len(wanted) + untouched))
        moves = ([(ln, -bounds[c][1], -bounds[c][0]) for ln, c in sorted(self.root_lines.items())]
                 if self.every_move else [])
        p = DistributedProgress(
            subproblems=len(leaves), proven=len(proven),
            exact=sum(1 for k in proven if bounds[k][0] == bounds[k][1]),
            running=statuses.count(JobStatus.STARTED), queued=statuses.count(JobStatus.QUEUED),
            wanted=len(wanted), jobs=jobs, nodes=nodes, projected_nodes=projected,
            nodes_this_start=nodes - nodes0, running_nodes=running_nodes,
            elapsed_s=time.monotonic() - start,
            root=bounds[self.split.root], moves=moves, done=done)
        if done:
            p.value = bounds[self.split.root][0]
            if self.root_lines:
                p.best_line = next(ln for ln, c in self.root_lines.items()
                                   if -bounds[c][1] == p.value)
        return p

    def _store(self, p: DistributedProgress) -> None:
        """The root value (with every move's, ``every_move``) to the store of exact
        values."""
        if self.exact_values is None:
            return
        moves = sorted(((ln, lo) for ln, lo, _hi in p.moves), key=lambda mv: -mv[1])
        self.exact_values.record(self.split.w, self.split.h, self.split.drawn, p.value, moves,
                                 bool(moves), p.elapsed_s)
