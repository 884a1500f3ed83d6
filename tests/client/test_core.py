"""The sans-IO steps of boxfish.client (``boxfish.client._core``), driven by hand with
answers a live server does not give on demand: an event stream that repeats a serial and
then skips one, and Retry-After answers within and beyond ``max_delay``."""

from __future__ import annotations

import json

import httpx
import pytest
from httpx_sse import ServerSentEvent

from boxfish.client import Busy, Client, GameReset, Move
from boxfish.client._core import Call, Close, Emit, Next, Open, Sleep, Steps, Stream


def _move_event(serial: int, finished: bool = False) -> ServerSentEvent:
    data = {"serial": serial, "move": [serial, 1, 0], "player": 0, "completed": 0,
            "scores": [0, 0], "to_move": None if finished else 1,
            "status": "finished" if finished else "in_progress"}
    return ServerSentEvent(event="move", data=json.dumps(data), id=str(serial))


def _stream() -> Stream:
    return Stream(httpx.Response(200, headers={"content-type": "text/event-stream"}),
                  events=None, exit=None)


def test_a_stream_that_skips_a_serial_is_reopened_after_the_last_move_handed_out(caplog):
    caplog.set_level("INFO", logger="boxfish.client")
    with Client("http://127.0.0.1:9", retries=0) as api:
        steps = Steps(api._follow("g1", 0, 5.0))
        emitted: list[Move] = []

        def expect(kind):
            effect = steps.next()
            assert isinstance(effect, kind), effect
            if isinstance(effect, Emit):
                emitted.append(effect.event)
            return effect

        assert expect(Open).headers == {"Last-Event-ID": "0"}
        first = _stream()
        steps.reply(first)
        assert expect(Next).stream is first
        steps.reply(ServerSentEvent(event="notice", data="{}"))  # an unknown kind: passed over
        expect(Next)
        steps.reply(_move_event(1))
        expect(Emit)
        expect(Next)
        steps.reply(_move_event(1))  # a serial handed out already: passed over
        expect(Next)
        steps.reply(_move_event(3))  # serial 2 skipped
        assert expect(Close).stream is first
        # A move was handed out since the last reconnection: reopen at once, after serial 1.
        assert expect(Open).headers == {"Last-Event-ID": "1"}
        second = _stream()
        steps.reply(second)
        for serial in (2, 3):
            expect(Next)
            steps.reply(_move_event(serial))
            expect(Emit)
        expect(Next)
        steps.reply(_move_event(4, finished=True))
        assert expect(Close).stream is second  # closed before the game's last move is emitted
        expect(Emit)
        assert steps.next() is None and steps.release() == []
    assert [m.serial for m in emitted] == [1, 2, 3, 4] and emitted[-1].finished
    assert any("skipped from serial 1 to 3" in r.getMessage() for r in caplog.records)


def test_retry_after_is_waited_for_up_to_max_delay():
    with Client("http://127.0.0.1:9", retries=3, max_delay=30.0) as api:
        steps = Steps(api._state("g1"))
        call = steps.next()
        assert isinstance(call, Call) and (call.method, call.path) == ("GET", "/v1/games/g1")
        steps.reply(httpx.Response(503, headers={"Retry-After": "2"}, json={
            "type": "urn:boxfish:problem:unavailable", "title": "Busy", "status": 503}))
        assert steps.next() == Sleep(2.0)
        assert steps.next() == call  # the same request again
        steps.reply(httpx.Response(503, headers={"Retry-After": "31"}))
        with pytest.raises(Busy) as busy:
            steps.next()  # asked to wait longer than max_delay: raised at once
        assert busy.value.retry_after == 31


def test_every_attempt_of_a_move_carries_one_idempotency_key():
    with Client("http://127.0.0.1:9", token="t0k", backoff=0.01) as api:
        keys = []
        for _ in range(2):  # two moves
            steps = Steps(api._play("g1", (1, 1, 1), 1, None, None))
            for _ in range(3):  # no answer twice, then the stored move
                call = steps.next()
                keys.append(call.options["headers"]["Idempotency-Key"])
                assert call.options["headers"]["Authorization"] == "Bearer t0k"
                assert call.options["json"] == {"move": [1, 1, 1], "serial": 1}
                steps.fail(httpx.ReadError("lost"))
                assert isinstance(steps.next(), Sleep)
            call = steps.next()
            keys.append(call.options["headers"]["Idempotency-Key"])
            steps.reply(httpx.Response(201, headers={"Idempotent-Replayed": "true"}, json={
                "serial": 1, "move": [1, 1, 1], "player": 0, "completed": 0}))
            assert steps.next() is None and steps.result.replayed
    assert len(set(keys[:4])) == 1 and len(set(keys[4:])) == 1 and keys[0] != keys[4]


def test_event_ids_with_a_head_are_read_by_their_serial():
    """Event ids are ``<serial>.<head>`` (a bare serial at 0 and from older servers)."""
    from boxfish.client._core import EventSerials

    serials = EventSerials(2)
    assert serials.classify("move", "3.5f0c2a9e41b7d803") == EventSerials.NEXT
    assert serials.classify("move", "2.5f0c2a9e41b7d803") == EventSerials.SEEN
    assert serials.classify("move", "4.5f0c2a9e41b7d803") == EventSerials.GAP
    assert serials.classify("move", "3") == EventSerials.NEXT
    assert serials.classify("notice", "0") == EventSerials.OTHER
    # A game event is the log's state on a stream that held a history the log lost.
    assert serials.classify("game", "0") == EventSerials.RESET


def test_the_stream_resumes_from_the_position_last_handed_out_and_a_game_event_resets_it():
    """``Last-Event-ID`` is the whole id of the last item handed out (``after`` before any);
    a ``game`` event is handed out as a GameReset and the stream resumes from its position."""
    head_a, head_b = "5f0c2a9e41b7d803", "0123456789abcdef"
    with Client("http://127.0.0.1:9", retries=1, backoff=0.01) as api:
        steps = Steps(api._follow("g1", f"2.{head_a}", 5.0))
        opened = steps.next()
        assert isinstance(opened, Open) and opened.headers == {"Last-Event-ID": f"2.{head_a}"}
        stream = _stream()
        steps.reply(stream)
        assert isinstance(steps.next(), Next)
        steps.reply(ServerSentEvent(event="move", id=f"3.{head_a}",
                                    data=_move_event(3).data))
        emitted = steps.next()
        assert isinstance(emitted, Emit) and emitted.event.position == f"3.{head_a}"
        assert isinstance(steps.next(), Next)
        state = {"id": "g1", "game": "dots-and-boxes", "serial": 2, "to_move": 1,
                 "status": "in_progress", "scores": [0, 0], "legal_moves": [[1, 1, 1]]}
        steps.reply(ServerSentEvent(event="game", id=f"2.{head_b}", data=json.dumps(state)))
        reset = steps.next()
        assert isinstance(reset, Emit) and isinstance(reset.event, GameReset)
        assert (reset.event.serial, reset.event.to_move, reset.event.position,
                reset.event.finished) == (2, 1, f"2.{head_b}", False)
        assert reset.event.game.legal_moves == [[1, 1, 1]]
        assert isinstance(steps.next(), Next)
        steps.reply(None)  # the stream drops
        assert isinstance(steps.next(), Close)
        # Something was handed out: reopened at once, from the reset's position.
        reopened = steps.next()
        assert isinstance(reopened, Open) and reopened.headers == {"Last-Event-ID":
                                                                   f"2.{head_b}"}
        steps.release()
