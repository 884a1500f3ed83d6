"""The gunicorn worker class of the API: gunicorn's gthread worker with two changes.

* **Every error is RFC 9457.** What gunicorn answers itself, before the app runs (a request
  line longer than ``limit_request_line``: 414; a header field longer than
  ``limit_request_field_size`` or more than ``limit_request_fields`` of them: 431; a malformed
  request line, method, version or header: 400; ...) is ``application/problem+json`` with
  ``type`` ``about:blank``, like the app's plain HTTP errors, with the app's security headers
  (:data:`service.http.security.SECURITY_HEADERS`). gunicorn still decides the status and logs the
  error; only the answer's form changes.
* **Read deadlines.** A request's line, headers and body must arrive within
  ``BOXFISH_REQUEST_TIMEOUT_S`` of its first byte, and no write of a response may stall longer
  than that. A client that stalls (or trickles) while sending the headers gets a 408 problem
  from the worker; one that stalls in the body gets it from the app (the body read raises
  :class:`RequestBodyTimeout`, a 408 HTTP exception); either way the connection is closed and
  the thread is free again. Time spent in the app itself (an event stream, ``?wait=``) is not
  limited by this.

Use it through :mod:`boxfish.service.http.gunicorn_conf`. TLS terminated by gunicorn itself is left
to gunicorn's own handling (no read deadline there): terminate TLS in front of it.
"""

from __future__ import annotations

import json
import socket
import time

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.workers.gthread import ThreadWorker
from werkzeug.exceptions import RequestTimeout

from ..config import Settings
from .problems import PROBLEM_JSON, Problem
from .security import SECURITY_HEADERS

# What a connection's socket is doing, for the exception a read timeout becomes.
_IDLE, _HEAD, _APP, _AFTER = range(4)


#: What the lingering close after an answer reads and drops at most (within its 2 s): a
#: client still uploading a body we refused (413) must finish sending and read the answer;
#: closing over its unread bytes sends a reset that discards the answer. gunicorn's own cap
#: (64 KiB) is less than a refused body.
LINGER_MAX_DRAIN = 4 << 20


class RequestHeadTimeout(Exception):
    """The request line and headers did not all arrive in time (answered 408 by the
    worker)."""


class RequestBodyTimeout(RequestTimeout):
    """The request body did not all arrive in time. Raised into the app by the body read: an
    HTTP exception (408, a problem like any other), and not an ``OSError``, which Werkzeug's
    stream would take for a client that went away."""


class DeadlineSocket:
    """A client socket whose reads end at the request's deadline.

    gunicorn makes a socket blocking (``setblocking(True)``) whenever a thread takes a
    connection; here that means "blocking with a timeout of ``timeout_s``", so no read or
    write waits longer than that. While a request is read (:meth:`arm`), its deadline starts at
    the first read and each read waits at most until it; a read timing out raises
    :class:`RequestHeadTimeout` while the head is read, :class:`RequestBodyTimeout` while the
    app runs and ``TimeoutError`` otherwise (gunicorn's own reads: draining an unread body,
    closing). Everything else is the socket's."""

    __slots__ = ("sock", "timeout_s", "deadline", "phase", "request", "closed", "timed_out")

    def __init__(self, sock, timeout_s: float) -> None:
        self.sock = sock
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self.phase = _IDLE
        self.request = None
        self.closed = False
        self.timed_out = False

    def __getattr__(self, name):
        return getattr(self.sock, name)

    def setblocking(self, flag: bool) -> None:
        if self.closed:
            return
        if flag:
            self.sock.settimeout(self.timeout_s)
        else:
            self.sock.setblocking(False)

    def settimeout(self, value) -> None:
        if not self.closed:
            self.sock.settimeout(value)

    def shutdown(self, how) -> None:
        if self.closed:
            raise OSError("already closed")
        self.sock.shutdown(how)

    def close(self) -> None:
        self.closed = True
        self.sock.close()

    def close_gracefully(self) -> None:
        """gunicorn's lingering close (half-close, then read until the peer closes, at most
        2 s and :data:`LINGER_MAX_DRAIN` bytes), here in the thread that served the
        connection: gunicorn 27 runs it on the worker's main loop, which a client that never
        closes its end would stall for every connection. After a timeout there is nothing to
        wait for: the client stalled, so the socket closes at once. Afterwards gunicorn's own
        close of the connection does nothing."""
        if self.closed:
            return
        self.disarm()
        if self.timed_out:
            try:
                self.sock.shutdown(socket.SHUT_WR)
                self.sock.setblocking(False)
                for _ in range(16):  # what already arrived, lest closing over it send a reset
                    if not self.sock.recv(65536):
                        break
            except OSError:
                pass
            self.sock.close()
        else:
            util.close_graceful(self.sock, max_drain=LINGER_MAX_DRAIN)
        self.closed = True

    def arm(self) -> None:
        """A thread starts on this connection's next request."""
        self.deadline, self.phase, self.request = None, _HEAD, None

    def disarm(self) -> None:
        self.deadline, self.phase, self.request = None, _IDLE, None

    def recv(self, *args):
        return self._read(self.sock.recv, args)

    def recv_into(self, *args):
        return self._read(self.sock.recv_into, args)

    def _read(self, method, args):
        if self.phase == _IDLE:
            return method(*args)
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.timeout_s
        remaining = self.deadline - now
        if remaining <= 0:
            raise self._timed_out()
        prior = self.sock.gettimeout()
        bounded = prior is None or prior > remaining
        if bounded:
            self.sock.settimeout(remaining)
        try:
            return method(*args)
        except TimeoutError:
            raise self._timed_out() from None
        finally:
            if bounded:
                self.sock.settimeout(prior)

    def _timed_out(self) -> Exception:
        self.timed_out = True
        if self.phase == _HEAD:
            return RequestHeadTimeout(f"the request line and headers did not arrive within "
                                      f"{self.timeout_s:g} s")
        if self.phase == _APP:
            if self.request is not None:
                self.request.must_close = True  # answer with "Connection: close"
            return RequestBodyTimeout(f"the request body did not arrive within "
                                      f"{self.timeout_s:g} s")
        return TimeoutError("timed out")


