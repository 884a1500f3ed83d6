"""Board pictures: ``GET /v1/games/{id}/board.{svg,png,txt}`` (the game at its current serial or
at ``?at=``) and ``GET /v1/analyses/{id}/board.{svg,png,txt}`` (the analysed position with its
best move and move values), drawn by :mod:`service.pictures`.

Caching: the ETag is a strong validator over what the picture shows (the game, the serial, the
log's head when it is the live position, the format and the PNG width; for an analysis its job
and the format and width), ``If-None-Match`` answers 304. A picture that can never change (a
fixed ``?at=``, a finished game, a finished analysis) is ``Cache-Control: public,
max-age=31536000, immutable``; the live position of a game in progress is ``no-cache``.
"""

from __future__ import annotations

import hashlib

from flask import Blueprint, Response, request

from ..pictures import MEDIA_TYPES, render
from ..problems import Problem, invalid
from . import check_id, ctx, query_int

bp = Blueprint("pictures", __name__)

#: The PNG width in pixels: default and bounds of ``?size=``.
DEFAULT_SIZE = 480
MIN_SIZE = 64
MAX_SIZE = 2048
#: Part of every ETag: change it when the drawing changes, so no cache keeps an old picture.
DRAWING_VERSION = "1"
IMMUTABLE = "public, max-age=31536000, immutable"
#: The security middleware's policy with inline styles allowed: a standalone SVG styles itself
#: with its embedded style sheet (still no scripts, no fetches).
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"


def _format(fmt: str) -> str:
    if fmt not in MEDIA_TYPES:
        raise Problem(404, "not-found", "Not found",
                      f"no picture format {fmt!r}; formats: {', '.join(MEDIA_TYPES)}")
    return fmt


def _size() -> int:
    """``?size=`` (checked for every format, used by PNG only)."""
    size = query_int("size", DEFAULT_SIZE)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise invalid(f"size must be from {MIN_SIZE} to {MAX_SIZE} pixels, got {size}",
                      errors=[{"loc": ["query", "size"], "msg": f"{MIN_SIZE} to {MAX_SIZE}",
                               "type": "greater_than_equal" if size < MIN_SIZE
                               else "less_than_equal"}], reason="out_of_range")
    return size


def _etag(*parts) -> str:
    return '"' + hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest() + '"'


def _answer(fmt: str, size: int, etag: str, immutable: bool, draw) -> Response:
    """The picture (``draw()`` -> bytes, called only when the client's copy is not current)
    or a 304, with the ETag and Cache-Control."""
    headers = {"ETag": etag, "Cache-Control": IMMUTABLE if immutable else "no-cache"}
    if request.if_none_match.contains(etag.strip('"')):
        return Response(status=304, headers=headers)
    if fmt == "svg":
        headers["Content-Security-Policy"] = SVG_CSP
    return Response(draw(), status=200, headers=headers, mimetype=None,
                    content_type=MEDIA_TYPES[fmt])


@bp.get("/v1/games/<game_id>/board.<fmt>")
def game_board(game_id: str, fmt: str):
    """The game at ``?at=`` (0 to its serial; default: now). 404 for an unknown game or
    format, 422 ``out_of_range`` for ``at`` beyond the game's serial or a ``size`` out of
    bounds."""
    fmt = _format(fmt)
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    size = _size()
    at = query_int("at", meta.serial)
    if at > meta.serial:
        raise invalid(f"at must be at most the game's serial {meta.serial}",
                      errors=[{"loc": ["query", "at"], "msg": f"at most {meta.serial}",
                               "type": "less_than_equal"}], reason="out_of_range")
    fixed = "at" in request.args
    # The live position names the log's head too: a log rewritten to another history (a
    # store failover losing writes) at the same serial is another picture.
    etag = _etag("game", DRAWING_VERSION, meta.game_id, at, "" if fixed else meta.head,
                 fmt, size if fmt == "png" else "")
    immutable = fixed or meta.status == "finished"
    return _answer(fmt, size, etag, immutable,
                   lambda: render(fmt, games.state_at(meta, at), width=size))


@bp.get("/v1/analyses/<job_id>/board.<fmt>")
def analysis_board(job_id: str, fmt: str):
    """The analysed position with the analysis drawn. 404 for an unknown analysis or format,
    409 ``not_finished`` (with ``Retry-After``) while it runs, 409 ``failed`` when it failed,
    422 for a ``size`` out of bounds."""
    fmt = _format(fmt)
    analyses = ctx().analyses
    job = analyses.get(check_id(job_id, "analysis"))
    size = _size()
    status = analyses.status(job)
    if status == "failed":
        raise Problem(409, "analysis-failed", "Analysis failed",
                      f"analysis {job.id!r} failed: nothing to draw", reason="failed")
    if status != "finished":
        raise Problem(409, "analysis-not-finished", "Analysis not finished",
                      f"analysis {job.id!r} is {status}; retry when it has finished",
                      headers={"Retry-After": "1"}, reason="not_finished", analysis_status=status)
    analysis = analyses.request_of(job)
    if analysis is None:
        raise Problem(404, "not-found", "Not found",
                      f"analysis {job.id!r} carries no position this server can read")
    etag = _etag("analysis", DRAWING_VERSION, job.id, fmt, size if fmt == "png" else "")

    def draw() -> bytes:
        return render(fmt, analysis.build_state(), job.return_value(), width=size)

    return _answer(fmt, size, etag, True, draw)
