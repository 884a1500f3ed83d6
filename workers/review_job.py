"""The review job: analyse every position of a game, from the last back to the first, and
score its moves (:mod:`service.application.review_scoring`).

The job's argument is a :class:`~service.application.reviews.ReviewRequest`'s JSON form.
Positions: the one before each move and, unless the game is over there, the one after the last
move (its value proves the last move's). They are searched latest first, all with one
``engine.SearchCache`` (this worker process's, :func:`workers.analysis_job.search_cache`, or
one of the review's own when that is turned off), so what the late, solvable positions prove
is in the table for the earlier searches. Every position gets the request's ``time_ms``, with
every root move's value (the engine's all-moves analysis). A Dots-and-Boxes position whose
exact values (every move's) are in the store of exact values is read from there, with no
search, and every exact value a search proves is written there, for later reviews and
analyses. ``job.meta["progress"]`` is ``{"done": k, "total": n}`` after each position.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis

from boxfish import engine
from boxfish.service.application.analyses import stored_result
from boxfish.service.application.exact_values import ExactValues
from boxfish.service.application.review_scoring import DOTS, score_move, score_players
from boxfish.service.application.reviews import ReviewRequest
from boxfish.service.config import DEFAULT_SEARCH_CACHE_ENTRIES

from .analysis_job import process_runner

log = logging.getLogger(__name__)


def _analysis(state, time_ms: int, cache, threads: int, exact: ExactValues | None) -> dict:
    """All-moves analysis of ``state``: from the store of exact values when it holds every
    move's, else a search (whose exact values it then stores)."""
    dots = exact is not None and state.game.name == DOTS
    if dots:
        p = state.game.params()
        try:
            stored = exact.lookup(p["width"], p["height"], state.drawn)
        except redis.RedisError:  # the store is a cache: its loss costs searches only
            log.warning("could not read the store of exact values", exc_info=True)
            stored = None
        if stored is not None and stored.all:
            return stored_result(state, stored, None)
    result = {**engine.analyse(state, time_ms=time_ms, cache=cache, threads=threads).to_dict(),
              "source": "search"}
    if dots:
        exact.record_quietly(state, result)
    return result


def review(request: ReviewRequest, cache: engine.SearchCache | None = None,
           threads: int = 1, on_progress: Callable[[int, int], None] | None = None,
           exact: ExactValues | None = None) -> dict:
    """``{"moves": [...], "players": [...]}`` of ``request``: one scored move per move of
    the game (:func:`~service.application.review_scoring.score_move`). ``cache``: the search
    cache of every position (None: a new one); ``on_progress(done, total)`` after each
    position; ``exact``: the store of exact values (None: none). Raises the engine's errors
    for a log that cannot be replayed."""
    game = engine.load_game(request.game, **request.params)
    state = game.new_state()
    states, played = [], []
    for raw in request.moves:
        states.append(state.copy())
        played.append(state.play(game.parse_move(list(raw))))
    final = None if state.is_terminal() else state.copy()
    positions = states + ([final] if final is not None else [])
    cache = cache or engine.SearchCache(max_entries=DEFAULT_SEARCH_CACHE_ENTRIES)
    total = len(request.moves) + 1
    analyses: list[dict | None] = [None] * len(positions)
    done = 0 if final is not None else 1  # a finished game's last position needs no search
    if on_progress is not None:
        on_progress(done, total)
    for i in range(len(positions) - 1, -1, -1):
        analyses[i] = _analysis(positions[i], request.time_ms, cache, threads, exact)
        done += 1
        if on_progress is not None:
            on_progress(done, total)
    moves = []
    for i, p in enumerate(played):
        after = analyses[i + 1] if i + 1 < len(analyses) else None
        moves.append(score_move(request.game, p.serial, list(p.move), p.player, analyses[i],
                                completed=p.completed, turn_passed=p.turn_passed,
                                after=after, terminal_after=after is None
                                and request.game == DOTS))
    return {"moves": moves, "players": score_players(request.game, moves)}


def run_review(request: dict | ReviewRequest, alive_key: str | None = None,
               alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: :func:`review` of ``request`` with this process's search cache and threads
    (:func:`workers.analysis_job.process_runner`); progress in ``job.meta["progress"]``.
    ``alive_key`` and ``alive_ttl_s`` are the worker's (:mod:`workers.liveness`)."""
    from rq import get_current_job

    job = get_current_job()

    def on_progress(done: int, total: int) -> None:
        if job is not None:
            job.meta["progress"] = {"done": done, "total": total}
            job.save_meta()

    runner = process_runner()
    return review(ReviewRequest.model_validate(request), cache=runner.search_cache,
                  threads=runner.threads, on_progress=on_progress, exact=runner.exact_values)
