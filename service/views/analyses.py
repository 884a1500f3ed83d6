"""Analyses: submit a position (or a stored game at a serial) and read the job."""

from __future__ import annotations

from flask import Blueprint, request

from boxfish.engine import IllegalMove

from ..models import AnalysisFields, GameAnalysis
from ..problems import Problem, invalid
from . import check_id, choose_game, ctx, json_body, validate

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


def _check_moves(game, moves: list) -> list[list]:
    """Parse and replay ``moves``; 422 (with the engine's reason and the move's index) if one
    is malformed or illegal. Returns them canonical (lists of ints)."""
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


def _respond(canonical: dict):
    services = ctx()
    wait = _wait_param()
    try:
        job, how = services.analyses.submit(canonical)
    except Problem:
        services.metrics.analyses.labels("rejected").inc()
        raise
    services.metrics.analyses.labels(how).inc()
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
    moves, lines = None, None
    if data.lines is not None:
        if data.moves is not None:
            raise invalid("give either moves or lines, not both", reason="invalid_position")
        if not hasattr(game, "from_lines"):
            raise invalid(f"{game.name} positions cannot be given as lines; send moves",
                          reason="invalid_position")
        try:
            game.from_lines(data.lines, to_move=data.to_move or 0,
                            scores=tuple(data.scores or (0, 0)))
        except ValueError as exc:
            raise invalid(str(exc), reason="invalid_position") from None
        lines = data.lines
    else:
        if data.to_move is not None or data.scores is not None:
            raise invalid("to_move and scores go with lines; with moves they follow from "
                          "the moves", reason="invalid_position")
        moves = _check_moves(game, data.moves or [])
    canonical = {"game": game.name, "params": game.params(), "moves": moves, "lines": lines,
                 "to_move": (data.to_move or 0) if lines is not None else None,
                 "scores": list(data.scores or (0, 0)) if lines is not None else None,
                 "time_ms": time_ms, "multipv": multipv}
    return _respond(canonical)


@bp.post("/v1/games/<game_id>/analyses")
def analyse_game(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    data = validate(GameAnalysis, json_body(optional=True))
    time_ms, multipv = _limits(data)
    at = meta.serial if data.at is None else data.at
    if at > meta.serial:
        raise invalid(f"at must be at most the game's serial {meta.serial}",
                      errors=[{"loc": ["at"], "msg": f"at most {meta.serial}",
                               "type": "less_than_equal"}], reason="out_of_range")
    moves = [list(e.move) for e in ctx().recorder.read(meta.game_id, after=0, upto=at)]
    game = games.game_of(meta)
    canonical = {"game": game.name, "params": game.params(), "moves": moves, "lines": None,
                 "to_move": None, "scores": None, "time_ms": time_ms, "multipv": multipv}
    return _respond(canonical)


@bp.get("/v1/analyses/<job_id>")
def get_analysis(job_id: str):
    analyses = ctx().analyses
    job = analyses.get(check_id(job_id, "analysis"))
    return analyses.view(job)

