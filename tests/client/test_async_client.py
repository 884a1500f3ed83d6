"""boxfish.client.AsyncClient against a live server (gunicorn, Redis, a real RQ worker): a
whole game, a move whose answer is lost is retried and stored once, the typed errors, an
event stream read while an asyncio task appends moves and the server restarts, the polling
path of analyses, and two of the client page's asyncio bots playing each other in one event
loop. Each test runs its coroutine with ``asyncio.run``."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from boxfish.client import AsyncClient, errors
from boxfish.client.types import Analysis, Game, Move
from tests.client.test_client import all_lines
from tests.test_readme import CLIENT_PAGE, python_blocks


class AsyncRecording(httpx.AsyncBaseTransport):
    """Sends every request for real (``httpx.AsyncHTTPTransport``) and records ``(method,
    path, headers)``; with ``lose_first_move``, the first answer to a POST of a move is read
    and then thrown away (``httpx.ReadError`` instead), as if the connection dropped after
    the server stored the move."""

    def __init__(self, lose_first_move: bool = False) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.sent: list[tuple[str, str, httpx.Headers]] = []
        self.lose = lose_first_move

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path, request.headers))
        response = await self._inner.handle_async_request(request)
        if self.lose and request.method == "POST" and request.url.path.endswith("/moves"):
            self.lose = False
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("the answer was lost", request=request)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def test_a_whole_game_with_the_async_client(server_url):
    lines = all_lines(1, 1)

    async def game_of_four_moves():
        api = AsyncClient(server_url)
        try:
            game = await api.create_game(width=1, height=1)
            played = [await api.play(game.id, line, serial=serial, token=game.token)
                      for serial, line in enumerate(lines, start=1)]
            return (game, played, await api.state(game.id), await api.moves(game.id),
                    await api.moves(game.id, after=2),
                    [m async for m in api.events(game.id, after=1)],
                    [m async for m in api.events(game.id, after=4)])
        finally:
            await api.aclose()

    game, played, final, moves, tail, streamed, none_after = asyncio.run(game_of_four_moves())
    assert isinstance(game, Game) and game.token and (game.serial, game.status) == (
        0, "in_progress")
    assert all(isinstance(m, Move) and not m.replayed for m in played)
    assert [(m.serial, m.move, m.player) for m in played] == [
        (1, lines[0], 0), (2, lines[1], 1), (3, lines[2], 0), (4, lines[3], 1)]
    assert [m.completed for m in played] == [0, 0, 0, 1]
    assert played[-1].finished and played[-1].to_move is None
    assert not any(m.finished for m in played[:-1])
    assert final.finished and final.serial == 4 and final.scores == [0, 1]
    assert final.result["winner"] == 1 and final.token is None
    assert [(m.serial, m.move) for m in moves] == [(m.serial, m.move) for m in played]
    assert [m.serial for m in tail] == [3, 4]
    assert [m.serial for m in streamed] == [2, 3, 4] and streamed[-1].finished
    assert none_after == []


def test_a_move_whose_answer_was_lost_is_retried_and_stored_once(server_url):
    transport = AsyncRecording(lose_first_move=True)

    async def lose_one_answer():
        async with AsyncClient(server_url, backoff=0.01, transport=transport) as api:
            game = await api.create_game(width=2, height=2)
            played = await api.play(game.id, [1, 1, 1], serial=1, token=game.token)
            stored = await api.moves(game.id)
            nxt = await api.play(game.id, [1, 2, 1], token=game.token)  # a new key
            return played, stored, nxt, await api.state(game.id)

    played, stored, nxt, state = asyncio.run(lose_one_answer())
    assert (played.serial, played.move, played.player) == (1, [1, 1, 1], 0)
    assert played.replayed  # the second attempt got the stored move back
    # Two attempts of the first move with one key, then the second move with its own.
    keys = [headers["Idempotency-Key"] for method, path, headers in transport.sent
            if method == "POST" and path.endswith("/moves")]
    assert len(keys) == 3 and keys[0] == keys[1] != keys[2]
    assert [(m.serial, m.move) for m in stored] == [(1, [1, 1, 1])]
    assert (nxt.serial, nxt.replayed) == (2, False)
    assert state.serial == 2


def test_errors_are_typed_from_the_problem_body(server_url):
    async def refused():
        raised: dict[str, BaseException] = {}

        async def expect(name, cls, coroutine):
            with pytest.raises(cls) as info:
                await coroutine
            raised[name] = info.value

        async with AsyncClient(server_url, retries=0) as api:
            game = await api.create_game(width=2, height=2)
            other = await api.create_game(width=2, height=2)
            await api.play(game.id, [1, 1, 1], token=game.token)
            await expect("illegal", errors.IllegalMove,
                         api.play(game.id, [1, 1, 1], serial=2, token=game.token))
            await expect("conflict", errors.SerialConflict,
                         api.play(game.id, [1, 2, 1], serial=5, token=game.token))
            await expect("missing", errors.NotFound, api.state("no-such-game"))
            await expect("no stream", errors.NotFound, anext(api.events("no-such-game")))
            await expect("anonymous", errors.Unauthorized, api.play(game.id, [1, 2, 1]))
            await expect("wrong token", errors.Forbidden,
                         api.play(game.id, [1, 2, 1], token=other.token))
            await expect("invalid", errors.InvalidRequest, api.create_game(width=0, height=2))
            return raised, await api.moves(game.id), await api.moves(other.id)

    raised, moves, other_moves = asyncio.run(refused())
    assert raised["illegal"].status == 422 and raised["illegal"].reason == "already_drawn"
    assert raised["illegal"].problem["type"] == "urn:boxfish:problem:illegal-move"
    assert raised["conflict"].status == 409 and raised["conflict"].current_serial == 1
    assert raised["missing"].status == 404 and raised["missing"].slug == "not-found"
    assert raised["no stream"].status == 404
    assert raised["anonymous"].status == 401
    assert raised["wrong token"].status == 403
    assert raised["invalid"].status == 422 and raised["invalid"].reason == "invalid_request"
    # Nothing of the refused requests was stored.
    assert [m.serial for m in moves] == [1] and other_moves == []


def test_events_yield_every_serial_once_while_a_task_appends_across_a_restart(
        restartable_server, caplog):
    caplog.set_level("INFO", logger="boxfish.client")
    server = restartable_server
    lines = all_lines(2, 2)

    async def follow_while_appending():
        async with (AsyncClient(server.url, retries=10, backoff=0.1) as api,
                    AsyncClient(server.url, retries=10, backoff=0.1) as reader):
            game = await api.create_game(width=2, height=2)
            seen: list[Move] = []
            three_seen = asyncio.Event()

            async def follow():
                async for move in reader.events(game.id):
                    seen.append(move)
                    if len(seen) == 3:
                        three_seen.set()

            async def append():
                for serial, line in enumerate(lines[:3], start=1):
                    await api.play(game.id, line, serial=serial, token=game.token)
                await three_seen.wait()
                await asyncio.to_thread(server.restart)  # the reader's stream drops
                for serial, line in enumerate(lines[3:], start=4):
                    await api.play(game.id, line, serial=serial, token=game.token)

            follower = asyncio.create_task(follow())
            await asyncio.wait_for(asyncio.gather(follower, append()), 120)
            return seen

    seen = asyncio.run(follow_while_appending())
    assert [m.serial for m in seen] == list(range(1, len(lines) + 1))
    assert [m.move for m in seen] == lines
    assert seen[-1].finished and seen[-1].to_move is None
    assert all(not m.finished for m in seen[:-1])
    assert any("reconnecting after serial 3" in r.getMessage() for r in caplog.records)


def test_analyse_with_wait_0_polls_until_the_job_is_done(server_url, rq_worker):
    transport = AsyncRecording()
    # A position no other test asks for, so that the job is new, and one no search proves
    # in its 0.3 s, so that it runs that long: unfinished when the server answers the POST
    # (wait=0), however soon a worker takes it. The client polls it.
    position = {"game": "dots-and-boxes", "width": 5, "height": 5,
                "moves": all_lines(5, 5)[:2]}

    async def analyse():
        async with AsyncClient(server_url, transport=transport) as api:
            return await api.analyse(position=position, time_ms=297, wait=0)

    result = asyncio.run(analyse())
    assert isinstance(result, Analysis)
    assert result.best_move in all_lines(5, 5)[2:]
    assert result.bound in ("exact", "lower", "upper", "estimate")
    assert result.raw["status"] == "finished"
    assert [m for m, _, _ in transport.sent][0] == "POST"
    polls = [path for method, path, _ in transport.sent if method == "GET"]
    assert polls and all(p == f"/v1/analyses/{result.id}" for p in polls)


def test_two_readme_async_bots_play_a_whole_game_in_one_event_loop(server_url, rq_worker):
    example = next(b for b in python_blocks(CLIENT_PAGE) if "async def play_seat_async(" in b)
    assert len(example.strip().splitlines()) <= 12  # its import, a blank line, 10 lines
    readme: dict = {}
    exec(compile(example, str(CLIENT_PAGE), "exec"), readme)

    async def match():
        async with AsyncClient(server_url) as api:
            game = await api.create_game(width=2, height=2)
            bots = [readme["play_seat_async"](server_url, game.id, game.token, seat, time_ms=30)
                    for seat in (0, 1)]
            await asyncio.wait_for(asyncio.gather(*bots), 120)
            return await api.state(game.id), await api.moves(game.id)

    final, moves = asyncio.run(match())
    assert final.finished and final.serial == 12
    assert [m.serial for m in moves] == list(range(1, 13))
    assert sorted(m.move for m in moves) == sorted(all_lines(2, 2))
    assert re.fullmatch(r"1+", final.raw["lines"])
