"""boxfish.client's event streams when a store failover rewrote the game's history, against
live servers (gunicorn, Redis): the log is cut back as a promoted replica that never had the
last moves leaves it (:func:`tests.lost_moves.lose_moves`), and other moves take the lost
serials through the real API.

The client resumes a stream with the whole id (``<serial>.<head>``) of the last event it
handed out, so the server can tell that history is gone; its ``game`` event reaches the
consumer as a ``GameReset`` with the log's state, whether it comes on reconnecting, on the
open stream, or on a stream started from a stale position; the moves after it are the new
log's. A bare serial (``after=N``) is still trusted, as before heads."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from boxfish.client import AsyncClient, Client, Game, GameReset, Move
from tests.client.conftest import RestartableServer
from tests.client.test_client import Recording, all_lines
from tests.lost_moves import lose_moves

WAIT_S = 30.0


class Follower:
    """``events(game_id, after)`` of a client of its own, read into ``seen`` by a thread;
    the requests' headers recorded by a :class:`Recording` transport."""

    def __init__(self, url: str, game_id: str, after: int | str = 0) -> None:
        self.transport = Recording()
        self.seen: list[Move | GameReset] = []
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(url, game_id, after),
                                       daemon=True)
        self.thread.start()

    def _run(self, url: str, game_id: str, after: int | str) -> None:
        try:
            with Client(url, retries=12, backoff=0.1, transport=self.transport) as reader:
                for item in reader.events(game_id, after=after, idle_timeout=10.0):
                    self.seen.append(item)
        except BaseException as exc:  # reported by the tests
            self.failure.append(exc)

    def wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition(self.seen) and not self.failure and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not self.failure, self.failure
        assert condition(self.seen), f"{what}; seen: {self.seen}"

    def join(self) -> None:
        self.thread.join(WAIT_S)
        assert not self.failure, self.failure
        assert not self.thread.is_alive(), f"the stream did not end; seen: {self.seen}"

    def last_event_ids(self) -> list[str]:
        return [headers["Last-Event-ID"] for method, path, headers in self.transport.sent
                if path.endswith("/events")]


def resets(seen) -> list[GameReset]:
    return [item for item in seen if isinstance(item, GameReset)]


def play_to_the_end(api: Client, game: Game, lines: list[list[int]]) -> None:
    """Play the lines not drawn yet, in order, each at the log's next serial."""
    state = api.state(game.id)
    for line in lines:
        if not state.finished and line in state.legal_moves:
            api.play(game.id, line, serial=state.serial + 1, token=game.token)
            state = api.state(game.id)
    assert state.finished


def test_a_stream_reopened_after_a_failover_that_lost_a_move_yields_a_game_reset(
        restartable_server, settings, redis_client, tmp_path):
    """The follower's server goes away; meanwhile the store loses move 3 and another server
    of the same store appends two others (serials 3 and 4). Reopening with the bare serial 3
    would be trusted and give move 4 on top of the lost move 3; with ``3.<head>`` the server
    answers with the log's state: a GameReset at serial 4, then the new log's moves."""
    lines = all_lines(2, 2)
    other = RestartableServer(settings, tmp_path / "other.log")
    other.start()
    try:
        with Client(other.url) as api:
            game = api.create_game(width=2, height=2)
            for serial, line in enumerate(lines[:3], start=1):
                api.play(game.id, line, serial=serial, token=game.token)
            follower = Follower(restartable_server.url, game.id)
            follower.wait_for(lambda seen: len(seen) == 3, "moves 1 to 3")
            lost = follower.seen[2]
            assert isinstance(lost, Move) and lost.position == api.state(game.id).position
            assert lost.position.startswith("3.")

            restartable_server.stop()  # the follower's stream drops; it retries
            lose_moves(redis_client, settings.key_prefix, game.id, keep=2)
            replacing = [lines[5], lines[6]]
            for serial, line in enumerate(replacing, start=3):
                api.play(game.id, line, serial=serial, token=game.token)
            at_4 = api.state(game.id)
            restartable_server.start()

            follower.wait_for(resets, "a GameReset")
            [reset] = resets(follower.seen)
            assert follower.seen.index(reset) == 3  # right after the lost move
            assert reset.game == at_4 and reset.position == at_4.position
            assert (reset.serial, reset.to_move, reset.finished) == (4, at_4.to_move, False)
            assert reset.game.legal_moves == at_4.legal_moves
            # It asked from the whole id of the lost move, never from a bare serial 3.
            ids = follower.last_event_ids()
            assert ids[0] == "0" and ids[1:] and set(ids[1:]) == {lost.position}, ids

            play_to_the_end(api, game, lines)
            follower.join()
            log = api.moves(game.id)
    finally:
        other.stop()
    after_reset = follower.seen[4:]
    assert all(isinstance(m, Move) for m in after_reset)
    assert [(m.serial, m.move) for m in after_reset] == [(m.serial, m.move) for m in log[4:]]
    assert [m.move for m in log[2:4]] == replacing
    assert after_reset[-1].finished


