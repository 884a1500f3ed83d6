"""The analysis job: rebuild the position from a canonical request and run ``engine.analyse``.

A request (built and validated by the API, see ``service.views.analyses``) is a dict::

    {"game": name, "params": {...}, "moves": [[...], ...] | None,
     "lines": str | None, "to_move": 0 | 1 | None, "scores": [a, b] | None,
     "time_ms": int, "multipv": int | None}

Progress after each completed depth goes to ``job.meta["progress"]``. While the job runs, a
thread refreshes ``alive_key`` (TTL ``alive_ttl_s``) so the API can tell a dead worker from a
slow one.
"""

from __future__ import annotations

import contextlib
import os
import threading

import redis

from boxfish import engine


def build_state(request: dict):
    """The engine state a request describes (raises ValueError / IllegalMove on bad input)."""
    game = engine.load_game(request["game"], **request.get("params", {}))
    if request.get("lines") is not None:
        if not hasattr(game, "from_lines"):
            raise ValueError(f"{game.name} positions cannot be given as lines")
        return game.from_lines(request["lines"], to_move=request.get("to_move") or 0,
                               scores=tuple(request.get("scores") or (0, 0)))
    moves = request.get("moves") or []
    return engine.replay(game, enumerate((game.parse_move(m) for m in moves), start=1))


#: Positions a worker process keeps between jobs, per game and board size (an
#: ``engine.SearchCache``): successive positions of one game start warm. The environment
#: variable BOXFISH_SEARCH_CACHE_ENTRIES overrides it; 0 turns the cache off.
DEFAULT_SEARCH_CACHE_ENTRIES = 500_000
_search_cache: engine.SearchCache | None = None


def search_cache() -> engine.SearchCache | None:
    """This process's search cache (made on first use), or None when it is turned off."""
    global _search_cache
    if _search_cache is None:
        raw = os.environ.get("BOXFISH_SEARCH_CACHE_ENTRIES", "")
        try:
            entries = int(raw) if raw.strip() else DEFAULT_SEARCH_CACHE_ENTRIES
        except ValueError:
            raise ValueError(
                f"BOXFISH_SEARCH_CACHE_ENTRIES must be an integer, got {raw!r}") from None
        if entries <= 0:
            return None
        _search_cache = engine.SearchCache(max_entries=entries)
    return _search_cache


class _Liveness:
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


def run_analysis(request: dict, alive_key: str | None = None, alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: returns ``Analysis.to_dict()`` for the requested position and limits."""
    from rq import get_current_job

    job = get_current_job()

    def on_progress(progress) -> None:
        if job is not None:
            job.meta["progress"] = {k: v for k, v in progress.to_dict().items()
                                    if k in ("depth", "best_move", "value", "exact", "nodes")}
            job.save_meta()

    state = build_state(request)
    liveness = (_Liveness(job.connection, alive_key, alive_ttl_s)
                if job is not None and alive_key else contextlib.nullcontext())
    with liveness:
        analysis = engine.analyse(state, time_ms=request["time_ms"],
                                  multipv=request.get("multipv"), on_progress=on_progress,
                                  cache=search_cache())
    return analysis.to_dict()
