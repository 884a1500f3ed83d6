"""The analysis job: run one :class:`~service.application.analysis_request.AnalysisRequest`
with ``engine.analyse``.

The job's argument is the request's JSON form, read back with ``AnalysisRequest.model_validate``
(the API enqueues it, see :meth:`service.application.analyses.AnalysisService.submit`). Progress
after each completed depth goes to ``job.meta["progress"]``. The job's ``alive_key`` (TTL
``alive_ttl_s``), which lets the API tell a dead worker from a slow one, is kept alive by the
worker process that runs it, for the job's whole run including RQ's recording of its end
(:mod:`workers.liveness`), not by the job function.

State between jobs belongs to an :class:`AnalysisRunner`, one per worker process, made on first
use from the process's settings by :func:`process_runner` (the one place RQ's module-level job
function finds it).
"""

from __future__ import annotations

import functools
import logging

from boxfish import engine
from boxfish.engine.analysis import usable_cores
from boxfish.service.application.analysis_request import AnalysisRequest, with_time_used
from boxfish.service.application.exact_values import ExactValues
from boxfish.service.config import DEFAULT_SEARCH_CACHE_ENTRIES, Settings

log = logging.getLogger(__name__)

#: What of an ``engine.Progress`` a job publishes in its ``meta["progress"]`` (the API's
#: ``progress``; openapi.yaml's Progress schema).
PROGRESS_FIELDS = ("depth", "best_move", "value", "exact", "nodes", "mate_in")


class AnalysisRunner:
    """Runs analysis requests and owns what a worker process keeps between them: the search
    cache (an ``engine.SearchCache`` of ``search_cache_entries`` entries per game and board
    size, with a compiled transposition table of ``table_bytes`` bytes per board size, None:
    the engine's default for that many entries; no cache at all when ``search_cache_entries``
    is 0 or less), so successive positions of one game start warm. Each request runs the
    search its ``core`` names (None: the engine's choice) on ``threads`` threads (None:
    every CPU the process may use, ``engine.analysis.usable_cores()``). Exact values it proves
    go to ``exact_values``, the store of exact values (None: nowhere)."""

    def __init__(self, search_cache_entries: int = DEFAULT_SEARCH_CACHE_ENTRIES,
                 table_bytes: int | None = None, threads: int | None = None,
                 exact_values: ExactValues | None = None) -> None:
        self.exact_values = exact_values
        self.search_cache: engine.SearchCache | None = (
            engine.SearchCache(max_entries=search_cache_entries, table_bytes=table_bytes)
            if search_cache_entries > 0 else None)
        self.threads = threads if threads is not None else usable_cores()

    @classmethod
    def from_settings(cls, settings: Settings) -> AnalysisRunner:
        return cls(search_cache_entries=settings.search_cache_entries,
                   table_bytes=settings.search_table_mb << 20,
                   threads=settings.search_threads, exact_values=exact_values_of(settings))

    def analyse(self, request: AnalysisRequest, on_progress=None) -> dict:
        """``Analysis.to_dict()`` of the request's position within its limits. The state is
        built first (raising the engine's ValueError / IllegalMove on a bad request), then
        searched."""
        state = request.build_state()
        analysis = engine.analyse(state, time_ms=request.time_ms, multipv=request.multipv,
                                  on_progress=on_progress, cache=self.search_cache,
                                  core=request.core, threads=self.threads)
        result = with_time_used({**analysis.to_dict(), "source": "search"})
        if self.exact_values is not None:
            self.exact_values.record_quietly(state, result)
        return result


def exact_values_of(settings: Settings) -> ExactValues | None:
    """The store of exact values of ``settings`` (None: turned off, or no Redis to keep it)."""
    from boxfish.service.application.wiring import exact_values
    from boxfish.service.store import connections
    from boxfish.service.store.keys import KeySpace

    if settings.exact_store_mb <= 0 or not settings.redis_url:
        return None
    try:
        conns = connections.connect(settings)
    except connections.ConfigurationError:
        log.warning("no store of exact values: the move store's Redis cannot be reached",
                    exc_info=True)
        return None
    return exact_values(conns.store, KeySpace(settings.key_prefix), settings)


@functools.cache
def process_runner() -> AnalysisRunner:
    """This process's runner, made on first use from ``Settings()`` (the environment; e.g.
    ``BOXFISH_SEARCH_CACHE_ENTRIES``, ``BOXFISH_SEARCH_TABLE_MB``,
    ``BOXFISH_SEARCH_THREADS``) and kept for the life of
    the process. Raises ValueError on a bad setting (then nothing is kept).
    ``process_runner.cache_clear()`` drops it."""
    return AnalysisRunner.from_settings(Settings())


def search_cache() -> engine.SearchCache | None:
    """This process's search cache, or None when it is turned off."""
    return process_runner().search_cache


def run_analysis(request: dict | AnalysisRequest, alive_key: str | None = None,
                 alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: ``Analysis.to_dict()`` for ``request`` (its JSON form, or the model itself),
    run by this process's :func:`process_runner`. ``alive_key`` and ``alive_ttl_s`` are for the
    worker that runs the job (:func:`workers.liveness.job_liveness`); the job itself ignores
    them."""
    from rq import get_current_job

    job = get_current_job()

    def on_progress(progress) -> None:
        if job is not None:
            job.meta["progress"] = {k: v for k, v in progress.to_dict().items()
                                    if k in PROGRESS_FIELDS}
            job.save_meta()

    return process_runner().analyse(AnalysisRequest.model_validate(request), on_progress)