def test_an_open_stream_whose_log_is_cut_back_yields_a_game_reset(server_url, settings,
                                                                  redis_client):
    """The store loses move 3 under an open stream: the server notices when the stream is
    idle and sends the log's state (serial 2), a GameReset; the move that then takes serial
    3 follows it, and not skipped as a serial handed out already."""
    lines = all_lines(2, 2)
    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        for serial, line in enumerate(lines[:3], start=1):
            api.play(game.id, line, serial=serial, token=game.token)
        follower = Follower(server_url, game.id, after=0)
        follower.wait_for(lambda seen: len(seen) == 3, "moves 1 to 3")
        head = lose_moves(redis_client, settings.key_prefix, game.id, keep=2)
        follower.wait_for(resets, "a GameReset")
        [reset] = resets(follower.seen)
        assert (reset.serial, reset.position, reset.to_move) == (2, f"2.{head}", 0)
        assert reset.game == api.state(game.id)
        api.play(game.id, lines[7], serial=3, token=game.token)
        follower.wait_for(lambda seen: len(seen) == 5, "the move that took serial 3")
        third = follower.seen[4]
        assert (third.serial, third.move) == (3, lines[7])
        play_to_the_end(api, game, lines)
        follower.join()
        log = api.moves(game.id)
    assert [(m.serial, m.move) for m in follower.seen[4:]] == [(m.serial, m.move)
                                                                for m in log[2:]]


def test_a_stream_started_from_a_position_the_log_lost_starts_with_a_game_reset(
        server_url, settings, redis_client):
    """``events(after=position)`` (a Move's or a Game's): checked by the server; a bare
    serial (``after=3``) is trusted, as before heads; a position that is no position is
    refused before anything is sent."""
    lines = all_lines(2, 2)
    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        assert game.position == "0"
        for serial, line in enumerate(lines[:3], start=1):
            api.play(game.id, line, serial=serial, token=game.token)
        at_3 = api.state(game.id)
        moves = api.events(game.id, after=at_3.position)
        played = api.play(game.id, lines[3], serial=4, token=game.token)
        fourth = next(moves)
        moves.close()
        assert isinstance(fourth, Move) and fourth.serial == 4 and fourth.move == played.move
        assert fourth.position == api.state(game.id).position != at_3.position

        lose_moves(redis_client, settings.key_prefix, game.id, keep=2)
        api.play(game.id, lines[8], serial=3, token=game.token)
        now = api.state(game.id)
        for stale in (at_3.position, fourth.position):
            moves = api.events(game.id, after=stale)
            first = next(moves)
            moves.close()
            assert isinstance(first, GameReset) and first.game == now, stale
            assert first.position == now.position != at_3.position

        trusted = api.events(game.id, after=2)
        assert next(trusted).move == lines[8]
        trusted.close()
        with pytest.raises(ValueError):
            next(api.events(game.id, after="three"))


def test_the_async_client_yields_a_game_reset_and_resumes_from_its_position(
        server_url, settings, redis_client):
    lines = all_lines(2, 2)

    async def scenario():
        async with AsyncClient(server_url) as api:
            game = await api.create_game(width=2, height=2)
            for serial, line in enumerate(lines[:3], start=1):
                await api.play(game.id, line, serial=serial, token=game.token)
            moves = api.events(game.id, after=1)
            seen = [await anext(moves), await anext(moves)]
            head = lose_moves(redis_client, settings.key_prefix, game.id, keep=2)
            seen.append(await asyncio.wait_for(anext(moves), WAIT_S))
            await api.play(game.id, lines[9], serial=3, token=game.token)
            seen.append(await asyncio.wait_for(anext(moves), WAIT_S))
            await moves.aclose()
            return seen, head

    seen, head = asyncio.run(scenario())
    assert [type(item) for item in seen] == [Move, Move, GameReset, Move]
    assert [item.serial for item in seen] == [2, 3, 2, 3]
    assert seen[2].position == f"2.{head}" and seen[2].to_move == 0
    assert seen[3].move == lines[9]
