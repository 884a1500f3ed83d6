"""Analyses: submit a position (or a stored game at a serial) and read the job.

Both submitting routes validate into one :class:`~service.analysis_request.AnalysisRequest` and
hand it to :meth:`service.analyses.AnalysisService.submit`. A ``callback`` is no part of the
request (identical requests share a job whatever their callbacks): it is registered with the
job afterwards (:meth:`service.webhooks.Webhooks.add_callback`)."""

from __future__ import annotations

from flask import Blueprint, request

from boxfish.engine import IllegalMove

from ..analysis_request import (
    POSITION_FIELDS,
    AnalysisRequest,
    canonical_position,
    core_problem,
)
from ..models import AnalysisFields, Callback, GameAnalysis
from ..problems import Problem, invalid
from ..webhooks import analysis_event
from . import check_id, checked_url, choose_game, ctx, json_body, validate

bp = Blueprint("analyses", __name__)


def _limits(data) -> tuple[int, int | None]:
    settings = ctx().settings
    time_ms = data.time_ms if data.time_ms is not None else min(settings.default_time_ms,
                                                                settings.max_time_ms)
    if time_ms > settings.max_time_ms:
        raise invalid(f"time_ms must be at most {settings.max_time_ms} on this server",
                      errors=[{"loc": ["time_ms"], "msg": f"at most {settings.max_time_ms}",
                               "type": "less_than_equal"}], reason="limit_exceeded")
    if data.multipv is not None and data.multipv > settings.max_multipv:
        raise invalid(f"multipv must be at most {settings.max_multipv}",
                      errors=[{"loc": ["multipv"], "msg": f"at most {settings.max_multipv}",
                               "type": "less_than_equal"}], reason="limit_exceeded")
    return time_ms, data.multipv


def _check_core(game, core: str | None) -> str | None:
    """``core`` if it can run an analysis of ``game``; a 422 (``reason`` ``core_unavailable``,
    the engine's reason in ``detail``) otherwise."""
    problem = core_problem(game, core)
    if problem is not None:
        raise invalid(f"core {core!r} cannot run this analysis: {problem}",
                      errors=[{"loc": ["core"], "msg": problem, "type": "core_unavailable"}],
                      reason="core_unavailable")
    return core


def _check_moves(game, moves: list) -> list[list]:
    """Parse and replay ``moves`` (raw JSON); 422 (with the engine's reason and the move's
    index) if one is malformed or illegal. Returns them canonical (lists of ints)."""
    limit = ctx().settings.max_moves
    if len(moves) > limit:
        raise invalid(f"at most {limit} moves per request on this server",
                      errors=[{"loc": ["moves"], "msg": f"at most {limit} items",
                               "type": "too_long"}], reason="limit_exceeded")
    state = game.new_state()
    for i, raw in enumerate(moves):
        try:
            state.play(game.parse_move(raw))
        except IllegalMove as exc:
            raise Problem(422, "illegal-move", "Illegal move", f"moves[{i}]: {exc}",
                          reason=exc.reason, index=i, move=raw) from None
    return [list(m) for m in state.history]


def _respond(analysis: AnalysisRequest, callback: Callback | None):
    services = ctx()
    wait = _wait_param()
    if callback is not None:
        checked_url(callback.url, ["callback", "url"])
    try:
        job, how = services.analyses.submit(analysis)
    except Problem:
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


def _wait_param() -> float:
    raw = request.args.get("wait")
    if raw is None:
        return 0.0
    cap = ctx().settings.max_wait_s
    try:
        value = float(raw)
        if not 0 <= value <= cap:
            raise ValueError
    except ValueError:
        raise invalid(f"wait must be a number of seconds from 0 to {cap:g}, got {raw!r}",
                      errors=[{"loc": ["query", "wait"], "msg": f"0 to {cap:g}",
                               "type": "less_than_equal"}]) from None
    return value


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
    data = validate(GameAnalysis, json_body(optional=True))
    time_ms, multipv = _limits(data)
    game = games.game_of(meta)
    core = _check_core(game, data.core)
    at = meta.serial if data.at is None else data.at
    if at > meta.serial:
        raise invalid(f"at must be at most the game's serial {meta.serial}",
                      errors=[{"loc": ["at"], "msg": f"at most {meta.serial}",
                               "type": "less_than_equal"}], reason="out_of_range")
    moves = [e.move for e in ctx().recorder.read(meta.game_id, after=0, upto=at)]
    return _respond(AnalysisRequest.for_game(game, time_ms=time_ms, multipv=multipv,
                                             core=core, moves=moves), data.callback)


@bp.get("/v1/analyses/<job_id>")
def get_analysis(job_id: str):
    analyses = ctx().analyses
    job = analyses.get(check_id(job_id, "analysis"))
    return analyses.view(job)

