"""Board pictures: ``GET /v1/games/{id}/board.{svg,png,txt}`` (the game at its current serial or
at ``?at=``), ``GET /v1/games/{id}/animation.gif`` (the game move by move, with a review's
judgements), ``GET /v1/analyses/{id}/board.{svg,png,txt}`` (the analysed position with its
best move and move values) and ``GET /v1/reviews/{id}/chart.{svg,png}`` (a review's value
chart), drawn by :mod:`service.pictures`.

Caching: the ETag is a strong validator over what the picture shows (the game, the serial, the
log's head there, the format and the PNG width; for an analysis its job and the format and
width), ``If-None-Match`` answers 304. A picture that can never change is ``Cache-Control:
public, max-age=31536000, immutable``: a finished analysis, and a game's position named with
its head, ``?at=<serial>.<head>`` (the form of the game's ETags and event ids, which names one
history of the log). Every other game picture is ``no-cache`` (revalidated: a 304 while it is
current), the live position and a bare ``?at=<serial>`` alike, since a store failover that
loses acknowledged moves can give the log another history at the same serial, and a finished
game can lose its last move so.
"""

from __future__ import annotations

import hashlib

from flask import Blueprint, Response, request

from ...application.analyses import STORED_PREFIX
from ...application.analysis_request import AnalysisRequest
from ...application.games import HEAD_RE
from ...errors import NotFound, SerialConflict
from ...pictures import MEDIA_TYPES, render, render_png, render_svg
from ...pictures.animation import render_gif
from ...pictures.chart import chart_scene
from ...pictures.notes import LABELS
from ..problems import Problem, check_at_most, invalid_field
from . import check_id, ctx, query_int

bp = Blueprint("pictures", __name__)

#: The PNG width in pixels: default and bounds of ``?size=``.
DEFAULT_SIZE = 480
MIN_SIZE = 64
MAX_SIZE = 2048
#: Part of every ETag: change it when the drawing changes, so no cache keeps an old picture.
DRAWING_VERSION = "2"
IMMUTABLE = "public, max-age=31536000, immutable"
#: The security middleware's policy with inline styles allowed: a standalone SVG styles itself
#: with its embedded style sheet (still no scripts, no fetches).
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"


def _format(fmt: str) -> str:
    if fmt not in MEDIA_TYPES:
        raise NotFound(f"no picture format {fmt!r}; formats: {', '.join(MEDIA_TYPES)}")
    return fmt


def _size() -> int:
    """``?size=`` (checked for every format, used by PNG only)."""
    size = query_int("size", DEFAULT_SIZE)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise invalid_field(f"size must be from {MIN_SIZE} to {MAX_SIZE} pixels, got {size}",
                            ["query", "size"], f"{MIN_SIZE} to {MAX_SIZE}",
                            "greater_than_equal" if size < MIN_SIZE else "less_than_equal",
                            "out_of_range")
    return size


def _labels() -> str:
    """``?labels=`` (checked for every format, used by SVG and PNG): ``best`` (default) or
    ``all``; a 422 problem otherwise."""
    raw = request.args.get("labels", "best")
    if raw not in LABELS:
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise invalid_field(f"labels must be one of {', '.join(LABELS)}; got {shown!r}",
                            ["query", "labels"], " or ".join(LABELS), "enum")
    return raw


def _etag(*parts) -> str:
    return '"' + hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest() + '"'


#: The media type of the game's animation (not a board format: ``board.gif`` is a 404).
GIF = "image/gif"


def _answer(fmt: str, size: int, etag: str, immutable: bool, draw) -> Response:
    """The picture (``draw()`` -> bytes, called only when the client's copy is not current)
    or a 304, with the ETag and Cache-Control."""
    headers = {"ETag": etag, "Cache-Control": IMMUTABLE if immutable else "no-cache"}
    if request.if_none_match.contains(etag.strip('"')):
        return Response(status=304, headers=headers)
    if fmt == "svg":
        headers["Content-Security-Policy"] = SVG_CSP
    return Response(draw(), status=200, headers=headers, mimetype=None,
                    content_type=GIF if fmt == "gif" else MEDIA_TYPES[fmt])


