"""The decisions of the Boxfish client, written once and free of I/O (sans-IO).

Each operation of :class:`Core` (``_send``, ``_play``, ``_follow``, ...) is a generator of
*steps*: it yields the I/O it needs as an effect (:class:`Call`, :class:`Sleep`,
:class:`Open`, :class:`Next`, :class:`Read`, :class:`Close`, and :class:`Emit` for a move, or
a :class:`~boxfish.client.GameReset`, of an event stream), is sent back the outcome (an
answered ``httpx.Response``, the next server-sent event, ...) or has the
``httpx.TransportError`` thrown in, and returns its result. Which request to send, how to
read its answer, when and how long to wait before a retry, the Idempotency-Key of a move and
the continuity of an event stream are decided here only. :class:`~boxfish.client.Client`
(``httpx.Client``, ``time.sleep``) and
:class:`~boxfish.client.AsyncClient` (``httpx.AsyncClient``, ``asyncio.sleep``) only perform
the effects, through :class:`Steps`, so both behave alike.

Retries: a request that got no answer (connection refused, dropped, timed out) or an answer
429, 500, 502, 503 or 504 is sent again, up to ``retries`` times, after an exponential backoff
with jitter (``backoff`` * 2^attempt seconds, at most ``max_delay``, times a random 0.5 to 1),
or after the ``Retry-After`` the server named; a ``Retry-After`` longer than ``max_delay`` is
not waited for: the error is raised at once.

First contact: until the client has had an answer (any answer, an error too) from the
server, a request that could not connect at all (``httpx.ConnectError``, ``ConnectTimeout``,
``PoolTimeout``: a wrong URL, a server not up) is retried at most ``first_contact_retries``
times (default 1), so that a wrong URL fails fast with ConnectionFailed: one backoff (at most
``backoff`` seconds) plus each attempt's connecting (refused at once, or up to ``timeout``).
Once an answer has come, a server that goes away is retried ``retries`` times as above (a
live bot rides out a restart). Every retry and reconnection is logged on the
``boxfish.client`` logger at INFO, never above: a program that configures no logging sees
nothing on stderr.

``play`` sends one ``Idempotency-Key`` for all the attempts of a move, so a move whose answer
was lost is stored once (the retry gets the stored move back, ``replayed``);
``import_record`` sends one for all its attempts too (the server derives the new game from
it), so it makes one game. ``create_game`` is not idempotent: it is retried only when the
request surely did not create a game (no connection, 429, 503).

Event streams: every event id is a log position, ``<serial>.<head>`` (the head a hash of the
whole history up to the serial). A stream is reopened with ``Last-Event-ID`` = the id of the
last event handed out (the position ``events`` was started from before any), head included,
so the server checks that the history handed out is still the log's: when a failover lost
moves of it, the server answers with a ``game`` event (the log's state), which is handed out
as a :class:`~boxfish.client.GameReset`, and the stream goes on from that state. An open
stream's ``game`` event (the server noticed the log rewritten under it) is handed out alike.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from .errors import (
    AnalysisFailed,
    BoxfishError,
    Busy,
    ConnectionFailed,
    ReviewFailed,
    error_from_response,
    retry_after_seconds,
)
from .types import Analysis, Game, GameReset, Move, Review, Webhook, etag_position

log = logging.getLogger("boxfish.client")

#: Answers worth another attempt (the request may succeed later).
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
#: Answers that say the request changed nothing (safe to resend a request that is not
#: idempotent).
REFUSED_STATUS = frozenset({429, 503})
#: Transport errors raised before the request left (safe to resend anything).
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_DONE = ("finished", "failed")

T = TypeVar("T")


# -- effects: the I/O an operation asks its driver for ---------------------------------------

@dataclass(frozen=True)
class Call:
    """Send ``method path`` with the ``httpx`` request ``options`` (``params``, ``json``,
    ``headers``, ``timeout``); the reply is the answer, its body read."""

    method: str
    path: str
    options: dict


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds``; the reply is None."""

    seconds: float


@dataclass(frozen=True)
class Open:
    """Open a Server-Sent Events stream, ``GET path`` with ``headers`` and ``timeout``; the
    reply is a :class:`Stream` (whatever its status)."""

    path: str
    headers: dict
    timeout: httpx.Timeout


@dataclass(frozen=True, eq=False)
class Stream:
    """An open event stream: its ``response`` (status and headers; the body only after a
    :class:`Read`) for the operation; ``events`` (the driver's iterator of server-sent
    events) and ``exit`` (the driver's exit stack, which closes it) for the driver."""

    response: httpx.Response
    events: Any
    exit: Any


