"""The synchronous client of the Boxfish API (:class:`Client`), on ``httpx``.

Retries: a request that got no answer (connection refused, dropped, timed out) or an answer
429, 500, 502, 503 or 504 is sent again, up to ``retries`` times, after an exponential backoff
with jitter (``backoff`` * 2^attempt seconds, at most ``max_delay``, times a random 0.5 to 1),
or after the ``Retry-After`` the server named; a ``Retry-After`` longer than ``max_delay`` is
not waited for: the error is raised at once. ``play`` sends one ``Idempotency-Key`` for all the
attempts of a move, so a move whose answer was lost is stored once (the retry gets the stored
move back, ``replayed``). ``create_game`` is not idempotent: it is retried only when the
request surely did not create a game (no connection, 429, 503).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
from httpx_sse import connect_sse

from .errors import (
    AnalysisFailed,
    BoxfishError,
    Busy,
    ConnectionFailed,
    error_from_response,
    retry_after_seconds,
)
from .types import Analysis, Game, Move, Webhook

log = logging.getLogger("boxfish.client")

#: Answers worth another attempt (the request may succeed later).
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
#: Answers that say the request changed nothing (safe to resend a request that is not
#: idempotent).
_REFUSED_STATUS = frozenset({429, 503})
#: Transport errors raised before the request left (safe to resend anything).
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_DONE = ("finished", "failed")


def _path(*parts: str) -> str:
    return "/v1/" + "/".join(quote(str(p), safe="") for p in parts)


def _json(resp: httpx.Response):
    try:
        return resp.json()
    except ValueError:
        return None


class Client:
    """A client of one Boxfish server at ``base_url`` (e.g. ``http://127.0.0.1:8000``).

    ``timeout``: seconds for connecting and for each read (a ``wait`` of an analysis is added
    to it). ``token``: the write token used by ``play`` and ``add_webhook`` when they are
    given none. ``retries``, ``backoff``, ``max_delay``: see the module. ``transport``: an
    ``httpx.BaseTransport`` to send through (a proxy, a WSGI app in tests, a wrapper).

    Errors raised by every method: the subclasses of :class:`~boxfish.client.errors.BoxfishError`
    (``NotFound``, ``Unauthorized``, ``Forbidden``, ``IllegalMove``, ``SerialConflict``,
    ``InvalidRequest``, ``Busy`` once the retries are spent, ``ConnectionFailed`` when no
    attempt got an answer). Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, base_url: str, timeout: float = 10.0, *, token: str | None = None,
                 retries: int = 6, backoff: float = 0.25, max_delay: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.timeout = timeout
        self.token = token
        self.retries = retries
        self.backoff = backoff
        self.max_delay = max_delay
        self._random = random.Random()
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout,
                                  transport=transport,
                                  headers={"User-Agent": "boxfish-client"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sending -------------------------------------------------------------------------

    def _auth(self, token: str | None) -> dict:
        token = token if token is not None else self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry ``attempt`` + 1; None when the server asks for more
        than ``max_delay``."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_delay else None
        return min(self.max_delay, self.backoff * 2 ** attempt) * self._random.uniform(0.5, 1)

    def _send(self, method: str, path: str, *, idempotent: bool = True,
              **kwargs) -> httpx.Response:
        """The 2xx answer to the request (retried as the module says), or the typed error."""
        attempt = 0
        while True:
            try:
                resp = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.retries or not (idempotent or isinstance(exc, _NOT_SENT)):
                    raise ConnectionFailed(None, message=f"{method} {path}: no answer "
                                           f"({type(exc).__name__}: {exc})") from exc
                delay, why = self._delay(attempt), type(exc).__name__
            else:
                if resp.status_code < 400:
                    return resp
                error = error_from_response(resp.status_code, _json(resp), resp.headers)
                retryable = (_RETRY_STATUS if idempotent else _REFUSED_STATUS)
                if attempt >= self.retries or resp.status_code not in retryable:
                    raise error
                delay = self._delay(attempt, getattr(error, "retry_after", None))
                if delay is None:
                    raise error
                why = f"{resp.status_code} {error.slug or error.title}"
            log.warning("%s %s: %s; retrying in %.2f s", method, path, why, delay)
            time.sleep(delay)
            attempt += 1

    # -- games and moves -----------------------------------------------------------------

    def create_game(self, game: str = "dots-and-boxes", *, width: int | None = None,
                    height: int | None = None, engine: dict | None = None, **params) -> Game:
        """Create a game (``POST /v1/games``): Dots and Boxes needs ``width`` and ``height``
        (boxes); ``engine`` (``{"seat": 0|1, "time_ms": N}``) has the server play one seat.
        Returns it with its secret write ``token``. Raises InvalidRequest for a refused
        body."""
        body = {"game": game, **params}
        if width is not None:
            body["width"] = width
        if height is not None:
            body["height"] = height
        if engine is not None:
            body["engine"] = engine
        return Game.from_json(self._send("POST", _path("games"), json=body,
                                         idempotent=False).json())

    def state(self, game_id: str) -> Game:
        """The game's current state (``GET /v1/games/{id}``). Raises NotFound."""
        return Game.from_json(self._send("GET", _path("games", game_id)).json())

    def moves(self, game_id: str, after: int = 0) -> list[Move]:
        """The moves with serial > ``after``, in order (without ``scores``, ``to_move`` and
        ``status``, which the server's list does not carry). Raises NotFound."""
        data = self._send("GET", _path("games", game_id, "moves"), params={"after": after}).json()
        return [Move.from_json(m) for m in data["moves"]]

    def play(self, game_id: str, move, serial: int | None = None, *, token: str | None = None,
             idempotency_key: str | None = None) -> Move:
        """Append ``move`` (e.g. ``[x, y, o]``, or ``[row, col]``) to the game, as its move
        ``serial`` when given (it must be the game's serial + 1).

        All the attempts carry one ``Idempotency-Key`` (``idempotency_key``, else a new
        random one), so the move is stored once however many answers were lost; the answer
        to a retry of a stored move has ``replayed`` set. Raises IllegalMove (``reason``),
        SerialConflict (``current_serial``), Unauthorized, Forbidden, NotFound, Busy,
        ConnectionFailed."""
        body: dict = {"move": list(move) if isinstance(move, tuple) else move}
        if serial is not None:
            body["serial"] = serial
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4()), **self._auth(token)}
        resp = self._send("POST", _path("games", game_id, "moves"), json=body, headers=headers)
        return Move.from_json(resp.json(),
                              replayed=resp.headers.get("Idempotent-Replayed") == "true")

    def events(self, game_id: str, after: int = 0, *,
               idle_timeout: float = 60.0) -> Iterator[Move]:
        """The game's moves with serial > ``after`` as they are appended (the Server-Sent
        Events of ``GET /v1/games/{id}/events``), each exactly once and in serial order; the
        iterator ends after the move that finishes the game (at once if it is finished and
        has no move after ``after``).

        A dropped stream (the server restarting, the connection lost, nothing received, not
        even a keep-alive, for ``idle_timeout`` seconds) is reopened with ``Last-Event-ID`` =
        the last serial yielded, after a backoff; an event that would skip a serial makes it
        reopen from the last one. Raises NotFound, and ConnectionFailed or Busy when
        ``retries`` reconnections in a row fail. Nothing is sent before the first ``next``."""
        last, failures = after, 0
        path = _path("games", game_id, "events")
        timeout = httpx.Timeout(self.timeout, read=idle_timeout)
        while True:
            error: BaseException | None = None
            yielded = ended = False
            try:
                with connect_sse(self._http, "GET", path, timeout=timeout,
                                 headers={"Last-Event-ID": str(last)}) as source:
                    resp = source.response
                    if resp.status_code != 200:
                        resp.read()
                        error = error_from_response(resp.status_code, _json(resp), resp.headers)
                        if resp.status_code not in _RETRY_STATUS:
                            raise error
                    else:
                        ended = True
                        for sse in source.iter_sse():
                            if sse.event != "move":
                                continue
                            serial = int(sse.id)
                            if serial <= last:
                                continue  # already yielded
                            if serial != last + 1:
                                log.warning("event stream of %s skipped from serial %d to %d; "
                                            "reopening", game_id, last, serial)
                                ended = False
                                break
                            move = Move.from_json(sse.json())
                            last, yielded = serial, True
                            yield move
                            if move.finished:
                                return
            except httpx.TransportError as exc:
                error, ended = exc, False
            if ended and not yielded:
                # The stream ended at once, without the game's end: is the game over?
                try:
                    game = self.state(game_id)
                except (ConnectionFailed, Busy) as exc:
                    error = exc
                else:
                    if game.finished and game.serial <= last:
                        return
            if yielded:
                failures = 0
                continue
            if failures >= self.retries:
                if isinstance(error, BoxfishError):
                    raise error
                raise ConnectionFailed(None, message=f"event stream of {game_id}: no answer "
                                       f"after {failures + 1} attempts ({error!r})") from error
            delay = self._delay(failures, getattr(error, "retry_after", None))
            if delay is None:  # a Busy whose Retry-After is beyond max_delay
                raise error
            log.warning("event stream of %s ended (%s); reconnecting after serial %d in %.2f s",
                        game_id, type(error).__name__ if error else "closed", last, delay)
            time.sleep(delay)
            failures += 1

    # -- analyses ------------------------------------------------------------------------

    def analyse(self, game_id: str | None = None, *, position: dict | None = None,
                at: int | None = None, time_ms: int | None = None, multipv: int | None = None,
                core: str | None = None, wait: float = 5.0,
                timeout: float | None = None) -> Analysis:
        """Analyse a stored game at serial ``at`` (default: its current one;
        ``POST /v1/games/{id}/analyses``) or a ``position`` (the body of
        ``POST /v1/analyses``: ``{"game": "dots-and-boxes", "width": 3, "height": 3,
        "moves": [...]}``, or ``lines``/``to_move``/``scores``), for ``time_ms``, and wait for
        the result.

        The server is asked to hold the answer up to ``wait`` seconds (at most its
        ``max_wait_s``); while the job is queued or running (202) its
        ``GET /v1/analyses/{id}`` is polled, honouring ``Retry-After``, until it is finished,
        or ``timeout`` seconds have passed (TimeoutError; None: no limit). Raises
        AnalysisFailed when the job failed, InvalidRequest, IllegalMove, NotFound, Busy
        (``queue-full``)."""
        if (game_id is None) == (position is None):
            raise ValueError("give either game_id or position")
        options = {k: v for k, v in (("time_ms", time_ms), ("multipv", multipv),
                                     ("core", core)) if v is not None}
        if game_id is not None:
            path, body = _path("games", game_id, "analyses"), options
            if at is not None:
                body["at"] = at
        else:
            path, body = _path("analyses"), {**position, **options}
        deadline = None if timeout is None else time.monotonic() + timeout
        resp = self._send("POST", path, json=body, params={"wait": f"{wait:g}"},
                          timeout=self.timeout + wait)
        data, interval = resp.json(), 0.05
        while data["status"] not in _DONE:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"analysis {data['id']} still {data['status']} after "
                                   f"{timeout} s")
            asked = _retry_after(resp)
            delay = interval if asked is None else min(asked, self.max_delay)
            if deadline is not None:
                delay = max(0.0, min(delay, deadline - time.monotonic()))
            time.sleep(delay)
            interval = min(1.0, interval * 2)
            resp = self._send("GET", _path("analyses", data["id"]))
            data = resp.json()
        if data["status"] == "failed":
            raise AnalysisFailed(resp.status_code, {
                "type": "about:blank", "title": "Analysis failed",
                "detail": data.get("error") or "the analysis failed"})
        return Analysis.from_json(data)

    # -- webhooks ------------------------------------------------------------------------

    def add_webhook(self, game_id: str, token: str | None, url: str,
                    events: list[str] | None = None) -> Webhook:
        """Register ``url`` for the game's deliveries (``POST /v1/games/{id}/webhooks``, with
        the write ``token``, None: the client's); ``events`` names the kinds to send (None:
        the server's default). Returns the webhook with its ``secret`` (shown only here)
        for :func:`boxfish.client.verify_webhook`. Raises InvalidRequest, Unauthorized,
        Forbidden, NotFound."""
        body: dict = {"url": url}
        if events is not None:
            body["events"] = list(events)
        resp = self._send("POST", _path("games", game_id, "webhooks"), json=body,
                          headers=self._auth(token), idempotent=False)
        return Webhook.from_json(resp.json())


def _retry_after(resp: httpx.Response) -> float | None:
    return retry_after_seconds(resp.headers.get("Retry-After"))