def _check_finished(kind: str, job_id: str, status: str) -> None:
    """A 409 unless the ``kind`` (``analysis`` or ``review``) ``job_id`` is finished:
    ``<kind>-failed`` (``reason`` ``failed``) when it failed, ``<kind>-not-finished``
    (``reason`` ``not_finished``, ``Retry-After``) while it is queued or running."""
    title = kind.capitalize()
    if status == "failed":
        raise Problem(409, f"{kind}-failed", f"{title} failed",
                      f"{kind} {job_id!r} failed: nothing to draw", reason="failed")
    if status != "finished":
        raise Problem(409, f"{kind}-not-finished", f"{title} not finished",
                      f"{kind} {job_id!r} is {status}; retry when it has finished",
                      headers={"Retry-After": "1"}, reason="not_finished",
                      **{f"{kind}_status": status})


def _at(meta) -> tuple[int, str | None]:
    """``?at=``: ``(serial, head)`` of ``<serial>.<head>``, ``(serial, None)`` of a bare
    serial, the game's current serial without one; a 422 problem when it is neither form or
    beyond the game's serial."""
    raw = request.args.get("at")
    if raw is None:
        return meta.serial, None
    serial, dot, head = raw.partition(".")
    if not (serial.isascii() and serial.isdigit()) or (dot and not HEAD_RE.fullmatch(head)):
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise invalid_field(f"at must be a serial, or a position '<serial>.<head>' as in the "
                            f"game's ETag and event ids (the head 16 lowercase hex digits); "
                            f"got {shown!r}", ["query", "at"], "<serial> or <serial>.<head>",
                            "string_pattern_mismatch")
    at = check_at_most(int(serial), meta.serial, ["query", "at"],
                       f"at must be at most the game's serial {meta.serial}", "out_of_range")
    return at, head if dot else None


@bp.get("/v1/games/<game_id>/board.<fmt>")
def game_board(game_id: str, fmt: str):
    """The game at ``?at=`` (a serial from 0 to the game's, or ``<serial>.<head>``; default:
    now). 404 for an unknown game or format, or a head the log does not have at that serial
    (a failover gave it another history); 422 for an ``at`` of neither form or beyond the
    game's serial (``out_of_range``), or a ``size`` out of bounds."""
    fmt = _format(fmt)
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    size = _size()
    at, asked_head = _at(meta)
    head = games.head_at(meta, at)
    if asked_head is not None and asked_head != head:
        raise NotFound(f"game {meta.game_id!r} has no position {at}.{asked_head}: its log has "
                       f"another history at serial {at} (a store failover lost moves); ask "
                       f"for the game's current ETag or ?at={at}")
    etag = _etag("game", DRAWING_VERSION, meta.game_id, at, head, fmt,
                 size if fmt == "png" else "")
    immutable = asked_head is not None
    return _answer(fmt, size, etag, immutable,
                   lambda: render(fmt, games.state_at(meta, at), width=size))


@bp.get("/v1/analyses/<job_id>/board.<fmt>")
def analysis_board(job_id: str, fmt: str):
    """The analysed position with the analysis drawn, the moves ``?labels=`` names labelled
    (``best``, the default, or ``all``). 404 for an unknown analysis or format, 409
    ``not_finished`` (with ``Retry-After``) while it runs, 409 ``failed`` when it failed, 422
    for a ``size`` out of bounds or ``labels`` neither."""
    fmt = _format(fmt)
    analyses = ctx().analyses
    job_id = check_id(job_id, "analysis")
    if job_id.startswith(STORED_PREFIX):  # answered from the store of exact values
        view = analyses.stored_view(job_id)
        size, labels = _size(), _labels()
        stored = AnalysisRequest.model_validate(view["request"])
        etag = _etag("analysis", DRAWING_VERSION, job_id, fmt, size if fmt == "png" else "",
                     labels if fmt != "txt" else "")
        return _answer(fmt, size, etag, True,
                       lambda: render(fmt, stored.build_state(), view["result"], width=size,
                                      labels=labels))
    job = analyses.get(job_id)
    size, labels = _size(), _labels()
    _check_finished("analysis", job.id, analyses.status(job))
    analysis = analyses.request_of(job)
    if analysis is None:
        raise NotFound(f"analysis {job.id!r} carries no position this server can read")
    etag = _etag("analysis", DRAWING_VERSION, job.id, fmt, size if fmt == "png" else "",
                 labels if fmt != "txt" else "")

    def draw() -> bytes:
        return render(fmt, analysis.build_state(), job.return_value(), width=size,
                      labels=labels)

    return _answer(fmt, size, etag, True, draw)