@dataclass(frozen=True)
class OnStream:
    """An effect on an open ``stream``."""

    stream: Stream


class Next(OnStream):
    """The next server-sent event of ``stream``; the reply is None at its end."""


class Read(OnStream):
    """Read the whole body of ``stream``'s response (an error answer); the reply is unused."""


class Close(OnStream):
    """Close ``stream``; the reply is unused."""


@dataclass(frozen=True)
class Emit:
    """Hand ``event`` (a :class:`Move`, or a :class:`GameReset`) to the consumer of the event
    stream; the reply is None."""

    event: Move | GameReset


Effect = Call | Sleep | Open | Next | Read | Close | Emit
Operation = Generator[Effect, Any, T]


class Steps:
    """Runs one operation for a driver: ``next()`` gives its next effect (None once it has
    returned, its value then in ``result``); the driver performs it and hands back the
    outcome with ``reply(value)``, or ``fail(error)`` for an ``httpx.TransportError``, which
    is raised inside the operation. It keeps the streams the operation has open, so that a
    driver whose consumer stops early closes them (``release()``)."""

    def __init__(self, operation: Operation) -> None:
        self._operation = operation
        self._reply: Any = None
        self._error: BaseException | None = None
        self._streams: list[Stream] = []
        self.result: Any = None

    def next(self) -> Effect | None:
        reply, error, self._reply, self._error = self._reply, self._error, None, None
        try:
            effect = (self._operation.throw(error) if error is not None
                      else self._operation.send(reply))
        except StopIteration as done:
            self.result = done.value
            return None
        if isinstance(effect, Close):
            self._streams.remove(effect.stream)
        return effect

    def reply(self, value: Any) -> None:
        if isinstance(value, Stream):
            self._streams.append(value)
        self._reply = value

    def fail(self, error: BaseException) -> None:
        self._error = error

    def release(self) -> list[Stream]:
        """Stop the operation; the streams it left open, for the driver to close."""
        self._operation.close()
        streams, self._streams = self._streams, []
        return streams


# -- reading answers -------------------------------------------------------------------------

def api_path(*parts: str) -> str:
    """``/v1/`` and the parts, each percent-encoded (an id cannot reach another route)."""
    return "/v1/" + "/".join(quote(str(p), safe="") for p in parts)


def json_of(resp: httpx.Response):
    """The answer's JSON body, None when it is not JSON."""
    try:
        return resp.json()
    except ValueError:
        return None


def error_of(resp: httpx.Response) -> BoxfishError:
    """The typed error of an error answer (body read)."""
    return error_from_response(resp.status_code, json_of(resp), resp.headers)


def position_serial(position: int | str) -> int:
    """The serial of a log position: an int serial, or ``"<serial>.<head>"`` / ``"<serial>"``
    (an event id, :attr:`Game.position`). Raises ValueError on anything else."""
    if isinstance(position, bool) or not isinstance(position, (int, str)):
        raise ValueError(f"a position is a serial or '<serial>.<head>', not {position!r}")
    serial = position if isinstance(position, int) else int(position.partition(".")[0])
    if serial < 0:
        raise ValueError(f"a position's serial is at least 0, not {position!r}")
    return serial


class EventSerials:
    """The continuity of one game's event stream: ``last`` is the serial of the last event
    handed out (starting at ``after``), ``position`` its log position, the ``Last-Event-ID``
    to reopen the stream with (``str(after)`` until an event is handed out: a bare serial,
    which the server trusts, or the ``<serial>.<head>`` given as ``after``, which it checks).
    Every serial is handed out once, in order, until a reset (the log rewritten) starts the
    serials again from the new state's."""

    NEXT, SEEN, GAP, RESET, OTHER = "next", "seen", "gap", "reset", "other"

    def __init__(self, after: int | str) -> None:
        self.last = position_serial(after)
        self.position = str(after)

    def classify(self, event: str, event_id: str) -> str:
        """What a server-sent event is: RESET (a ``game`` event: the log's whole state, sent
        on a stream resumed at a position the log no longer has, or when the log was
        rewritten under an open one; hand out a :class:`GameReset`, then call :meth:`reset`),
        OTHER (neither a move nor that), SEEN (a serial handed out already: skip it), GAP
        (it would skip a serial: reopen the stream after ``last``) or NEXT (the move to hand
        out; then call :meth:`took`)."""
        if event == "game":
            return self.RESET
        if event != "move":
            return self.OTHER
        serial = position_serial(event_id)  # "<serial>.<head>", or a bare serial
        if serial <= self.last:
            return self.SEEN
        return self.NEXT if serial == self.last + 1 else self.GAP

    def took(self, move: Move) -> None:
        self.last = move.serial
        self.position = move.position or str(move.serial)

    def reset(self, reset: GameReset) -> None:
        self.last = reset.serial
        self.position = reset.position or str(reset.serial)


