"""What gunicorn itself answers, before the app runs, on a real server: RFC 9457 problems for
requests too large or malformed to parse, and its read timeouts (a stalled client gets its
thread taken back)."""

from __future__ import annotations

import json
import socket
import threading
import time
from urllib.parse import urlparse

import psutil
import pytest

from boxfish.service.http.gunicorn_conf import (
    limit_request_field_size,
    limit_request_fields,
    limit_request_line,
)
from boxfish.service.http.security import SECURITY_HEADERS
from boxfish.service.runtime.embedded_redis import free_port

from .conftest import descendants, start_gunicorn, stop_process
from .test_server import Http, create, next_event, open_stream


def raw_exchange(base: str, data: bytes, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """Send ``data`` on a fresh connection and read the answer to the end (the server closes
    after these errors): ``(status, headers with lower-case names, body)``."""
    u = urlparse(base)
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_response(sock)


def read_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a full response head: {raw!r}")
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body[:length] if length >= 0 else body


def assert_problem(status: int, headers: dict, body: bytes, expected: int) -> dict:
    assert status == expected, (status, headers, body[:300])
    assert headers["content-type"] == "application/problem+json", headers
    problem = json.loads(body)
    assert problem["status"] == expected
    assert problem["type"] == "about:blank"
    assert problem["title"] and problem["detail"]
    return problem


def test_the_caps_are_explicit():
    assert (limit_request_line, limit_request_fields, limit_request_field_size) == (4094, 64,
                                                                                   8190)


def test_an_overlong_path_is_a_414_problem(server_url):
    path = "/v1/games/" + "a" * 10_000
    status, headers, body = raw_exchange(
        server_url, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    problem = assert_problem(status, headers, body, 414)
    assert str(limit_request_line) in problem["detail"]
    assert headers["connection"] == "close"
    for name, value in SECURITY_HEADERS:  # as on the app's answers
        assert headers[name.lower()] == value


def test_an_overlong_header_is_a_431_problem(server_url):
    gid, auth = create(server_url, width=2, height=2)
    payload = json.dumps({"move": [1, 1, 1]}).encode()
    request = (f"POST /v1/games/{gid}/moves HTTP/1.1\r\nHost: x\r\n"
               f"Authorization: {auth['Authorization']}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
               f"Idempotency-Key: {'k' * 10_000}\r\n\r\n").encode() + payload
    status, headers, body = raw_exchange(server_url, request)
    problem = assert_problem(status, headers, body, 431)
    assert str(limit_request_field_size) in problem["detail"]
    # The move was not made.
    assert Http(server_url).request("GET", f"/v1/games/{gid}")[1]["serial"] == 0


def test_too_many_header_fields_is_a_431_problem(server_url):
    fields = "".join(f"X-Filler-{i}: {i}\r\n" for i in range(limit_request_fields + 1))
    status, headers, body = raw_exchange(
        server_url, f"GET /healthz HTTP/1.1\r\nHost: x\r\n{fields}\r\n".encode())
    problem = assert_problem(status, headers, body, 431)
    assert str(limit_request_fields) in problem["detail"]


@pytest.mark.parametrize("request_line", [
    b"GARBAGE\r\n\r\n",
    b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nBad Header Name: 1\r\n\r\n",
])
def test_a_malformed_request_is_a_400_problem(server_url, request_line):
    status, headers, body = raw_exchange(server_url, request_line)
    assert_problem(status, headers, body, 400)


def test_the_server_still_serves_after_these(server_url):
    raw_exchange(server_url, b"GARBAGE\r\n\r\n")
    assert Http(server_url).request("GET", "/healthz")[0] == 200


# Read deadlines: a server with a short request timeout and few threads.

TIMEOUT = 1.0
THREADS = 3
#: How late past its deadline a stalled client may be cut off on a loaded host. A server
#: that ignored the deadline would hold it until the client gives up (CLIENT_TIMEOUT_S).
LATE_S = 9.0
CLIENT_TIMEOUT_S = 3 * TIMEOUT + 2 * LATE_S


class Gunicorn:
    """A gunicorn of the tests (:func:`start_gunicorn`): its URL, port and process."""

    def __init__(self, proc, port: int) -> None:
        self.proc, self.port, self.url = proc, port, f"http://127.0.0.1:{port}"

    def holds(self, socks: list[socket.socket]) -> bool:
        """Whether the server has accepted the connections of every one of ``socks`` (in
        gthread an accepted connection is handed to the thread pool at once, in order)."""
        ours = {s.getsockname()[1] for s in socks}
        held = set()
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                conns = psutil.Process(pid).net_connections("tcp")
            except psutil.NoSuchProcess:
                continue
            held |= {c.raddr.port for c in conns if c.raddr and c.laddr.port == self.port}
        return ours <= held


@pytest.fixture(scope="module")
def slow(settings, tmp_path_factory):
    """A gunicorn with ``request_timeout_s`` = TIMEOUT and THREADS threads, on a queue no
    worker serves (so ``?wait=`` waits its full time)."""
    own = settings.model_copy(update={"request_timeout_s": TIMEOUT,
                                      "queue_name": settings.queue_name + "-idle"})
    port = free_port()
    proc = start_gunicorn(own, port, tmp_path_factory.mktemp("slow") / "api.log",
                          threads=THREADS)
    yield Gunicorn(proc, port)
    stop_process(proc)


@pytest.fixture(scope="module")
def slow_server(slow) -> str:
    return slow.url


def connect(base: str, timeout: float = CLIENT_TIMEOUT_S) -> socket.socket:
    u = urlparse(base)
    return socket.create_connection((u.hostname, u.port), timeout=timeout)


def half_body(base: str) -> socket.socket:
    """A client that sends the headers of a 1000-byte body, then 500 bytes, then stops."""
    sock = connect(base)
    sock.sendall(b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n" + b"{" + b" " * 499)
    return sock


def half_head(base: str) -> socket.socket:
    """A client that sends part of the headers, then stops."""
    sock = connect(base)
    sock.sendall(b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-")
    return sock


def wait_until(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def assert_timed_out(sock: socket.socket, started: float, after: float = TIMEOUT) -> None:
    """The server answers 408 problem+json and closes, no sooner than ``after`` seconds from
    ``started`` (the deadline counts from the first byte the server reads, once a thread
    takes the connection) and no later than LATE_S past that."""
    status, headers, body = read_response(sock)
    elapsed = time.monotonic() - started
    assert_problem(status, headers, body, 408)
    assert headers["connection"] == "close"
    assert sock.recv(1) == b""  # closed
    assert after <= elapsed < after + LATE_S, elapsed
    sock.close()


def test_a_stalled_body_is_a_408_problem(slow_server):
    started = time.monotonic()
    assert_timed_out(half_body(slow_server), started)


def test_stalled_headers_are_a_408_problem(slow_server):
    started = time.monotonic()
    assert_timed_out(half_head(slow_server), started)


def test_a_trickling_client_is_cut_off_at_the_deadline(slow_server):
    """One byte every 0.2 s never lets a single read time out; the request's deadline still
    ends it."""
    sock = connect(slow_server)
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    stop = threading.Event()

    def trickle():
        for byte in request:
            if stop.wait(0.2):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    sender = threading.Thread(target=trickle)
    started = time.monotonic()
    sender.start()
    try:
        status, headers, body = read_response(sock)
        elapsed = time.monotonic() - started
        assert_problem(status, headers, body, 408)
        assert TIMEOUT <= elapsed < TIMEOUT + LATE_S, elapsed
    finally:
        stop.set()
        sender.join()
        sock.close()


def test_stalled_clients_do_not_keep_the_threads(slow):
    """As many stalled clients as the server has threads, and as many more stalled in their
    headers behind them: each gets its 408 (the second ones once the first have freed the
    threads), and then the server answers others."""
    started = time.monotonic()
    stalled = [half_body(slow.url) for _ in range(THREADS)]
    wait_until(lambda: slow.holds(stalled), "the server did not accept the stalled clients")
    # Every thread is theirs now: these wait for one, and a request after them waits longer.
    stalled += [half_head(slow.url) for _ in range(THREADS)]
    wait_until(lambda: slow.holds(stalled), "the server did not accept the stalled clients")
    client = Http(slow.url, timeout=CLIENT_TIMEOUT_S)
    assert client.request("GET", "/healthz")[0] == 200
    assert 2 * TIMEOUT <= time.monotonic() - started < 2 * TIMEOUT + LATE_S
    status, game, _ = client.request("POST", "/v1/games", {"game": "dots-and-boxes",
                                                          "width": 2, "height": 2})
    assert status == 201
    for sock in stalled[:THREADS]:
        assert_timed_out(sock, started)
    for sock in stalled[THREADS:]:  # they waited for a thread first
        assert_timed_out(sock, started, after=2 * TIMEOUT)
    # All threads are free: as many requests at once as threads, all answered.
    clients = [Http(slow.url, timeout=CLIENT_TIMEOUT_S) for _ in range(THREADS)]
    results = []
    threads = [threading.Thread(target=lambda c=c: results.append(
        c.request("GET", f"/v1/games/{game['id']}")[0])) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * THREADS


# A client slow by a fraction of the deadline, and idle between requests for longer than it:
# a server of its own with a longer deadline (the pause cannot outgrow it on a loaded host)
# and a keep-alive longer still (gunicorn's default, 2 s, would close the idle connection).

TIMELY_TIMEOUT = 3.0
KEEP_ALIVE_S = 30


@pytest.fixture(scope="module")
def timely_server(settings, tmp_path_factory):
    own = settings.model_copy(update={"request_timeout_s": TIMELY_TIMEOUT})
    port = free_port()
    proc = start_gunicorn(own, port, tmp_path_factory.mktemp("timely") / "api.log",
                          threads=THREADS, extra_args=["--keep-alive", str(KEEP_ALIVE_S)])
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


def test_slow_but_timely_clients_are_served(timely_server):
    gid, auth = create(timely_server, width=2, height=2)
    payload = json.dumps({"move": [1, 1, 1]}).encode()
    sock = connect(timely_server)
    sock.sendall(f"POST /v1/games/{gid}/moves HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: {auth['Authorization']}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload[:5])
    time.sleep(TIMELY_TIMEOUT * 0.1)
    sock.sendall(payload[5:])
    status, headers, body = read_response(sock)
    assert status == 201, body
    # The deadline counts from a request's first byte: a kept-alive connection may sit idle
    # longer than the timeout between requests.
    time.sleep(TIMELY_TIMEOUT * 1.2)
    sock.sendall(f"GET /v1/games/{gid} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    status, headers, body = read_response(sock)
    assert status == 200 and json.loads(body)["serial"] == 1
    sock.close()


def test_event_streams_and_waits_outlive_the_timeout(slow_server):
    gid, auth = create(slow_server, width=2, height=2)
    conn, resp = open_stream(slow_server, gid)
    assert next_event(resp)[0] == "game"
    time.sleep(TIMEOUT * 2)  # keep-alive comments flow meanwhile
    client = Http(slow_server)
    assert client.request("POST", f"/v1/games/{gid}/moves", {"move": [1, 1, 1]}, auth)[0] == 201
    assert next_event(resp)[0] == "move"
    conn.close()
    started = time.monotonic()
    status, job, _ = client.request("POST", "/v1/analyses?wait=2",
                                    {"game": "dots-and-boxes", "width": 2, "height": 2})
    assert status == 202 and job["status"] == "queued"
    assert time.monotonic() - started >= 2
