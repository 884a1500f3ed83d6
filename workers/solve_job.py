"""The subproblem job of a distributed solve (:mod:`service.application.distributed_solve`):
"is the value of this position >= beta?", answered with a proven bound.

The job searches with the compiled core (:func:`boxfish.engine.dots.split.prove_leaf`) on
this process's table for the board size, kept between jobs (subproblems of one solve share
many positions), merges the bounds into the solve's results in the queue's Redis
(:class:`~service.store.solve_results.SolveResults`) before it returns, and stores an exact
value in the store of exact values when the settings give one. A test the stored bounds
decide already is not searched again. A long search publishes its nodes so far in
``job.meta["nodes"]`` every ``REPORT_S`` seconds. Its liveness key (``alive_key``) is kept
alive by the worker process (:mod:`workers.liveness`), as an analysis job's is.
"""

from __future__ import annotations

import functools
import logging
import time

import redis
from rq import get_current_job

from boxfish.engine.analysis import usable_cores
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.node import CompiledSearcher
from boxfish.engine.dots.split import prove_leaf
from boxfish.engine.errors import SearchAborted
from boxfish.service.config import Settings
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.solve_results import SolveResults
from boxfish.workers.analysis_job import exact_values_of

log = logging.getLogger(__name__)

#: Seconds of search between two reports of a running job's nodes (``job.meta["nodes"]``).
REPORT_S = 10.0


class SolveRunner:
    """What a worker process keeps between subproblems: a compiled searcher per board size
    (``table_mb`` MiB of table each; 0: the engine's own budget), on ``threads`` threads,
    and the store of exact values (None: none)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.threads = settings.search_threads or usable_cores()
        self.table_bytes = settings.solve_table_mb << 20 or None
        self.exact_values = exact_values_of(settings)
        self.searchers: dict[tuple[int, int], CompiledSearcher] = {}

    def searcher(self, width: int, height: int) -> CompiledSearcher:
        key = (width, height)
        if key not in self.searchers:
            t = tables(width, height)
            self.searchers[key] = CompiledSearcher(
                t, caches=DotsCaches(t, table_bytes=self.table_bytes), threads=self.threads)
        return self.searchers[key]


@functools.cache
def process_solve_runner() -> SolveRunner:
    """This process's runner, made on first use from ``Settings()``."""
    return SolveRunner(Settings())


def run_subproblem(width: int, height: int, position: str, beta: int, run_id: str,
                   key_prefix: str, alive_key: str | None = None,
                   alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: test "value(``position``) >= ``beta``?" (``position``: a search key in
    hex) for run ``run_id`` and merge the proven bounds under ``key_prefix``; returns the
    position's merged bounds and the nodes searched. ``alive_key``, ``alive_ttl_s``: for
    the worker (:func:`workers.liveness.job_liveness`)."""
    job = get_current_job()
    results = SolveResults(job.connection, KeySpace(key_prefix))
    known = results.bounds(width, height, [position]).get(position)
    test = f"{position}:{beta}"
    if known is not None and (known[0] >= beta or known[1] < beta):
        return {"lower": known[0], "upper": known[1], "nodes": 0, "searched": False}
    runner = process_solve_runner()
    s = runner.searcher(width, height)
    nodes0, start = s.nodes, time.monotonic()
    while True:
        # in slices, each resumed from the table, to publish the nodes of a long search
        s.deadline = time.perf_counter() + REPORT_S
        try:
            lo, hi = prove_leaf(s, int(position, 16), beta)
            break
        except SearchAborted:
            job.meta["nodes"] = s.nodes - nodes0
            job.save_meta()
        finally:
            s.deadline = None
    nodes = s.nodes - nodes0
    lo, hi = results.record(width, height, position, lo, hi, nodes, run_id, test)
    if lo == hi and runner.exact_values is not None:
        try:
            runner.exact_values.record(width, height, int(position, 16), lo, [], False,
                                       time.monotonic() - start)
        except redis.RedisError:  # the store is a cache: its loss costs searches only
            log.warning("could not store an exact value", exc_info=True)
    return {"lower": lo, "upper": hi, "nodes": nodes, "searched": True}
