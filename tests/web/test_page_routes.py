"""The pages' routes through the Flask test client (every answer checked against openapi.yaml
by the ``client`` fixture): HTML with its own Content-Security-Policy, the data the script
starts from, a 404 page for an unknown game, the static files and the board's style sheet."""

from __future__ import annotations

import re

from boxfish.service.http.views.pages import PAGE_CSP


def test_start_page(client, settings):
    resp = client.get("/")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    assert resp.headers["Content-Security-Policy"] == PAGE_CSP
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    html = resp.get_data(as_text=True)
    assert 'data-page="home"' in html
    assert f'data-max-board-size="{settings.max_board_size}"' in html
    assert '<meta name="viewport"' in html
    assert '<script type="module" src="/static/app.js"></script>' in html
    assert "<style" not in html and not re.search(r"<script>|\sstyle=|\son\w+=", html)


def test_game_page(client, new_game):
    gid, _, _ = new_game()
    resp = client.get(f"/games/{gid}?at=0")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    assert resp.headers["Content-Security-Policy"] == PAGE_CSP
    html = resp.get_data(as_text=True)
    assert f'data-game-id="{gid}"' in html and 'data-game="dots-and-boxes"' in html
    assert 'href="/board.css"' in html
    assert "<style" not in html and not re.search(r"<script>|\sstyle=|\son\w+=", html)


def test_unknown_game_is_a_404_page(client):
    for gid in ("nosuchgame", "bad.id"):
        resp = client.get(f"/games/{gid}")
        assert resp.status_code == 404 and resp.mimetype == "text/html"
        assert "No such game" in resp.get_data(as_text=True)
        assert gid in resp.get_data(as_text=True)


def test_static_files_and_board_styles(client):
    script = client.get("/static/app.js", validate_spec=False)
    assert script.status_code == 200 and "javascript" in script.mimetype
    assert "EventSource" in script.get_data(as_text=True)
    assert client.get("/static/style.css", validate_spec=False).mimetype == "text/css"
    css = client.get("/board.css")
    assert css.status_code == 200 and css.mimetype == "text/css"
    assert ".boxfish-board line.slot" in css.get_data(as_text=True)
