"""The analyses application service: turn an analysis request into an RQ job and report on it.

A request is an :class:`~service.application.analysis_request.AnalysisRequest` (canonical:
game, params, position, limits); its digest names the job key
``<prefix>:analysis:job:<queue>:<digest>``, which points at the RQ job for it. The job carries
the request's JSON form. While that job is queued, started or finished (RQ keeps finished jobs
for ``result_ttl_s``), an identical request joins it instead of enqueueing another; so
finished results are cached by position.

A started job whose worker died is detected by its liveness key, which the process running the
job keeps alive from before RQ marks it started until after RQ has recorded its end (see
:mod:`workers.liveness`): a started job without it, started more than ``job_liveness_s`` ago,
has lost its worker. It is failed through RQ's own abandoned-job handling
(``StartedJobRegistry.cleanup``, its failure callback included), so it ends ``failed`` with an
error. The check and the failing are one atomic step in Redis, so a job whose worker refreshes
the key, or records the job's end, meanwhile is left alone; the callback runs under a timer
(RQ's ``TimerDeathPenalty``), not SIGALRM, as the API answers from threads.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from datetime import UTC, datetime

import redis
from pydantic import ValidationError
from rq import Callback, Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.results import Result
from rq.timeouts import TimerDeathPenalty

from ..config import Settings
from ..errors import NotFound, QueueFull
from ..store.keys import KeySpace
from .analysis_request import AnalysisRequest, with_time_used
from .exact_values import GAME as STORED_GAME
from .exact_values import ExactValues, StoredValue

JOB_FUNCTION = "boxfish.workers.analysis_job.run_analysis"
#: The review job (:mod:`.reviews`), on the same queue: not an analysis.
REVIEW_JOB_FUNCTION = "boxfish.workers.review_job.run_review"
#: The RQ callbacks that announce a job's end (see :mod:`workers.webhook_delivery`).
ANALYSIS_SUCCEEDED = "boxfish.workers.webhook_delivery.analysis_succeeded"
ANALYSIS_FAILED = "boxfish.workers.webhook_delivery.analysis_failed"

_STATUS = {
    JobStatus.QUEUED: "queued", JobStatus.DEFERRED: "queued", JobStatus.SCHEDULED: "queued",
    JobStatus.CREATED: "queued", JobStatus.STARTED: "started", JobStatus.FINISHED: "finished",
    JobStatus.FAILED: "failed", JobStatus.STOPPED: "failed", JobStatus.CANCELED: "failed",
}
DONE = ("finished", "failed")
#: The id prefix of analyses answered from the store of exact values (no job).
STORED_PREFIX = "st_"

log = logging.getLogger(__name__)

# Expires the entries of a started job whose liveness key is gone in RQ's started registry (score
# 0), for RQ's cleanup to fail it as abandoned; atomically with the checks, so a job whose worker
# is alive (the key exists) or has recorded its end (its status is no longer "started") is left
# alone. A job with no entry there (its execution record lost) gets one. KEYS: the liveness key,
# the job's hash, the started registry; ARGV: the job id. Returns 1 if expired, else 0.
_EXPIRE_ABANDONED = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('HGET', KEYS[2], 'status') ~= 'started' then return 0 end
local prefix = ARGV[1] .. ':'
local found = false
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  if string.sub(member, 1, #prefix) == prefix then
    redis.call('ZADD', KEYS[3], 0, member)
    found = true
  end
end
if not found then redis.call('ZADD', KEYS[3], 0, prefix .. 'lost') end
return 1
"""


def job_timeout_s(time_ms: int, settings: Settings) -> int:
    """The RQ job timeout of a search of ``time_ms`` (an analysis, or an engine's move): its
    whole seconds and ``settings.job_timeout_margin_s``."""
    return time_ms // 1000 + settings.job_timeout_margin_s


def job_error_text(job: Job) -> str:
    """A one-line error for a failed job (the last line of the worker's traceback)."""
    exc = None
    try:
        res = job.latest_result()
        exc = res.exc_string if res is not None else None
    except Exception:  # an unreadable result must not hide the failure
        pass
    return error_text(exc or job.exc_info or "")


