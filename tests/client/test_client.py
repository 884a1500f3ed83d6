"""boxfish.client against a live server (gunicorn, Redis, a real RQ worker): a move whose
answer is lost is retried and stored once, the typed errors, Busy from 503 and 429, an event
stream that resumes across a server restart, analyses (the polling path too), and webhook
signatures checked against those the ``standardwebhooks`` package makes."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from boxfish.client import (
    Analysis,
    Busy,
    Client,
    Forbidden,
    IllegalMove,
    InvalidRequest,
    Move,
    NotFound,
    SerialConflict,
    Unauthorized,
    WebhookVerificationError,
    verify_webhook,
)
from boxfish.engine import load_game
from tests.client.conftest import RestartableServer


def all_lines(width: int, height: int) -> list[list[int]]:
    return [list(m) for m in load_game("dots-and-boxes", width=width,
                                        height=height).new_state().legal_moves()]


class Recording(httpx.HTTPTransport):
    """Sends every request for real and records ``(method, path, headers)``; with
    ``lose_first_move``, the first answer to a POST of a move is read and then thrown away
    (``httpx.ReadError`` instead), as if the connection dropped after the server stored it."""

    def __init__(self, lose_first_move: bool = False) -> None:
        super().__init__()
        self.sent: list[tuple[str, str, httpx.Headers]] = []
        self.lose = lose_first_move

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path, request.headers))
        response = super().handle_request(request)
        if self.lose and request.method == "POST" and request.url.path.endswith("/moves"):
            self.lose = False
            response.read()
            response.close()
            raise httpx.ReadError("the answer was lost", request=request)
        return response


def test_a_move_whose_answer_was_lost_is_retried_and_stored_once(server_url):
    transport = Recording(lose_first_move=True)
    with Client(server_url, backoff=0.01, transport=transport) as api:
        game = api.create_game(width=2, height=2)
        played = api.play(game.id, [1, 1, 1], serial=1, token=game.token)
        assert (played.serial, played.move, played.player) == (1, [1, 1, 1], 0)
        assert played.replayed  # the second attempt got the stored move back
        posts = [headers for method, path, headers in transport.sent
                 if method == "POST" and path.endswith("/moves")]
        assert len(posts) == 2
        assert posts[0]["Idempotency-Key"] == posts[1]["Idempotency-Key"]
        assert [(m.serial, m.move) for m in api.moves(game.id)] == [(1, [1, 1, 1])]
        first_position = played.position
        nxt = api.play(game.id, [1, 2, 1], token=game.token)  # a new move, a new key
        assert (nxt.serial, nxt.replayed, nxt.to_move, nxt.status) == (2, False, 0,
                                                                      "in_progress")
        assert api.state(game.id).serial == 2
        # Each answer names the log position after its move, the replayed one too: the
        # game's position then, from which a stream resumes with the next move.
        assert nxt.position == api.state(game.id).position and nxt.position.startswith("2.")
        assert first_position.startswith("1.")
        events = api.events(game.id, after=first_position)
        second = next(events)
        events.close()
        assert (second.serial, second.position) == (2, nxt.position)


def test_errors_are_typed_from_the_problem_body(server_url):
    with Client(server_url, retries=0) as api:
        game = api.create_game(width=2, height=2)
        other = api.create_game(width=2, height=2)
        api.play(game.id, [1, 1, 1], token=game.token)

        with pytest.raises(IllegalMove) as illegal:
            api.play(game.id, [1, 1, 1], serial=2, token=game.token)
        assert illegal.value.status == 422 and illegal.value.reason == "already_drawn"
        assert illegal.value.problem["type"] == "urn:boxfish:problem:illegal-move"

        with pytest.raises(SerialConflict) as conflict:
            api.play(game.id, [1, 2, 1], serial=5, token=game.token)
        assert conflict.value.status == 409 and conflict.value.current_serial == 1

        with pytest.raises(NotFound) as missing:
            api.state("no-such-game")
        assert missing.value.status == 404 and missing.value.slug == "not-found"

        with pytest.raises(Unauthorized) as anonymous:
            api.play(game.id, [1, 2, 1])
        assert anonymous.value.status == 401

        with pytest.raises(Forbidden) as wrong_token:
            api.play(game.id, [1, 2, 1], token=other.token)
        assert wrong_token.value.status == 403

        with pytest.raises(InvalidRequest) as invalid:
            api.create_game(width=0, height=2)
        assert invalid.value.status == 422 and invalid.value.reason == "invalid_request"

        # Nothing of the refused requests was stored.
        assert [m.serial for m in api.moves(game.id)] == [1]
        assert api.moves(other.id) == []


@pytest.fixture
def busy_server(settings, redis_client, tmp_path):
    """A server whose analysis queue is always full and that allows 2 new games a minute."""
    busy = settings.model_copy(update={
        "key_prefix": f"{settings.key_prefix}:busy", "queue_name": f"{settings.queue_name}-busy",
        "max_queue_length": 0, "rate_limit_enabled": True, "rate_limit_games": "2/minute"})
    server = RestartableServer(busy, tmp_path / "busy.log")
    server.start()
    yield server
    server.stop()


def test_busy_carries_retry_after_for_503_and_429(busy_server):
    position = {"game": "dots-and-boxes", "width": 2, "height": 2}
    with Client(busy_server.url, retries=0) as api:
        with pytest.raises(Busy) as full:
            api.analyse(position=position, time_ms=50)
        assert full.value.status == 503 and full.value.slug == "queue-full"
        assert full.value.retry_after == 5

        api.create_game(width=1, height=1)
        api.create_game(width=1, height=1)
        with pytest.raises(Busy) as limited:
            api.create_game(width=1, height=1)
        assert limited.value.status == 429 and limited.value.slug == "rate-limited"
        assert limited.value.retry_after is not None and limited.value.retry_after > 0

    # With retries, the 503 is sent again (after its Retry-After) before Busy is raised.
    transport = Recording()
    with Client(busy_server.url, retries=1, transport=transport) as api:
        with pytest.raises(Busy):
            api.analyse(position=position, time_ms=50)
    assert [m for m, _, _ in transport.sent] == ["POST", "POST"]


def test_events_resume_across_a_server_restart(restartable_server, caplog):
    caplog.set_level("INFO", logger="boxfish.client")
    server = restartable_server
    lines = all_lines(2, 2)
    seen: list[Move] = []
    failure: list[BaseException] = []

    with Client(server.url, retries=10, backoff=0.1) as api:
        game = api.create_game(width=2, height=2)
        for serial, line in enumerate(lines[:3], start=1):
            api.play(game.id, line, serial=serial, token=game.token)

        def follow():
            try:
                with Client(server.url, retries=10, backoff=0.1) as reader:
                    seen.extend(reader.events(game.id, after=0))
            except BaseException as exc:  # reported by the test below
                failure.append(exc)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline and not failure:
            time.sleep(0.05)
        assert [m.serial for m in seen] == [1, 2, 3]

        server.restart()
        for serial, line in enumerate(lines[3:], start=4):
            api.play(game.id, line, serial=serial, token=game.token)
        thread.join(60)

    assert not failure and not thread.is_alive()
    assert [m.serial for m in seen] == list(range(1, len(lines) + 1))
    assert [m.move for m in seen] == lines
    assert seen[-1].finished and seen[-1].to_move is None
    assert all(not m.finished for m in seen[:-1])
    assert any("reconnecting after serial 3" in r.getMessage() for r in caplog.records)


def test_events_of_a_finished_game_end_at_once(server_url):
    with Client(server_url) as api:
        game = api.create_game(width=1, height=1)
        for line in all_lines(1, 1):
            api.play(game.id, line, token=game.token)
        assert [m.serial for m in api.events(game.id, after=2)] == [3, 4]
        assert list(api.events(game.id, after=4)) == []
        with pytest.raises(NotFound):
            next(api.events("no-such-game"))


def test_analyse_polls_until_the_job_is_done(server_url, rq_worker):
    transport = Recording()
    with Client(server_url, transport=transport) as api:
        # A position no other test asks for, so that the job is new, and one no search
        # proves in its 0.3 s, so that it runs that long: unfinished when the server answers
        # the POST (wait=0), however soon a worker takes it. The client polls it.
        result = api.analyse(position={"game": "dots-and-boxes", "width": 5, "height": 5,
                                       "moves": [[1, 1, 1], [2, 3, 1]]},
                             time_ms=301, wait=0)
        assert isinstance(result, Analysis)
        assert len(result.best_move) == 3
        assert result.bound in ("exact", "lower", "upper", "estimate")
        assert result.raw["status"] == "finished"
        polls = [path for method, path, _ in transport.sent if method == "GET"]
        assert polls and all(p == f"/v1/analyses/{result.id}" for p in polls)

        game = api.create_game(width=2, height=2)
        at_start = api.analyse(game_id=game.id, at=0, time_ms=50)
        assert at_start.best_move in all_lines(2, 2)
        with pytest.raises(InvalidRequest) as beyond:
            api.analyse(game_id=game.id, at=3, time_ms=50)
        assert beyond.value.reason == "out_of_range"


def test_animation_is_the_games_gif_sync_and_async(server_url):
    """``Client.animation`` and ``AsyncClient.animation``: the GIF of the route, a frame per
    position up to ``at``; an unknown game is NotFound, a bad size InvalidRequest."""
    import asyncio
    import io

    from PIL import Image

    from boxfish.client import AsyncClient

    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        for line in all_lines(2, 2)[:5]:
            api.play(game.id, line, token=game.token)
        gif = Image.open(io.BytesIO(api.animation(game.id, size=200)))
        assert gif.format == "GIF" and gif.n_frames == 6 and gif.width == 200
        assert Image.open(io.BytesIO(api.animation(game.id, at=2))).n_frames == 3
        with pytest.raises(NotFound):
            api.animation("no-such-game")
        with pytest.raises(InvalidRequest):
            api.animation(game.id, size=10)

    async def fetch() -> bytes:
        async with AsyncClient(server_url) as aapi:
            return await aapi.animation(game.id, at=4, size=200)

    assert Image.open(io.BytesIO(asyncio.run(fetch()))).n_frames == 5


def _signed(secret: str, body: str, when: datetime) -> dict:
    msg_id = f"msg_{secrets.token_hex(8)}"
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(when.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, when, body)}


def test_verify_webhook_against_standardwebhooks_signatures():
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    body = json.dumps({"type": "move", "game_id": "g1", "serial": 3})
    now = datetime.now(UTC)

    headers = _signed(secret, body, now)
    assert verify_webhook(secret, headers, body.encode()) == json.loads(body)
    upper = {k.title(): v for k, v in headers.items()}  # header names in any case
    upper["Webhook-Signature"] = "v1,bm9wZQ== " + upper["Webhook-Signature"]  # several
    assert verify_webhook(secret, upper, body)["serial"] == 3

    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, headers, body.replace("3", "4"))  # a tampered body
    other = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    with pytest.raises(WebhookVerificationError):
        verify_webhook(other, headers, body)  # another secret
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, _signed(secret, body, now - timedelta(minutes=10)), body)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, _signed(secret, body, now + timedelta(minutes=10)), body)
    for broken in ({**headers, "webhook-signature": "garbage"},
                   {k: v for k, v in headers.items() if k != "webhook-id"},
                   {**headers, "webhook-timestamp": "yesterday"}):
        with pytest.raises(WebhookVerificationError):
            verify_webhook(secret, broken, body)
