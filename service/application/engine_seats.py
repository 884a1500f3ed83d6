"""The engine seat: Boxfish plays one side of a game (``"engine": {"seat", "time_ms"}`` at
creation, kept in the game's metadata as an :class:`~service.store.game_meta.EngineSeat`).

Whenever the engine's side is to move, an engine-move job is on the analysis queue: the
:class:`EngineSeatListener` enqueues it when the game is created with the engine to move first
and after every append (a client's or the engine's own) that leaves the engine to move. Dots
and Boxes gives a player who completes a box another move, so either side may move several
times in a row; each of the engine's moves is one job. The job (:mod:`workers.engine_move_job`)
analyses the position for the seat's ``time_ms`` and appends the best move through the games
service like any client's move: serial-checked (its serial is the job's), idempotent (key
``engine:<serial>``, :func:`engine_idempotency_key`), told to the listeners (event stream,
webhooks, and this listener for the engine's next move).

A job's id is :func:`engine_job_id` (the game and the serial it plays), so a replayed append or
a second call for the same position finds the job there and enqueues none. Two calls at the
same instant may both enqueue it: the job then runs twice, and the second run finds the serial
taken (or the idempotency record) and does nothing. A failed job is retried
(:data:`ENGINE_RETRIES` times, at once: the workers run no RQ scheduler, which delayed retries
need; a run that failed on the move store pauses before it raises, see
:data:`workers.engine_move_job.STORE_ERROR_PAUSES_S`); once its retries are spent the game's
engine status is ``failed`` and ``POST /v1/games/{id}/engine/retry`` enqueues it afresh.
"""

from __future__ import annotations

import logging

import redis
from rq import Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job

from ..config import Settings
from ..store.events import MoveEvent
from ..store.game_meta import GameMeta
from ..store.keys import KeySpace
from .analyses import AnalysisService, job_error_text, job_timeout_s
from .games import GameListener, GameService

log = logging.getLogger(__name__)

ENGINE_JOB_FUNCTION = "boxfish.workers.engine_move_job.play_engine_move"
#: Retries of a failed engine-move job (immediate; see the module docstring).
ENGINE_RETRIES = 3
#: Idempotency keys that start with this are the engine's: a client may not use them in a
#: game with an engine seat.
ENGINE_KEY_PREFIX = "engine:"


def engine_job_id(game_id: str, serial: int) -> str:
    """The id of the job that plays the engine's move ``serial`` of the game."""
    return f"engine-{game_id}-{serial}"


def engine_idempotency_key(serial: int) -> str:
    return f"{ENGINE_KEY_PREFIX}{serial}"


def engine_to_move(meta: GameMeta, state) -> bool:
    """Whether the game of ``meta`` has an engine seat and ``state`` (not finished) has the
    engine to move."""
    return (meta.engine is not None and not state.is_terminal()
            and state.to_move == meta.engine.seat)


class EngineSeats:
    """Enqueues the engine's move jobs on the analysis queue and reports on them."""

    def __init__(self, connection: redis.Redis, settings: Settings, keys: KeySpace) -> None:
        self.settings = settings
        self.keys = keys
        self.queue = Queue(settings.queue_name, connection=connection)
        #: Job status as the analyses report it (a started job whose worker died is failed).
        self.jobs = AnalysisService(connection, settings, keys)

    def _fetch(self, job_id: str) -> Job | None:
        try:
            return Job.fetch(job_id, connection=self.queue.connection)
        except NoSuchJobError:
            return None

    def ensure_job(self, meta: GameMeta, serial: int) -> Job:
        """The job that plays the engine's move ``serial`` of ``meta``'s game (which must have
        an engine seat): the one there unless it failed (then it is replaced by a new one with
        fresh retries), else a new one. Raises ``redis.RedisError`` when the queue's Redis
        cannot be reached."""
        seat = meta.engine
        job_id = engine_job_id(meta.game_id, serial)
        job = self._fetch(job_id)
        if job is not None:
            if self.jobs.status(job) != "failed":
                return job
            job.delete()  # its retries are spent: start again
        return self.queue.enqueue(
            ENGINE_JOB_FUNCTION, meta.game_id, serial,
            alive_key=self.keys.analysis_alive(job_id),
            alive_ttl_s=self.settings.job_liveness_s, job_id=job_id,
            job_timeout=job_timeout_s(seat.time_ms, self.settings),
            result_ttl=self.settings.result_ttl_s, failure_ttl=self.settings.failure_ttl_s,
            retry=Retry(max=ENGINE_RETRIES),
            description=f"engine move {serial} of game {meta.game_id}")

    def view(self, meta: GameMeta, state) -> dict | None:
        """The ``engine`` member of the game's view at ``state`` (None without a seat):
        ``seat``, ``time_ms`` and ``status``: ``thinking`` (the engine is to move and its job
        is queued or running), ``failed`` (it is to move and its job failed after its
        retries, or was lost; ``error`` says why), ``waiting`` (the other side is to move, or
        the game is finished), ``unknown`` (it is to move and the job queue cannot be reached
        now)."""
        seat = meta.engine
        if seat is None:
            return None
        view = {"seat": seat.seat, "time_ms": seat.time_ms, "status": "waiting"}
        if not engine_to_move(meta, state):
            return view
        try:
            job = self._fetch(engine_job_id(meta.game_id, state.serial + 1))
            status = "lost" if job is None else self.jobs.status(job)
            error = job_error_text(job) if status == "failed" else None
        except redis.RedisError:
            log.warning("engine seat: the job queue cannot be reached", exc_info=True)
            return {**view, "status": "unknown"}
        if status == "lost":
            return {**view, "status": "failed", "error": "the engine's job was lost"}
        if status == "failed":
            return {**view, "status": "failed", "error": error}
        return {**view, "status": "thinking"}


class EngineSeatListener(GameListener):
    """Enqueues the engine's move whenever a game is created, or a move appended, that leaves
    the engine to move (see the module docstring)."""

    def __init__(self, seats: EngineSeats) -> None:
        self.seats = seats

    def game_created(self, meta: GameMeta) -> None:
        if meta.engine is not None and engine_to_move(
                meta, GameService.game_of(meta).new_state()):
            self.seats.ensure_job(meta, 1)

    def move_appended(self, meta: GameMeta, event: MoveEvent, replayed: bool,
                      webhooks: tuple[dict, ...] | None = None) -> None:
        if meta.engine is not None and not event.finished and event.to_move == meta.engine.seat:
            self.seats.ensure_job(meta, event.serial + 1)
