"""The analysis job: run one :class:`~service.analysis_request.AnalysisRequest` with
``engine.analyse``.

The job's argument is the request's JSON form, read back with ``AnalysisRequest.model_validate``
(the API enqueues it, see :meth:`service.analyses.AnalysisService.submit`). Progress after each
completed depth goes to ``job.meta["progress"]``. While the job runs, a thread refreshes
``alive_key`` (TTL ``alive_ttl_s``) so the API can tell a dead worker from a slow one.

State between jobs belongs to an :class:`AnalysisRunner`, one per worker process, made on first
use from the process's settings by :func:`process_runner` (the one place RQ's module-level job
function finds it).
"""

from __future__ import annotations

import contextlib
import functools
import threading

import redis

from boxfish import engine
from boxfish.service.analysis_request import AnalysisRequest
from boxfish.service.config import DEFAULT_SEARCH_CACHE_ENTRIES, Settings

#: What of an ``engine.Progress`` a job publishes in its ``meta["progress"]`` (the API's
#: ``progress``; openapi.yaml's Progress schema).
PROGRESS_FIELDS = ("depth", "best_move", "value", "exact", "nodes", "mate_in")


class AnalysisRunner:
    """Runs analysis requests and owns what a worker process keeps between them: the search
    cache (an ``engine.SearchCache`` of ``search_cache_entries`` entries per game and board
    size, with a compiled transposition table of ``table_bytes`` bytes per board size, None:
    the engine's default for that many entries; no cache at all when ``search_cache_entries``
    is 0 or less), so successive positions of one game start warm. Each request runs the
    search its ``core`` names (None: the engine's choice)."""

    def __init__(self, search_cache_entries: int = DEFAULT_SEARCH_CACHE_ENTRIES,
                 table_bytes: int | None = None) -> None:
        self.search_cache: engine.SearchCache | None = (
            engine.SearchCache(max_entries=search_cache_entries, table_bytes=table_bytes)
            if search_cache_entries > 0 else None)

    @classmethod
    def from_settings(cls, settings: Settings) -> AnalysisRunner:
        return cls(search_cache_entries=settings.search_cache_entries,
                   table_bytes=settings.search_table_mb << 20)

    def analyse(self, request: AnalysisRequest, on_progress=None,
                while_searching: contextlib.AbstractContextManager | None = None) -> dict:
        """``Analysis.to_dict()`` of the request's position within its limits. The state is
        built first (raising the engine's ValueError / IllegalMove on a bad request), then the
        search runs inside ``while_searching`` (e.g. the job's liveness key)."""
        state = request.build_state()
        with while_searching or contextlib.nullcontext():
            analysis = engine.analyse(state, time_ms=request.time_ms, multipv=request.multipv,
                                      on_progress=on_progress, cache=self.search_cache,
                                      core=request.core)
        return analysis.to_dict()


@functools.cache
def process_runner() -> AnalysisRunner:
    """This process's runner, made on first use from ``Settings()`` (the environment; e.g.
    ``BOXFISH_SEARCH_CACHE_ENTRIES``, ``BOXFISH_SEARCH_TABLE_MB``) and kept for the life of
    the process. Raises ValueError on a bad setting (then nothing is kept).
    ``process_runner.cache_clear()`` drops it."""
    return AnalysisRunner.from_settings(Settings())


def search_cache() -> engine.SearchCache | None:
    """This process's search cache, or None when it is turned off."""
    return process_runner().search_cache


class Liveness:
    """Refreshes a key with a short TTL from a daemon thread until stopped."""

    def __init__(self, connection: redis.Redis, key: str, ttl_s: float) -> None:
        self.connection, self.key, self.ttl_ms = connection, key, max(100, int(ttl_s * 1000))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="boxfish-liveness", daemon=True)

    def _run(self) -> None:
        while True:
            try:
                self.connection.set(self.key, 1, px=self.ttl_ms)
            except redis.RedisError:
                pass
            if self._stop.wait(self.ttl_ms / 3000):
                return

    def __enter__(self):
        self.connection.set(self.key, 1, px=self.ttl_ms)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.connection.delete(self.key)


def run_analysis(request: dict | AnalysisRequest, alive_key: str | None = None,
                 alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: ``Analysis.to_dict()`` for ``request`` (its JSON form, or the model itself),
    run by this process's :func:`process_runner`."""
    from rq import get_current_job

    job = get_current_job()

    def on_progress(progress) -> None:
        if job is not None:
            job.meta["progress"] = {k: v for k, v in progress.to_dict().items()
                                    if k in PROGRESS_FIELDS}
            job.save_meta()

    liveness = (Liveness(job.connection, alive_key, alive_ttl_s)
                if job is not None and alive_key else None)
    return process_runner().analyse(AnalysisRequest.model_validate(request), on_progress,
                                    while_searching=liveness)
