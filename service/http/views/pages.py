"""The pages a person opens in a browser: ``GET /`` (create a game, open one by id, the
recent games) and ``GET /games/<id>`` (the live analysis board).

The pages are plain HTML from Jinja templates (``service/templates``) with one JavaScript
module and one style sheet (``service/static``, served by Flask at ``/static``), and the board
pictures' style sheet (``/board.css``): the board is the picture of ``GET
/v1/games/{id}/board.svg`` inlined, so there is one drawing code. Everything
the pages show they fetch from the public API, so the HTML carries only what the script needs
to start, in ``data-`` attributes: no inline script or style, which their
Content-Security-Policy (:data:`PAGE_CSP`) forbids. An unknown game id is a 404 HTML page.
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template

from ...errors import GameNotFound
from ...pictures.svg import style_sheet
from . import ID_RE, ctx

bp = Blueprint("pages", __name__)

#: The pages' own policy (the security middleware's ``default-src 'none'`` would block their
#: script, style sheet and API calls): only this origin's files, inlined SVG as data.
PAGE_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


def _page(template: str, status: int = 200, **context):
    settings = ctx().settings
    html = render_template(template, max_board_size=settings.max_board_size,
                           max_time_ms=settings.max_time_ms,
                           default_time_ms=min(settings.default_time_ms, settings.max_time_ms),
                           **context)
    return html, status, {"Content-Type": "text/html; charset=utf-8",
                          "Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-cache"}


@bp.get("/")
def home():
    """The start page."""
    return _page("home.html")


@bp.get("/board.css")
def board_css():
    """The board pictures' own style sheet (the one each SVG embeds), for the pages: an SVG
    inlined in a page styles itself with it, since the pages' policy refuses inline styles."""
    return Response(style_sheet(), mimetype="text/css",
                    headers={"Cache-Control": "public, max-age=3600"})


@bp.get("/games/<game_id>")
def game_page(game_id: str):
    """The board of a game (``?at=N``: the position after serial N, read by the script);
    a 404 page when there is no such game."""
    if not ID_RE.match(game_id):
        return _page("missing.html", 404, game_id=game_id)
    try:
        meta = ctx().games.meta(game_id)
    except GameNotFound:
        return _page("missing.html", 404, game_id=game_id)
    return _page("game.html", game_id=meta.game_id, game=meta.game)
