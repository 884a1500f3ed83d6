"""Analyses: submit a position (or a stored game at a serial) and read the job.

Both submitting routes validate into one
:class:`~service.application.analysis_request.AnalysisRequest` and hand it to
:meth:`service.application.analyses.AnalysisService.submit`. A ``callback`` is no part of the
request (identical requests share a job whatever their callbacks): it is registered with the
job afterwards (:meth:`service.application.webhooks.Webhooks.add_callback`)."""

from __future__ import annotations

from flask import Blueprint

from ...application.analyses import STORED_PREFIX
from ...application.analysis_request import (
    POSITION_FIELDS,
    AnalysisRequest,
    canonical_position,
    core_problem,
)
from ...application.webhooks import analysis_event
from ...errors import QueueFull
from ..models import AnalysisFields, Callback, GameAnalysis
from ..problems import check_at_most, invalid, invalid_field
from . import (
    check_id,
    checked_url,
    choose_game,
    ctx,
    json_body,
    replayed,
    time_ms_limit,
    wait_param,
)

bp = Blueprint("analyses", __name__)


def _limits(data) -> tuple[int, int | None]:
    """``(time_ms, multipv)`` of a request: :func:`time_ms_limit` and ``multipv`` at most the
    server's ``max_multipv`` (a 422 ``limit_exceeded`` above)."""
    time_ms = time_ms_limit(data.time_ms, ["time_ms"])
    if data.multipv is not None:
        cap = ctx().settings.max_multipv
        check_at_most(data.multipv, cap, ["multipv"], f"multipv must be at most {cap}")
    return time_ms, data.multipv


def _check_core(game, core: str | None) -> str | None:
    """``core`` if it can run an analysis of ``game``; a 422 (``reason`` ``core_unavailable``,
    the engine's reason in ``detail``) otherwise."""
    problem = core_problem(game, core)
    if problem is not None:
        raise invalid_field(f"core {core!r} cannot run this analysis: {problem}", ["core"],
                            problem, "core_unavailable", "core_unavailable")
    return core


def _check_moves(game, moves: list) -> list[list]:
    """Parse and replay ``moves`` (raw JSON); 422 if one is malformed or illegal
    (:func:`replayed`). Returns them canonical (lists of ints)."""
    return [list(m) for m in replayed(game, moves, ["moves"]).history]


def _respond(analysis: AnalysisRequest, callback: Callback | None):
    services = ctx()
    wait = wait_param()
    if callback is not None:
        checked_url(callback.url, ["callback", "url"])
    else:  # (an analysis with a callback is a job, whose end the callback hears of)
        stored = services.analyses.from_store(analysis)
        if stored is not None:
            services.metrics.analyses.labels("store").inc()
            return stored, 200, {"Location": f"/v1/analyses/{stored['id']}"}
    try:
        job, how = services.analyses.submit(analysis)
    except QueueFull:
        services.metrics.analyses.labels("rejected").inc()
        raise
    services.metrics.analyses.labels(how).inc()
    if callback is not None:
        def ended():
            status = services.analyses.status(job)
            if status not in ("finished", "failed"):
                return None
            return analysis_event(services.analyses.view(job, status))

        services.webhooks.add_callback(job.id, callback.url, callback.secret, ended)
    status = services.analyses.wait(job, wait) if wait else services.analyses.status(job)
    view = services.analyses.view(job, status)
    code = 200 if status in ("finished", "failed") else 202
    return view, code, {"Location": f"/v1/analyses/{job.id}"}


@bp.post("/v1/analyses")
def submit_analysis():
    data, game = choose_game(json_body(), AnalysisFields)
    time_ms, multipv = _limits(data)
    core = _check_core(game, data.core)
    try:
        position = canonical_position(**data.model_dump(include=set(POSITION_FIELDS)))
    except ValueError as exc:
        raise invalid(str(exc), reason="invalid_position") from None
    if position["moves"] is not None:
        position["moves"] = _check_moves(game, position["moves"])
    analysis = AnalysisRequest.for_game(game, time_ms=time_ms, multipv=multipv, core=core,
                                        **position)
    if analysis.lines is not None:
        try:
            analysis.build_state()
        except ValueError as exc:
            raise invalid(str(exc), reason="invalid_position") from None
    return _respond(analysis, data.callback)


@bp.post("/v1/games/<game_id>/analyses")
def analyse_game(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    data = GameAnalysis.model_validate(json_body(optional=True))
    time_ms, multipv = _limits(data)
    game = games.game_of(meta)
    core = _check_core(game, data.core)
    at = meta.serial if data.at is None else check_at_most(
        data.at, meta.serial, ["at"], f"at must be at most the game's serial {meta.serial}",
        "out_of_range")
    moves = [e.move for e in ctx().recorder.read(meta.game_id, after=0, upto=at)]
    return _respond(AnalysisRequest.for_game(game, time_ms=time_ms, multipv=multipv,
                                             core=core, moves=moves), data.callback)


@bp.get("/v1/analyses/<job_id>")
def get_analysis(job_id: str):
    analyses = ctx().analyses
    job_id = check_id(job_id, "analysis")
    if job_id.startswith(STORED_PREFIX):
        return analyses.stored_view(job_id)
    return analyses.view(analyses.get(job_id))


@bp.get("/v1/analyses/<job_id>/deliveries")
def list_callback_deliveries(job_id: str):
    """The delivery attempts of the analysis's callbacks, newest first (the last
    ``DELIVERIES_KEPT``); whoever may read the analysis may read them (its id is the key). A
    404 problem for an unknown analysis."""
    services = ctx()
    job = services.analyses.get(check_id(job_id, "analysis"))
    return {"analysis": job.id, "deliveries": services.webhooks.callback_deliveries(job.id)}

