"""boxfish.client's first contact: pointed at a port where nothing listens, a client that has
never had an answer from its server tries a request (or an event stream) at most twice,
raises ConnectionFailed and prints nothing; once it has had an answer, a server that goes
away gets every retry as before. No clock is read: the attempts are counted by the
transport and the waits by a stand-in for the sleep function."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time

import httpx
import pytest

from boxfish.client import AsyncClient, Client, ConnectionFailed, NotFound

GAME = {"id": "g1", "game": "dots-and-boxes", "serial": 0, "to_move": 0,
        "status": "in_progress"}


@pytest.fixture
def closed_url():
    """The URL of a loopback port bound by this test and not listening: every connection
    to it is refused (and no other process can take the port meanwhile)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


class Counting(httpx.HTTPTransport):
    """Sends every request for real, counting them; with ``first``, the first request gets
    that answer without being sent (a server that answered once, then went away)."""

    def __init__(self, first: httpx.Response | None = None) -> None:
        super().__init__()
        self.attempts = 0
        self.first = first

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        if self.first is not None:
            answer, self.first = self.first, None
            return answer
        return super().handle_request(request)


class AsyncCounting(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        return await super().handle_async_request(request)


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """The seconds the client asks ``time.sleep`` for, which returns at once."""
    asked: list[float] = []
    monkeypatch.setattr(time, "sleep", asked.append)
    return asked


def _quiet(caplog, capfd) -> None:
    """Nothing reached stderr, and no record of boxfish.client is a WARNING or above (what
    Python prints when the program configures no logging)."""
    assert capfd.readouterr().err == ""
    client_records = [r for r in caplog.records if r.name.startswith("boxfish.client")]
    assert all(r.levelno < logging.WARNING for r in client_records), client_records


@pytest.mark.parametrize("call", ["state", "create_game", "events"])
def test_a_wrong_url_fails_after_two_attempts_and_one_short_wait(closed_url, sleeps, caplog,
                                                                 capfd, call):
    caplog.set_level(logging.DEBUG, logger="boxfish.client")
    transport = Counting()
    with Client(closed_url, transport=transport) as api:
        with pytest.raises(ConnectionFailed) as failed:
            if call == "state":
                api.state("g1")
            elif call == "create_game":
                api.create_game(width=2, height=2)
            else:
                next(api.events("g1"))
    assert transport.attempts == 2
    assert len(sleeps) == 1 and 0 < sleeps[0] <= api.backoff  # 0.25 s with the defaults
    assert failed.value.status is None
    assert isinstance(failed.value.__cause__, httpx.ConnectError)
    assert [r.levelno for r in caplog.records if r.name == "boxfish.client"] == [logging.INFO]
    _quiet(caplog, capfd)


def test_first_contact_retries_is_a_setting_bounded_by_retries(closed_url, sleeps):
    for kwargs, attempts in (({"first_contact_retries": 3}, 4),
                             ({"first_contact_retries": 0}, 1),
                             ({"retries": 0}, 1)):
        transport = Counting()
        with Client(closed_url, transport=transport, **kwargs) as api:
            with pytest.raises(ConnectionFailed):
                api.state("g1")
        assert transport.attempts == attempts, kwargs
    assert len(sleeps) == 3


def test_the_async_client_fails_as_fast(closed_url, monkeypatch, caplog, capfd):
    asked: list[float] = []

    async def sleep(seconds):
        asked.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    transport = AsyncCounting()

    async def first_calls():
        async with AsyncClient(closed_url, transport=transport) as api:
            with pytest.raises(ConnectionFailed):
                await api.state("g1")
            with pytest.raises(ConnectionFailed):
                await anext(api.events("g1"))

    asyncio.run(first_calls())
    assert transport.attempts == 4  # two per call
    assert len(asked) == 2 and all(0 < s <= 0.25 for s in asked)
    _quiet(caplog, capfd)


@pytest.mark.parametrize("first", [httpx.Response(200, json=GAME), httpx.Response(404, json={
    "type": "urn:boxfish:problem:not-found", "title": "Not found", "status": 404})],
    ids=["ok", "error answer"])
def test_after_an_answer_a_server_that_goes_away_gets_every_retry(closed_url, sleeps, caplog,
                                                                 first):
    """Any answer, an error too, is a contact: the next requests are retried ``retries``
    times with the exponential backoff (a live bot rides out a restart)."""
    caplog.set_level(logging.INFO, logger="boxfish.client")
    transport = Counting(first=first)
    with Client(closed_url, transport=transport) as api:
        if first.status_code == 200:
            assert api.state("g1").id == "g1"
        else:
            with pytest.raises(NotFound):
                api.state("g1")
        with pytest.raises(ConnectionFailed):
            api.state("g1")
        assert transport.attempts == 1 + (1 + api.retries)
        assert len(sleeps) == api.retries == 6
        for attempt, seconds in enumerate(sleeps):
            full = min(api.max_delay, api.backoff * 2 ** attempt)
            assert full / 2 <= seconds <= full, (attempt, seconds)
        with pytest.raises(ConnectionFailed):
            next(api.events("g1"))
        assert transport.attempts == 1 + 2 * (1 + api.retries)
    retrying = [r for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(retrying) == 6 and {r.levelno for r in retrying} == {logging.INFO}


def test_a_program_without_logging_prints_nothing(closed_url):
    """In a fresh interpreter that configures no logging (Python would print a WARNING on
    stderr), a wrong URL raises ConnectionFailed and leaves stderr empty."""
    script = ("import sys\n"
              "from boxfish.client import Client, ConnectionFailed\n"
              "try:\n"
              "    Client(sys.argv[1]).state('g1')\n"
              "except ConnectionFailed as exc:\n"
              "    print('ConnectionFailed:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script, closed_url], capture_output=True,
                          text=True, timeout=120)
    assert done.stderr == ""
    assert done.returncode == 0
    assert done.stdout.startswith("ConnectionFailed:") and "after 2 attempt(s)" in done.stdout