# -- the operations ----------------------------------------------------------------------------

class Core:
    """What :class:`~boxfish.client.Client` and :class:`~boxfish.client.AsyncClient` share:
    their settings and every operation of the API as steps (the ``_`` methods of the same
    names as the public ones). A subclass names its ``httpx`` client class as ``_http_class``.

    ``base_url``: the server (e.g. ``http://127.0.0.1:8000``). ``timeout``: seconds for
    connecting and for each read (a ``wait`` of an analysis is added to it). ``token``: the
    write token used by ``play`` and ``add_webhook`` when they are given none. ``retries``,
    ``backoff``, ``max_delay``, ``first_contact_retries``: see the module. ``transport``: an
    ``httpx`` transport to send through (a proxy, a WSGI or ASGI app in tests, a wrapper): an
    ``httpx.BaseTransport`` for ``Client``, an ``httpx.AsyncBaseTransport`` for
    ``AsyncClient``."""

    _http_class: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(self, base_url: str, timeout: float = 10.0, *, token: str | None = None,
                 retries: int = 6, backoff: float = 0.25, max_delay: float = 30.0,
                 transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                 first_contact_retries: int = 1) -> None:
        self.timeout = timeout
        self.token = token
        self.retries = retries
        self.backoff = backoff
        self.max_delay = max_delay
        self.first_contact_retries = first_contact_retries
        # Whether an answer (a response, or an event stream opened, whatever its status) has
        # come from the server yet: until then a failed connection is retried less (module).
        self._answered = False
        self._random = random.Random()
        self._http = self._http_class(base_url=base_url.rstrip("/"), timeout=timeout,
                                      transport=transport,
                                      headers={"User-Agent": "boxfish-client"})

    def _auth(self, token: str | None) -> dict:
        token = token if token is not None else self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _retries_after(self, error: BaseException | None) -> int:
        """How many retries a request (or an event stream) that failed with ``error`` may
        have: ``retries``, but at most ``first_contact_retries`` when it could not connect
        and no answer has come from the server yet."""
        if not self._answered and isinstance(error, NOT_SENT):
            return min(self.retries, self.first_contact_retries)
        return self.retries

    def _delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry ``attempt`` + 1; None when the server asks for more
        than ``max_delay``."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_delay else None
        return min(self.max_delay, self.backoff * 2 ** attempt) * self._random.uniform(0.5, 1)

    def _send(self, method: str, path: str, *, idempotent: bool = True,
              **options) -> Operation[httpx.Response]:
        """The 2xx answer to the request (retried as the module says), or the typed error."""
        attempt = 0
        while True:
            try:
                resp = yield Call(method, path, options)
            except httpx.TransportError as exc:
                if (attempt >= self._retries_after(exc)
                        or not (idempotent or isinstance(exc, NOT_SENT))):
                    raise ConnectionFailed(None, message=f"{method} {path}: no answer "
                                           f"after {attempt + 1} attempt(s) "
                                           f"({type(exc).__name__}: {exc})") from exc
                delay, why = self._delay(attempt), type(exc).__name__
            else:
                self._answered = True
                if resp.status_code < 400:
                    return resp
                error = error_of(resp)
                retryable = (RETRY_STATUS if idempotent else REFUSED_STATUS)
                if attempt >= self.retries or resp.status_code not in retryable:
                    raise error
                delay = self._delay(attempt, getattr(error, "retry_after", None))
                if delay is None:
                    raise error
                why = f"{resp.status_code} {error.slug or error.title}"
            log.info("%s %s: %s; retrying in %.2f s", method, path, why, delay)
            yield Sleep(delay)
            attempt += 1

    def _create_game(self, game: str, width: int | None, height: int | None,
                     engine: dict | None, params: dict) -> Operation[Game]:
        body = {"game": game, **params}
        if width is not None:
            body["width"] = width
        if height is not None:
            body["height"] = height
        if engine is not None:
            body["engine"] = engine
        resp = yield from self._send("POST", api_path("games"), json=body, idempotent=False)
        return Game.from_json(resp.json(), position=etag_position(resp.headers.get("ETag")))

    def _state(self, game_id: str) -> Operation[Game]:
        resp = yield from self._send("GET", api_path("games", game_id))
        return Game.from_json(resp.json(), position=etag_position(resp.headers.get("ETag")))

    def _moves(self, game_id: str, after: int) -> Operation[list[Move]]:
        resp = yield from self._send("GET", api_path("games", game_id, "moves"),
                                     params={"after": after})
        return [Move.from_json(m) for m in resp.json()["moves"]]

    def _explorer(self, game: str, width: int | None, height: int | None,
                  moves) -> Operation[dict]:
        params: dict = {"game": game, "moves": json.dumps([list(m) for m in moves],
                                                          separators=(",", ":"))}
        if width is not None:
            params["width"] = width
        if height is not None:
            params["height"] = height
        resp = yield from self._send("GET", api_path("explorer"), params=params)
        return resp.json()

    def _play(self, game_id: str, move, serial: int | None, token: str | None,
              idempotency_key: str | None) -> Operation[Move]:
        body: dict = {"move": list(move) if isinstance(move, tuple) else move}
        if serial is not None:
            body["serial"] = serial
        # One key for every attempt of this move: a retry whose first answer was lost gets
        # the stored move back instead of appending it twice.
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4()), **self._auth(token)}
        resp = yield from self._send("POST", api_path("games", game_id, "moves"), json=body,
                                     headers=headers)
        return Move.from_json(resp.json(),
                              replayed=resp.headers.get("Idempotent-Replayed") == "true")

    def _export_record(self, game_id: str, at: int | None) -> Operation[str]:
        params = {} if at is None else {"at": at}
        resp = yield from self._send("GET", api_path("games", game_id, "record"), params=params)
        return resp.text

    def _animation(self, game_id: str, at: int | str | None, size: int | None,
                   review: str | None) -> Operation[bytes]:
        params = {k: v for k, v in (("at", at), ("size", size), ("review", review))
                  if v is not None}
        resp = yield from self._send("GET", api_path("games", game_id, "animation.gif"),
                                     params=params)
        return resp.content

    def _import_record(self, record: str, format: str, width: int | None,
                       height: int | None, idempotency_key: str | None) -> Operation[Game]:
        # One key for every attempt: a retry whose first answer was lost gets the game the
        # first attempt made (and its token) instead of a second game.
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        if format == "boxfish":
            options: dict = {"content": record.encode(),
                             "headers": {**headers, "Content-Type": "text/plain; charset=utf-8"}}
        else:
            body: dict = {"record": record, "format": format}
            body.update({k: v for k, v in (("width", width), ("height", height))
                         if v is not None})
            options = {"json": body, "headers": headers}
        resp = yield from self._send("POST", api_path("games", "import"), **options)
        return Game.from_json(resp.json(), position=etag_position(resp.headers.get("ETag")))

    def _follow(self, game_id: str, after: int | str,
                idle_timeout: float) -> Operation[None]:
        """The steps of ``events``: an :class:`Emit` per move and per :class:`GameReset` (see
        ``Client.events``). Raises ValueError at once for an ``after`` that is no position."""
        serials, failures = EventSerials(after), 0
        path = api_path("games", game_id, "events")
        timeout = httpx.Timeout(self.timeout, read=idle_timeout)
        while True:
            error: BaseException | None = None
            yielded = ended = False
            last_event: Move | GameReset | None = None
            try:
                stream = yield Open(path, {"Last-Event-ID": serials.position}, timeout)
                self._answered = True
                try:
                    resp = stream.response
                    if resp.status_code != 200:
                        yield Read(stream)
                        error = error_of(resp)
                        if resp.status_code not in RETRY_STATUS:
                            raise error
                    else:
                        ended, yielded, last_event = yield from self._drain(stream, serials,
                                                                            game_id)
                except Exception:
                    yield Close(stream)
                    raise
                yield Close(stream)
            except httpx.TransportError as exc:
                error, ended = exc, False
            if last_event is not None:
                # Emitted once its stream is closed: a consumer that stops at the game's end
                # leaves nothing open.
                yield Emit(last_event)
                return
            if ended and not yielded:
                # The stream ended at once, without the game's end: is the game over?
                try:
                    game = yield from self._state(game_id)
                except (ConnectionFailed, Busy) as exc:
                    error = exc
                else:
                    if game.finished and game.serial <= serials.last:
                        return
            if yielded:
                failures = 0
                continue
            if failures >= self._retries_after(error):
                if isinstance(error, BoxfishError):
                    raise error
                raise ConnectionFailed(None, message=f"event stream of {game_id}: no answer "
                                       f"after {failures + 1} attempts ({error!r})") from error
            delay = self._delay(failures, getattr(error, "retry_after", None))
            if delay is None:  # a Busy whose Retry-After is beyond max_delay
                raise error
            log.info("event stream of %s ended (%s); reconnecting after serial %d (%s) in "
                     "%.2f s", game_id, type(error).__name__ if error else "closed",
                     serials.last, serials.position, delay)
            yield Sleep(delay)
            failures += 1

    def _drain(self, stream: Stream, serials: EventSerials,
               game_id: str) -> Operation[tuple[bool, bool, Move | GameReset | None]]:
        """Emit the moves and resets of one open stream but the game's end: ``(ended,
        yielded, last_event)``: it ended (rather than skipped a serial), something was
        emitted, the move (or the reset to a finished state) that ends the game (not emitted
        yet; None if it did not come)."""
        yielded = False
        while (sse := (yield Next(stream))) is not None:
            kind = serials.classify(sse.event, sse.id)
            if kind == serials.GAP:
                log.info("event stream of %s skipped from serial %d to %s; reopening",
                         game_id, serials.last, sse.id)
                return False, yielded, None
            event: Move | GameReset
            if kind == serials.RESET:
                event = GameReset(Game.from_json(sse.json(), position=sse.id or None))
                log.info("event stream of %s: the log no longer has the history handed out "
                         "up to %s; it is at %s now", game_id, serials.position,
                         event.position or event.serial)
                serials.reset(event)
            elif kind == serials.NEXT:
                event = Move.from_json(sse.json(), position=sse.id or None)
                serials.took(event)
            else:
                continue
            if event.finished:
                return True, True, event
            yielded = True
            yield Emit(event)
        return True, yielded, None

    def _analyse(self, game_id: str | None, position: dict | None, at: int | None,
                 time_ms: int | None, multipv: int | None, core: str | None, wait: float,
                 timeout: float | None) -> Operation[Analysis]:
        if (game_id is None) == (position is None):
            raise ValueError("give either game_id or position")
        options = {k: v for k, v in (("time_ms", time_ms), ("multipv", multipv),
                                     ("core", core)) if v is not None}
        if game_id is not None:
            path, body = api_path("games", game_id, "analyses"), options
            if at is not None:
                body["at"] = at
        else:
            path, body = api_path("analyses"), {**position, **options}
        deadline = None if timeout is None else time.monotonic() + timeout
        resp = yield from self._send("POST", path, json=body, params={"wait": f"{wait:g}"},
                                     timeout=self.timeout + wait)
        data, interval = resp.json(), 0.05
        while data["status"] not in _DONE:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"analysis {data['id']} still {data['status']} after "
                                   f"{timeout} s")
            asked = retry_after_seconds(resp.headers.get("Retry-After"))
            delay = interval if asked is None else min(asked, self.max_delay)
            if deadline is not None:
                delay = max(0.0, min(delay, deadline - time.monotonic()))
            yield Sleep(delay)
            interval = min(1.0, interval * 2)
            resp = yield from self._send("GET", api_path("analyses", data["id"]))
            data = resp.json()
        if data["status"] == "failed":
            raise AnalysisFailed(resp.status_code, {
                "type": "about:blank", "title": "Analysis failed",
                "detail": data.get("error") or "the analysis failed"})
        return Analysis.from_json(data)

    def _review(self, game_id: str, time_ms: int | None, wait: float,
                timeout: float | None) -> Operation[Review]:
        body = {} if time_ms is None else {"time_ms": time_ms}
        deadline = None if timeout is None else time.monotonic() + timeout
        # not retried once sent: every POST makes a review of its own
        resp = yield from self._send("POST", api_path("games", game_id, "reviews"), json=body,
                                     params={"wait": f"{wait:g}"},
                                     timeout=self.timeout + wait, idempotent=False)
        data = resp.json()
        while data["status"] not in _DONE:
            hold = wait
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"review {data['id']} still {data['status']} after "
                                       f"{timeout} s")
                hold = min(wait, left)
            resp = yield from self._send("GET", api_path("reviews", data["id"]),
                                         params={"wait": f"{hold:g}"},
                                         timeout=self.timeout + hold)
            data = resp.json()
            if data["status"] not in _DONE and hold <= 0:
                yield Sleep(0.05)
        if data["status"] == "failed":
            raise ReviewFailed(resp.status_code, {
                "type": "about:blank", "title": "Review failed",
                "detail": data.get("error") or "the review failed"})
        return Review.from_json(data)

    def _add_webhook(self, game_id: str, token: str | None, url: str,
                     events: list[str] | None) -> Operation[Webhook]:
        body: dict = {"url": url}
        if events is not None:
            body["events"] = list(events)
        resp = yield from self._send("POST", api_path("games", game_id, "webhooks"), json=body,
                                     headers=self._auth(token), idempotent=False)
        return Webhook.from_json(resp.json())
