"""The client's calls whose server side is built elsewhere, against their contract, on a live
server (gunicorn, Redis, a real RQ worker): ``Client.add_webhook`` (``POST
/v1/games/{id}/webhooks`` with the write token; body ``{"url", "events"}``; 201 with ``id``,
``url``, ``events`` and a ``whsec_`` secret; errors typed like every other), and
``create_game(engine=...)`` (``"engine": {"seat", "time_ms"}``: the server plays that seat)."""

from __future__ import annotations

import base64

import pytest

from boxfish.client import Client, Forbidden, NotFound, Unauthorized, Webhook
from boxfish.engine import load_game


def test_add_webhook_returns_its_secret(server_url):
    with Client(server_url, retries=0) as api:
        game = api.create_game(width=2, height=2)
        hook = api.add_webhook(game.id, game.token, "https://example.com/boxfish-hook")
        assert isinstance(hook, Webhook)
        assert hook.id and hook.url == "https://example.com/boxfish-hook"
        assert isinstance(hook.events, list) and hook.events
        assert hook.secret.startswith("whsec_")
        assert base64.b64decode(hook.secret.removeprefix("whsec_"))  # a base64 key
        assert hook.raw["id"] == hook.id

        # The events are passed through: asking for the default list by name gets it back.
        again = api.add_webhook(game.id, game.token, "https://example.com/second",
                                events=hook.events)
        assert again.events == hook.events and again.id != hook.id
        assert again.secret != hook.secret


def test_add_webhook_errors_are_typed(server_url):
    with Client(server_url, retries=0) as api:
        game = api.create_game(width=2, height=2)
        other = api.create_game(width=2, height=2)
        with pytest.raises(Unauthorized):
            api.add_webhook(game.id, None, "https://example.com/hook")
        with pytest.raises(Forbidden):
            api.add_webhook(game.id, other.token, "https://example.com/hook")
        with pytest.raises(NotFound):
            api.add_webhook("no-such-game", game.token, "https://example.com/hook")
    # The client's own token is used when the call names none.
    with Client(server_url, token=game.token, retries=0) as owner:
        assert owner.add_webhook(game.id, None, "https://example.com/own").secret


def test_create_game_with_an_engine_seat(server_url, rq_worker):
    with Client(server_url) as api:
        game = api.create_game(width=2, height=2, engine={"seat": 1, "time_ms": 50})
        assert game.to_move == 0 and game.token
        api.play(game.id, [1, 1, 1], serial=1, token=game.token)  # no box: seat 1 is to move
        reply = next(api.events(game.id, after=1))
        assert reply.serial == 2 and reply.player == 1
        rules = load_game("dots-and-boxes", width=2, height=2)
        state = rules.new_state()
        state.play(rules.parse_move([1, 1, 1]))
        assert tuple(reply.move) in [tuple(m) for m in state.legal_moves()]