class _Capture:
    """Stands in for the client socket while gunicorn's ``handle_error`` writes its HTML
    answer: keeps the bytes (their status line is all we use)."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self):
        return 0.0

    def setblocking(self, flag) -> None:
        pass

    def sendall(self, data) -> None:
        self.data += bytes(data)

    def status(self) -> tuple[int, str] | None:
        line = self.data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            return None
        return int(parts[1]), parts[2] if len(parts) > 2 else ""


def problem_bytes(problem: Problem, reason: str) -> bytes:
    """A complete HTTP/1.1 response carrying ``problem``; the connection closes after it."""
    body = json.dumps(problem.to_dict()).encode()
    head = (f"HTTP/1.1 {problem.status} {reason}\r\n"
            "Connection: close\r\n"
            f"Content-Type: {PROBLEM_JSON}\r\n"
            + "".join(f"{name}: {value}\r\n" for name, value in SECURITY_HEADERS)
            + f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def error_problem(status: int, reason: str, exc: BaseException, cfg) -> Problem:
    """The problem for an error gunicorn answers itself with ``status``."""
    if status >= 500 and not isinstance(exc, http_errors.ParseException):
        return Problem(status, "internal-error", "Internal server error",
                       "an unexpected error occurred; it has been logged")
    text = str(exc)[:200]
    if isinstance(exc, http_errors.LimitRequestLine):
        detail = (f"the request line (method, target and query, version) is longer than "
                  f"{cfg.limit_request_line} bytes")
    elif isinstance(exc, http_errors.LimitRequestHeaders):
        if "size" in text:
            detail = f"a header field is longer than {cfg.limit_request_field_size} bytes"
        elif "fields" in text:
            detail = f"the request has more than {cfg.limit_request_fields} header fields"
        else:
            detail = (f"the request's headers are too large: at most "
                      f"{cfg.limit_request_fields} fields of at most "
                      f"{cfg.limit_request_field_size} bytes each")
    elif status == 400:
        detail = f"the request could not be parsed: {text}"
    else:
        detail = text or reason
    return Problem(status, "", reason or "Error", detail)


class BoxfishWorker(ThreadWorker):
    """gthread with problem+json errors and read deadlines (see the module's docstring)."""

    def init_process(self):
        self.request_timeout_s = Settings().request_timeout_s
        super().init_process()

    def enqueue_req(self, conn):
        if not isinstance(conn.sock, DeadlineSocket) and not self.cfg.is_ssl:
            conn.sock = DeadlineSocket(conn.sock, self.request_timeout_s)
        super().enqueue_req(conn)

    def handle(self, conn):
        sock = conn.sock if isinstance(conn.sock, DeadlineSocket) else None
        if sock is not None:
            sock.arm()
        try:
            result = super().handle(conn)
        finally:
            if sock is not None:
                sock.disarm()
        if not result and sock is not None:  # the connection is done: close it from here
            sock.close_gracefully()
        return result

    def handle_request(self, req, conn):
        sock = conn.sock if isinstance(conn.sock, DeadlineSocket) else None
        if sock is not None:
            sock.phase, sock.request = _APP, req
        try:
            return super().handle_request(req, conn)
        finally:
            if sock is not None:
                sock.phase, sock.request = _AFTER, None

    def handle_error(self, req, client, addr, exc):
        if isinstance(exc, RequestHeadTimeout):
            self.log.info("Request timed out from ip=%s: %s", (addr or ("",))[0], exc)
            problem, reason = Problem(408, "", "Request Timeout", str(exc)), "Request Timeout"
        else:
            capture = _Capture()
            super().handle_error(req, capture, addr, exc)  # gunicorn's status and logging
            answer = capture.status()
            if answer is None:
                return
            status, reason = answer
            problem = error_problem(status, reason, exc, self.cfg)
        try:
            util.write_nonblock(client, problem_bytes(problem, reason))
        except Exception:  # the client may be gone; nothing to answer then
            self.log.debug("Failed to send error message.")
