"""The reviews application service: review a stored game, one RQ job per review.

:meth:`ReviewService.submit` takes the game's log (its events up to the current serial), names
the log position reviewed (``<serial>.<head>``, as the game's ETag) and enqueues one job
(:data:`JOB_FUNCTION`, :mod:`workers.review_job`) on the analyses queue, whose argument is a
:class:`ReviewRequest`. The job analyses every position from the last back to the first and
publishes ``{"done": k, "total": n}`` in its ``meta["progress"]``. A review's id (its job's) is
``rv_`` and 32 hex digits. A request identical to one queued, running or finished (RQ keeps
it ``result_ttl_s``), same game, log position and ``time_ms``, joins that review, as identical
analyses do; a log that changed since has another position, so it is reviewed anew. Status,
waiting and dead workers are the analyses' (:class:`AnalysisService`, on the same queue).
"""

from __future__ import annotations

import hashlib
import json
import uuid

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError
from rq import Callback
from rq.exceptions import NoSuchJobError
from rq.job import Job

from ..errors import NotFound, NothingToReview, QueueFull
from ..store.events import position_tag
from .analyses import REVIEW_JOB_FUNCTION as JOB_FUNCTION
from .analyses import AnalysisService, job_error_text

#: The RQ callback that announces a finished review (``review.finished``, see
#: :mod:`workers.webhook_delivery`).
REVIEW_SUCCEEDED = "boxfish.workers.webhook_delivery.review_succeeded"
#: A review's id: this prefix and 32 hex digits.
ID_PREFIX = "rv_"


class ReviewRequest(BaseModel):
    """Review the moves of game ``game_id`` (``game`` with ``params``) up to log position
    ``position``, ``time_ms`` per position analysed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    game_id: StrictStr
    game: StrictStr
    params: dict = Field(default_factory=dict)
    position: StrictStr
    moves: tuple[tuple[StrictInt, ...], ...]
    time_ms: StrictInt = Field(ge=1)

    def digest(self) -> str:
        """The SHA-256 (hex) of the request's JSON form with sorted keys: it names the job key,
        so identical requests share one review."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def review_timeout_s(request: ReviewRequest, margin_s: int) -> int:
    """The job timeout of a review: every position's time (the moves and the one after the
    last), whole seconds, and ``margin_s`` (the analyses' margin) twice."""
    return (len(request.moves) + 1) * request.time_ms // 1000 + 2 * margin_s


class ReviewService:
    """Submits reviews to ``analyses``' queue and reads them back (its status and wait)."""

    def __init__(self, analyses: AnalysisService) -> None:
        self.analyses = analyses
        self.settings = analyses.settings
        self.keys = analyses.keys

    def submit(self, game_id: str, game, events, time_ms: int) -> tuple[Job, str]:
        """Enqueue a review of ``events`` (the game's log from serial 1, each with its head) of
        ``game`` (an engine Game), or join the identical one; ``(job, "new" or "joined")``.
        Raises :class:`NothingToReview` when there are no events, :class:`QueueFull` when
        the queue holds ``max_queue_length`` jobs."""
        if not events:
            raise NothingToReview(game_id)
        last = events[-1]
        request = ReviewRequest(game_id=game_id, game=game.name, params=game.params(),
                                position=position_tag(last.serial, last.head),
                                moves=[list(e.move) for e in events], time_ms=time_ms)
        job_key = self.keys.review_job(self.analyses.queue.name, request.digest())
        existing = self.analyses.redis.get(job_key)
        if existing is not None:
            job = self._fetch(existing.decode())
            if job is not None and self.status(job) != "failed":
                return job, "joined"
        queued = self.analyses.queue.count
        if queued >= self.settings.max_queue_length:
            raise QueueFull(queued)
        job_id = f"{ID_PREFIX}{uuid.uuid4().hex}"
        timeout_s = review_timeout_s(request, self.settings.job_timeout_margin_s)
        self.analyses.redis.set(job_key, job_id,
                                ex=timeout_s + self.settings.result_ttl_s + 3600)
        total = len(events) + 1
        meta: dict = {"progress": {"done": 0, "total": total}}
        callbacks: dict = {}
        if self.analyses.callbacks_meta is not None:
            meta["callbacks"] = self.analyses.callbacks_meta
            callbacks = {"on_success": Callback(REVIEW_SUCCEEDED)}
        return self.analyses.queue.enqueue(
            JOB_FUNCTION, request.model_dump(mode="json"),
            alive_key=self.keys.analysis_alive(job_id), alive_ttl_s=self.settings.job_liveness_s,
            job_id=job_id, job_timeout=timeout_s, result_ttl=self.settings.result_ttl_s,
            failure_ttl=self.settings.failure_ttl_s, ttl=timeout_s + 3600,
            description=f"review {game_id} at {request.position}", meta=meta,
            **callbacks), "new"

    def _fetch(self, review_id: str) -> Job | None:
        try:
            return Job.fetch(review_id, connection=self.analyses.redis)
        except NoSuchJobError:
            return None

    def get(self, review_id: str) -> Job:
        """The review ``review_id``; :class:`NotFound` when there is none."""
        job = None
        if review_id.startswith(ID_PREFIX) and len(review_id) <= 64:
            job = self._fetch(review_id)
        if (job is None or job.origin != self.settings.queue_name
                or job.func_name != JOB_FUNCTION):
            raise NotFound(f"no review {review_id!r}")
        return job

    def status(self, job: Job) -> str:
        return self.analyses.status(job)

    def wait(self, job: Job, seconds: float) -> str:
        return self.analyses.wait(job, seconds)

    def view(self, job: Job, status: str | None = None) -> dict:
        """The JSON of ``GET /v1/reviews/{id}``: ``moves`` and ``players`` once finished."""
        status = status or self.status(job)
        meta = job.get_meta(refresh=True)
        request = self.request_of(job)
        view = {"id": job.id, "status": status, "progress": meta.get("progress"),
                "game_id": request.game_id if request else None,
                "game": request.game if request else None,
                "position": request.position if request else None,
                "time_ms": request.time_ms if request else None,
                "moves": None, "players": None, "error": None}
        if status == "finished":
            result = job.return_value() or {}
            view["moves"], view["players"] = result.get("moves"), result.get("players")
        elif status == "failed":
            view["error"] = job_error_text(job)
        return view

    @staticmethod
    def request_of(job: Job) -> ReviewRequest | None:
        try:
            return ReviewRequest.model_validate(job.args[0]) if job.args else None
        except ValidationError:
            return None