def error_text(exc: str) -> str:
    """A one-line error for a failed job from its traceback text (the last line, or what
    the worker's death means)."""
    if "AbandonedJobError" in exc:
        return "the worker running this analysis died (AbandonedJobError)"
    if "JobTimeoutException" in exc:
        return "the analysis exceeded its job timeout (JobTimeoutException)"
    if "Work-horse terminated unexpectedly" in exc or "waitpid returned" in exc:
        return "the process running this analysis was killed (work horse terminated)"
    lines = [ln for ln in exc.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "the analysis failed"


def job_abandoned(connection: redis.Redis, job: Job, alive_key: str, liveness_s: float) -> bool:
    """Whether the started ``job``'s worker is gone: its liveness key ``alive_key`` is
    missing and the job started more than ``liveness_s`` ago (never a live worker's job,
    however long it runs: :mod:`workers.liveness`)."""
    if connection.exists(alive_key):
        return False
    job.refresh()
    started = job.started_at
    if started is None:
        return False
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return (datetime.now(UTC) - started).total_seconds() > liveness_s


def fail_abandoned(connection: redis.Redis, job: Job, alive_key: str) -> None:
    """Fail ``job`` as RQ does once a dead worker's heartbeat runs out, if it is still
    started and its liveness key ``alive_key`` still gone: expire its entries in the started
    registry now (:data:`_EXPIRE_ABANDONED`, atomic with those checks) and let RQ's cleanup
    move it to the failed registry with ``AbandonedJobError`` and run its failure callback
    (under a timer: this may run in any thread, where SIGALRM cannot be used). Reads no
    execution record (one may vanish at any moment as the job ends)."""
    registry = StartedJobRegistry(job.origin, connection=connection,
                                  death_penalty_class=TimerDeathPenalty)
    if connection.eval(_EXPIRE_ABANDONED, 3, alive_key, job.key, registry.key, job.id):
        registry.cleanup()


class AnalysisService:
    def __init__(self, connection: redis.Redis, settings: Settings, keys: KeySpace,
                 callbacks_meta: dict | None = None,
                 exact_values: ExactValues | None = None) -> None:
        """``callbacks_meta``: what each job carries for its RQ callbacks, which announce its
        end to the analysis's callbacks (:meth:`.webhooks.Webhooks.job_meta`); None: no
        callbacks. ``exact_values``: the store of exact values read before a search (None:
        every analysis searches)."""
        self.redis = connection
        self.exact_values = exact_values
        self.callbacks_meta = callbacks_meta
        self.settings = settings
        self.keys = keys
        self.queue = Queue(settings.queue_name, connection=connection)

    # -- submitting ----------------------------------------------------------------------

    def submit(self, request: AnalysisRequest) -> tuple[Job, str]:
        """Enqueue ``request`` or join the identical job.

        Returns ``(job, how)`` with how ``"new"`` or ``"joined"``. Raises
        :class:`~service.errors.QueueFull` when the queue holds ``max_queue_length`` jobs.
        """
        h = request.digest()
        job_key = self.keys.analysis_job(self.queue.name, h)
        existing = self.redis.get(job_key)
        if existing is not None:
            job = self._fetch(existing.decode())
            if job is not None:
                status = self.status(job)
                if status != "failed":
                    return job, "joined"
        queued = self.queue.count
        if queued >= self.settings.max_queue_length:
            raise QueueFull(queued)
        job_id = uuid.uuid4().hex
        timeout_s = job_timeout_s(request.time_ms, self.settings)
        # The job key lives as long as the job can: in the queue, running, then its result.
        ttl = timeout_s + self.settings.result_ttl_s + 3600
        self.redis.set(job_key, job_id, ex=ttl)
        meta: dict = {"request_hash": h}
        callbacks: dict = {}
        if self.callbacks_meta is not None:
            # On every job: a callback may join the job while it runs.
            meta["callbacks"] = self.callbacks_meta
            callbacks = {"on_success": Callback(ANALYSIS_SUCCEEDED),
                         "on_failure": Callback(ANALYSIS_FAILED)}
        job = self.queue.enqueue(
            JOB_FUNCTION, request.model_dump(mode="json"),
            alive_key=self.keys.analysis_alive(job_id), alive_ttl_s=self.settings.job_liveness_s,
            job_id=job_id, job_timeout=timeout_s, result_ttl=self.settings.result_ttl_s,
            failure_ttl=self.settings.failure_ttl_s, ttl=timeout_s + 3600,
            description=f"analyse {request.game} {h[:12]}", meta=meta, **callbacks)
        return job, "new"

    # -- the store of exact values --------------------------------------------------------

    def from_store(self, request: AnalysisRequest) -> dict | None:
        """The finished analysis of ``request`` answered from the store of exact values, with
        no job (an id starting ``st_``, kept ``result_ttl_s`` for :meth:`stored_view`), or
        None when the store holds no exact value covering it."""
        if self.exact_values is None or request.game != STORED_GAME:
            return None
        state = request.build_state()
        if state.is_terminal():
            return None
        p = request.params
        stored = self.exact_values.lookup(p["width"], p["height"], state.drawn)
        if stored is None or not stored.covers(request.multipv):
            return None
        view = {"id": STORED_PREFIX + uuid.uuid4().hex, "status": "finished", "progress": None,
                "result": stored_result(state, stored, request.multipv), "error": None,
                "request": request.model_dump(mode="json")}
        self.redis.set(self.keys.analysis_stored(view["id"]), json.dumps(view),
                       ex=self.settings.result_ttl_s)
        return view

    def stored_view(self, analysis_id: str) -> dict:
        """An analysis answered from the store (:meth:`from_store`); NotFound when there is
        none (or it expired)."""
        raw = self.redis.get(self.keys.analysis_stored(analysis_id)) \
            if len(analysis_id) <= 64 else None
        if raw is None:
            raise NotFound(f"no analysis {analysis_id!r}")
        view = json.loads(raw)
        view["result"] = with_time_used(view.get("result"))
        return view

    # -- reading -------------------------------------------------------------------------

    def _fetch(self, job_id: str) -> Job | None:
        try:
            return Job.fetch(job_id, connection=self.redis)
        except NoSuchJobError:
            return None

    def get(self, job_id: str) -> Job:
        """The analysis job ``job_id`` of this queue; :class:`~service.errors.NotFound` when
        there is none."""
        job = self._fetch(job_id) if len(job_id) <= 64 else None
        if (job is None or job.origin != self.settings.queue_name
                or job.func_name == REVIEW_JOB_FUNCTION):
            raise NotFound(f"no analysis {job_id!r}")
        return job

    def status(self, job: Job) -> str:
        """The API status of ``job``; fails it first if its worker is gone (never one whose
        worker lives, however long it runs). Failing it raises nothing but the queue Redis's
        own errors (``redis.RedisError``)."""
        try:
            status = _STATUS.get(job.get_status(refresh=True), "queued")
        except Exception:  # the job hash expired under us
            return "failed"
        if status != "started":
            return status
        try:
            if not self._abandoned(job):
                return status
            self._fail_abandoned(job)
        except redis.RedisError:
            raise
        except Exception:  # the job ended (or expired) meanwhile: read it again
            log.warning("analysis %s: checking or failing it as abandoned raised", job.id,
                        exc_info=True)
        try:
            return _STATUS.get(job.get_status(refresh=True), "failed")
        except Exception:  # the job hash expired under us
            return "failed"

    def _abandoned(self, job: Job) -> bool:
        return job_abandoned(self.redis, job, self.keys.analysis_alive(job.id),
                             self.settings.job_liveness_s)

    def _fail_abandoned(self, job: Job) -> None:
        fail_abandoned(self.redis, job, self.keys.analysis_alive(job.id))

    def wait(self, job: Job, seconds: float) -> str:
        """Block up to ``seconds`` until ``job`` is finished or failed; returns its status."""
        deadline = time.monotonic() + seconds
        results_key = Result.get_key(job.id)
        while True:
            status = self.status(job)
            remaining = deadline - time.monotonic()
            if status in DONE or remaining <= 0:
                return status
            # RQ writes every outcome (success or failure) to the job's results stream. Each
            # read ends within the connection's socket timeout, with the recorder's margin: a
            # longer one ends as a TimeoutError, a 503 on a healthy Redis.
            pool = getattr(self.redis, "connection_pool", None)
            timeout = getattr(pool, "connection_kwargs", {}).get("socket_timeout")
            longest = max(timeout - 1.0, timeout / 2) if timeout else 1.0
            block_ms = max(1, int(min(remaining, 1.0, longest) * 1000))
            self.redis.xread({results_key: "0-0"}, count=1, block=block_ms)

    def view(self, job: Job, status: str | None = None) -> dict:
        """The JSON of ``GET /v1/analyses/{id}``."""
        status = status or self.status(job)
        meta = job.get_meta(refresh=True)
        view = {"id": job.id, "status": status, "progress": meta.get("progress"),
                "result": None, "error": None}
        if status == "finished":
            view["result"] = with_time_used(job.return_value())
        elif status == "failed":
            view["error"] = job_error_text(job)
        request = self.request_of(job)
        if request is not None:
            view["request"] = request.model_dump(mode="json")
        return view

    @staticmethod
    def request_of(job: Job) -> AnalysisRequest | None:
        """The request ``job`` runs (None if it carries none this version can read)."""
        try:
            return AnalysisRequest.model_validate(job.args[0]) if job.args else None
        except ValidationError:
            return None

    def queue_length(self) -> int:
        return self.queue.count


def stored_result(state, stored: StoredValue, multipv: int | None) -> dict:
    """An analysis result (``Analysis.to_dict()``'s fields) from a stored exact value, with
    ``source`` ``"store"``: the stored moves (the best ``multipv``, or all), no search."""
    game = state.game
    shown = stored.moves if multipv is None else stored.moves[:multipv]
    moves = [{"move": list(game.action_to_move(ln)), "value": v, "exact": True,
              "bound": "exact", "lower": v, "upper": v, "depth": None, "mate_in": None}
             for ln, v in shown]
    best = moves[0]["move"] if moves else None
    return {"game": game.name, "best_move": best, "value": stored.value, "exact": True,
            "bound": "exact", "lower": stored.value, "upper": stored.value,
            "pv": [best] if best else [], "depth": 0, "nodes": 0, "nps": 0, "time_used_ms": 0,
            "time_ms": 0,
            "tt_hits": 0, "moves": moves, "proven": None, "mate_in": None, "source": "store",
            "engine": stored.engine, "proof_ms": round(stored.proof_s * 1000)}