#: The review chart's formats (a chart has no text form).
CHART_FORMATS = ("svg", "png")


@bp.get("/v1/reviews/<review_id>/chart.<fmt>")
def review_chart(review_id: str, fmt: str):
    """The value chart of a finished review (:mod:`service.pictures.chart`), SVG or PNG
    (``?size=`` its width). 404 for an unknown review or format, 409 ``not_finished`` (with
    ``Retry-After``) while it runs, 409 ``failed`` when it failed."""
    if fmt not in CHART_FORMATS:
        raise NotFound(f"no chart format {fmt!r}; formats: {', '.join(CHART_FORMATS)}")
    reviews = ctx().reviews
    job = reviews.get(check_id(review_id, "review"))
    size = _size()
    status = reviews.status(job)
    _check_finished("review", job.id, status)
    view = reviews.view(job, status)
    etag = _etag("review", DRAWING_VERSION, job.id, fmt, size if fmt == "png" else "")
    scene = chart_scene(view)
    return _answer(fmt, size, etag, True,
                   lambda: render_svg(scene) if fmt == "svg" else render_png(scene, size))


@bp.get("/v1/games/<game_id>/animation.gif")
def game_animation(game_id: str):
    """The game as an animated GIF (:mod:`service.pictures.animation`): a frame per position
    from serial 0 to ``?at=`` (default: now), ``?size=`` pixels wide; with ``?review=`` (a
    finished review of this game) each move's judgement and values. Cached as the game's
    board pictures (the ETag names the log position, the width and the review). 404 for an
    unknown game or review or a head the log does not have at ``at``; 409 while the review
    runs or when it failed, or when it reviewed another history of the log; 422 for a bad
    ``at``, ``size`` or ``review``."""
    services = ctx()
    games = services.games
    meta = games.meta(check_id(game_id, "game"))
    size = _size()
    at, asked_head = _at(meta)
    events = games.moves(meta)[:at]
    if len(events) < at:  # the log lost moves since meta was read
        raise SerialConflict(len(events))
    head = events[-1].head if events else ""
    if asked_head is not None and asked_head != head:
        raise NotFound(f"game {meta.game_id!r} has no position {at}.{asked_head}: its log has "
                       f"another history at serial {at} (a store failover lost moves); ask "
                       f"for the game's current ETag or ?at={at}")
    review_id = request.args.get("review")
    review = None
    if review_id is not None:
        review = _review_moves(services.reviews, meta.game_id, review_id, events)
    etag = _etag("animation", DRAWING_VERSION, meta.game_id, at, head, size, review_id or "")
    game = games.game_of(meta)
    return _answer("gif", size, etag, asked_head is not None,
                   lambda: render_gif(game, events, size, review))


def _review_moves(reviews, game_id: str, review_id: str, events) -> dict:
    """The moves of the finished review ``review_id`` of game ``game_id``, by serial: a 404
    when there is no such review, 409 while it runs or when it failed, 422 when it is another
    game's, 409 ``other_history`` when it reviewed moves the log no longer has."""
    job = reviews.get(check_id(review_id, "review"))
    status = reviews.status(job)
    _check_finished("review", job.id, status)
    view = reviews.view(job, status)
    if view["game_id"] != game_id:
        raise invalid_field(f"review {job.id!r} is of game {view['game_id']!r}, not of "
                            f"{game_id!r}", ["query", "review"], "a review of this game",
                            "value_error")
    serial, _, head = (view["position"] or "").partition(".")
    if serial.isdigit() and 0 < int(serial) <= len(events) and \
            events[int(serial) - 1].head != head:
        raise Problem(409, "review-of-another-history", "Review of another history",
                      f"review {job.id!r} reviewed the log as it was at {view['position']}; "
                      f"the log has another history there (a store failover lost moves)",
                      reason="other_history")
    return {m["serial"]: m for m in view["moves"] or []}
