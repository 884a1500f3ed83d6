"""The synchronous client of the Boxfish API (:class:`Client`), on ``httpx``.

It performs the steps of :class:`boxfish.client._core.Core`, which decides everything else
(see that module for the retries, the backoff, the ``Idempotency-Key`` of a move and the
resuming of event streams), with ``httpx.Client`` and ``time.sleep``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx
from httpx_sse import connect_sse

from . import _core
from .types import Analysis, Game, GameReset, Move, Review, Webhook


class Client(_core.Core):
    """A client of one Boxfish server: ``Client(base_url, timeout=10.0, *, token=None,
    retries=6, backoff=0.25, max_delay=30.0, transport=None, first_contact_retries=1)``.

    ``timeout``: seconds for connecting and for each read (a ``wait`` of an analysis is added
    to it). ``token``: the write token used by ``play`` and ``add_webhook`` when they are
    given none. ``retries``, ``backoff``, ``max_delay``: see :mod:`boxfish.client._core`.
    ``transport``: an ``httpx.BaseTransport`` to send through (a proxy, a WSGI app in tests,
    a wrapper). ``first_contact_retries``: the retries of a request that cannot connect
    before any answer has come from the server (a wrong URL fails fast, with
    ``ConnectionFailed``; later a server that goes away gets all ``retries``). Retries are
    logged at INFO on the ``boxfish.client`` logger, so nothing is printed unless the program
    configures logging.

    Errors raised by every method: the subclasses of :class:`~boxfish.client.errors.BoxfishError`
    (``NotFound``, ``Unauthorized``, ``Forbidden``, ``IllegalMove``, ``SerialConflict``,
    ``InvalidRequest``, ``Busy`` once the retries are spent, ``ConnectionFailed`` when no
    attempt got an answer). Use it as a context manager, or call :meth:`close`.
    """

    _http_class = httpx.Client
    _http: httpx.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- performing the steps ------------------------------------------------------------

    def _perform(self, effect: _core.Effect):
        match effect:
            case _core.Call(method, path, options):
                return self._http.request(method, path, **options)
            case _core.Sleep(seconds):
                return time.sleep(seconds)
            case _core.Open(path, headers, timeout):
                return self._open(path, headers, timeout)
            case _core.Next(stream):
                return next(stream.events, None)
            case _core.Read(stream):
                return stream.response.read()
            case _core.Close(stream):
                return stream.exit.close()
        raise TypeError(f"not an effect: {effect!r}")

    def _open(self, path: str, headers: dict, timeout: httpx.Timeout) -> _core.Stream:
        exit = contextlib.ExitStack()
        source = exit.enter_context(connect_sse(self._http, "GET", path, headers=dict(headers),
                                                timeout=timeout))
        events = source.iter_sse()
        exit.callback(events.close)
        return _core.Stream(source.response, events, exit)

    def _settle(self, steps: _core.Steps, effect: _core.Effect) -> None:
        try:
            steps.reply(self._perform(effect))
        except httpx.TransportError as exc:
            steps.fail(exc)

    def _run(self, operation: _core.Operation[_core.T]) -> _core.T:
        steps = _core.Steps(operation)
        while (effect := steps.next()) is not None:
            self._settle(steps, effect)
        return steps.result

    # -- games and moves -----------------------------------------------------------------

    def create_game(self, game: str = "dots-and-boxes", *, width: int | None = None,
                    height: int | None = None, engine: dict | None = None, **params) -> Game:
        """Create a game (``POST /v1/games``): Dots and Boxes needs ``width`` and ``height``
        (boxes); ``engine`` (``{"seat": 0|1, "time_ms": N}``) has the server play one seat.
        Returns it with its secret write ``token``. Raises InvalidRequest for a refused
        body."""
        return self._run(self._create_game(game, width, height, engine, params))

    def state(self, game_id: str) -> Game:
        """The game's current state (``GET /v1/games/{id}``). Raises NotFound."""
        return self._run(self._state(game_id))

    def moves(self, game_id: str, after: int = 0) -> list[Move]:
        """The moves with serial > ``after``, in order (without ``scores``, ``to_move`` and
        ``status``, which the server's list does not carry). Raises NotFound."""
        return self._run(self._moves(game_id, after))

    def explorer(self, game: str = "dots-and-boxes", *, width: int | None = None,
                 height: int | None = None, moves=()) -> dict:
        """The opening explorer at the position ``moves`` (moves from the start, as lists or
        tuples) reaches (``GET /v1/explorer``): the server's JSON, ``{"game", "params",
        "serial", "to_move", "max_moves", "version", "games", "moves": [{"move", "games",
        "wins", "draws", "mean_margin", "examples"}]}``, most played first (docs/explorer.md).
        Raises InvalidRequest for a bad position."""
        return self._run(self._explorer(game, width, height, moves))

    def play(self, game_id: str, move, serial: int | None = None, *, token: str | None = None,
             idempotency_key: str | None = None) -> Move:
        """Append ``move`` (e.g. ``[x, y, o]``, or ``[row, col]``) to the game, as its move
        ``serial`` when given (it must be the game's serial + 1).

        All the attempts carry one ``Idempotency-Key`` (``idempotency_key``, else a new
        random one), so the move is stored once however many answers were lost; the answer
        to a retry of a stored move has ``replayed`` set. Raises IllegalMove (``reason``),
        SerialConflict (``current_serial``), Unauthorized, Forbidden, NotFound, Busy,
        ConnectionFailed."""
        return self._run(self._play(game_id, move, serial, token, idempotency_key))

    def events(self, game_id: str, after: int | str = 0, *,
               idle_timeout: float = 60.0) -> Iterator[Move | GameReset]:
        """The game's moves after ``after`` as they are appended (the Server-Sent Events of
        ``GET /v1/games/{id}/events``), each exactly once and in serial order, and a
        :class:`~boxfish.client.GameReset` whenever the game's log is no longer the history
        yielded; the iterator ends after the move that finishes the game (at once if it is
        finished and has no move after ``after``; after a reset to a finished game).

        ``after``: a serial (an int: trusted, the moves after it), or a log position
        ``<serial>.<head>``, the ``position`` of a :class:`Game` (its ``ETag``), of a
        :class:`Move` yielded earlier or of a reset: the server checks it, and if its log no
        longer has that history (a failover lost moves), the first item is a GameReset.
        Each move yielded carries its ``position``.

        A dropped stream (the server restarting, the connection lost, nothing received, not
        even a keep-alive, for ``idle_timeout`` seconds) is reopened, after a backoff, with
        ``Last-Event-ID`` = the position of the last item yielded (``after`` before any); an
        event that would skip a serial makes it reopen from the last one. If the moves
        yielded are no longer the log's (lost in a failover, perhaps replaced by others at
        their serials), the server says so with a ``game`` event, on reopening or on the
        open stream: then a ``GameReset(game)`` is yielded, ``game`` the log's whole current
        state, and the moves after ``game.serial`` follow; whatever was built from the moves
        yielded must be rebuilt from it (see GameReset). Raises ValueError when ``after`` is
        no position, NotFound, InvalidRequest (a position the server refuses), and
        ConnectionFailed or Busy when ``retries`` reconnections in a row fail. Nothing is
        sent before the first ``next``."""
        steps = _core.Steps(self._follow(game_id, after, idle_timeout))
        try:
            while (effect := steps.next()) is not None:
                if not isinstance(effect, _core.Emit):
                    self._settle(steps, effect)
                    continue
                yield effect.event
        finally:
            for stream in steps.release():
                stream.exit.close()

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
        (``queue-full``); ValueError unless exactly one of ``game_id`` and ``position`` is
        given."""
        return self._run(self._analyse(game_id, position, at, time_ms, multipv, core, wait,
                                       timeout))

    # -- reviews -------------------------------------------------------------------------

    def review(self, game_id: str, *, time_ms: int | None = None, wait: float = 5.0,
               timeout: float | None = None) -> Review:
        """Review the stored game ``game_id`` as its log is now (``POST
        /v1/games/{id}/reviews``; ``time_ms`` per position, None: the server's default) and
        wait for the result: ``GET /v1/reviews/{id}?wait=`` (``wait`` seconds each, at most the
        server's ``max_wait_s``) until it ends, or ``timeout`` seconds have passed
        (TimeoutError; None: no limit). Raises ReviewFailed when the job failed, NotFound,
        NothingToReview (409: a game without moves), InvalidRequest, Busy."""
        return self._run(self._review(game_id, time_ms, wait, timeout))

    # -- webhooks ------------------------------------------------------------------------

    def add_webhook(self, game_id: str, token: str | None, url: str,
                    events: list[str] | None = None) -> Webhook:
        """Register ``url`` for the game's deliveries (``POST /v1/games/{id}/webhooks``, with
        the write ``token``, None: the client's); ``events`` names the kinds to send (None:
        the server's default). Returns the webhook with its ``secret`` (shown only here)
        for :func:`boxfish.client.verify_webhook`. Raises InvalidRequest, Unauthorized,
        Forbidden, NotFound."""
        return self._run(self._add_webhook(game_id, token, url, events))

    # -- game records ----------------------------------------------------------------------

    def export_record(self, game_id: str, at: int | None = None) -> str:
        """The game's record (``GET /v1/games/{id}/record``: the text format of
        ``docs/records.md``), up to serial ``at`` (default: all its moves). Raises NotFound,
        InvalidRequest (an ``at`` beyond the game's serial)."""
        return self._run(self._export_record(game_id, at))

    # -- pictures --------------------------------------------------------------------------

    def animation(self, game_id: str, *, at: int | str | None = None, size: int | None = None,
                  review: str | None = None) -> bytes:
        """The game as an animated GIF (``GET /v1/games/{id}/animation.gif``): a frame per
        position up to ``at`` (a serial or ``<serial>.<head>``; None: now), ``size`` pixels
        wide (None: the server's 480), with the judgements of the finished ``review`` (its
        id) when given. Raises NotFound, InvalidRequest, ReviewFailed (the review failed),
        BoxfishError (409: the review has not finished, or reviewed another history)."""
        return self._run(self._animation(game_id, at, size, review))

    def import_record(self, record: str, *, format: str = "boxfish", width: int | None = None,
                      height: int | None = None, idempotency_key: str | None = None) -> Game:
        """Make a new game of ``record`` (``POST /v1/games/import``): a Boxfish record, or
        with ``format="openspiel"`` OpenSpiel's Dots-and-Boxes actions (the text of
        ``serialize_game_and_state``, or a bare action list with ``width`` and ``height``).
        Returns the game with its write ``token``. Every attempt carries one
        ``Idempotency-Key`` (``idempotency_key``, else a new random one), so one game is made
        however many answers were lost. Raises InvalidRecord (``reason``, ``move_number``:
        nothing was made), InvalidRequest."""
        return self._run(self._import_record(record, format, width, height, idempotency_key))
