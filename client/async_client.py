"""The asyncio client of the Boxfish API (:class:`AsyncClient`), on ``httpx``.

It performs the steps of :class:`boxfish.client._core.Core` with ``httpx.AsyncClient``,
``asyncio.sleep`` and httpx-sse's ``aconnect_sse``; the steps decide the rest, so it sends,
retries, reuses an ``Idempotency-Key`` and resumes event streams exactly as
:class:`~boxfish.client.Client` does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
from httpx_sse import aconnect_sse

from . import _core
from .types import Analysis, Game, GameReset, Move, Review, Webhook


class AsyncClient(_core.Core):
    """:class:`~boxfish.client.Client` for asyncio: the same settings (``transport`` is an
    ``httpx.AsyncBaseTransport``), methods that are coroutines with the same arguments,
    results and errors, and ``events`` an async iterator. Use it with ``async with``, or
    await :meth:`aclose`. Its sleeps between retries are ``asyncio.sleep``: they hold up
    only the task that waits."""

    _http_class = httpx.AsyncClient
    _http: httpx.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    # -- performing the steps ------------------------------------------------------------

    async def _perform(self, effect: _core.Effect):
        match effect:
            case _core.Call(method, path, options):
                return await self._http.request(method, path, **options)
            case _core.Sleep(seconds):
                return await asyncio.sleep(seconds)
            case _core.Open(path, headers, timeout):
                return await self._open(path, headers, timeout)
            case _core.Next(stream):
                return await anext(stream.events, None)
            case _core.Read(stream):
                return await stream.response.aread()
            case _core.Close(stream):
                return await stream.exit.aclose()
        raise TypeError(f"not an effect: {effect!r}")

    async def _open(self, path: str, headers: dict, timeout: httpx.Timeout) -> _core.Stream:
        exit = contextlib.AsyncExitStack()
        source = await exit.enter_async_context(
            aconnect_sse(self._http, "GET", path, headers=dict(headers), timeout=timeout))
        events = source.aiter_sse()
        exit.push_async_callback(events.aclose)
        return _core.Stream(source.response, events, exit)

    async def _settle(self, steps: _core.Steps, effect: _core.Effect) -> None:
        try:
            steps.reply(await self._perform(effect))
        except httpx.TransportError as exc:
            steps.fail(exc)

    async def _run(self, operation: _core.Operation[_core.T]) -> _core.T:
        steps = _core.Steps(operation)
        while (effect := steps.next()) is not None:
            await self._settle(steps, effect)
        return steps.result

    # -- the API: each as Client's, awaited ------------------------------------------------

    async def create_game(self, game: str = "dots-and-boxes", *, width: int | None = None,
                          height: int | None = None, engine: dict | None = None,
                          **params) -> Game:
        """:meth:`Client.create_game <boxfish.client.Client.create_game>`, awaited."""
        return await self._run(self._create_game(game, width, height, engine, params))

    async def state(self, game_id: str) -> Game:
        """:meth:`Client.state <boxfish.client.Client.state>`, awaited."""
        return await self._run(self._state(game_id))

    async def moves(self, game_id: str, after: int = 0) -> list[Move]:
        """:meth:`Client.moves <boxfish.client.Client.moves>`, awaited."""
        return await self._run(self._moves(game_id, after))

    async def explorer(self, game: str = "dots-and-boxes", *, width: int | None = None,
                       height: int | None = None, moves=()) -> dict:
        """:meth:`Client.explorer <boxfish.client.Client.explorer>`, awaited."""
        return await self._run(self._explorer(game, width, height, moves))

    async def play(self, game_id: str, move, serial: int | None = None, *,
                   token: str | None = None, idempotency_key: str | None = None) -> Move:
        """:meth:`Client.play <boxfish.client.Client.play>`, awaited: one
        ``Idempotency-Key`` for all the attempts of the move."""
        return await self._run(self._play(game_id, move, serial, token, idempotency_key))

    async def events(self, game_id: str, after: int | str = 0, *,
                     idle_timeout: float = 60.0) -> AsyncIterator[Move | GameReset]:
        """:meth:`Client.events <boxfish.client.Client.events>` as an async iterator
        (``async for move in api.events(game_id)``): every move after ``after`` (a serial or
        a position ``<serial>.<head>``) once, in order, across reconnections, each resumed
        from the position of the last item yielded; a :class:`~boxfish.client.GameReset`
        (the log's current state, the moves after it following) when the log no longer has
        the history yielded; ending after the game's last move. Closing it early
        (``aclose()``, or its task cancelled) closes the open stream."""
        steps = _core.Steps(self._follow(game_id, after, idle_timeout))
        try:
            while (effect := steps.next()) is not None:
                if not isinstance(effect, _core.Emit):
                    await self._settle(steps, effect)
                    continue
                yield effect.event
        finally:
            for stream in steps.release():
                await stream.exit.aclose()

    async def analyse(self, game_id: str | None = None, *, position: dict | None = None,
                      at: int | None = None, time_ms: int | None = None,
                      multipv: int | None = None, core: str | None = None, wait: float = 5.0,
                      timeout: float | None = None) -> Analysis:
        """:meth:`Client.analyse <boxfish.client.Client.analyse>`, awaited (the polling
        sleeps are ``asyncio.sleep``)."""
        return await self._run(self._analyse(game_id, position, at, time_ms, multipv, core,
                                             wait, timeout))

    async def review(self, game_id: str, *, time_ms: int | None = None, wait: float = 5.0,
                     timeout: float | None = None) -> Review:
        """:meth:`Client.review <boxfish.client.Client.review>`, awaited."""
        return await self._run(self._review(game_id, time_ms, wait, timeout))

    async def add_webhook(self, game_id: str, token: str | None, url: str,
                          events: list[str] | None = None) -> Webhook:
        """:meth:`Client.add_webhook <boxfish.client.Client.add_webhook>`, awaited."""
        return await self._run(self._add_webhook(game_id, token, url, events))

    async def export_record(self, game_id: str, at: int | None = None) -> str:
        """:meth:`Client.export_record <boxfish.client.Client.export_record>`, awaited."""
        return await self._run(self._export_record(game_id, at))

    async def animation(self, game_id: str, *, at: int | str | None = None,
                        size: int | None = None, review: str | None = None) -> bytes:
        """:meth:`Client.animation <boxfish.client.Client.animation>`, awaited."""
        return await self._run(self._animation(game_id, at, size, review))

    async def import_record(self, record: str, *, format: str = "boxfish",
                            width: int | None = None, height: int | None = None,
                            idempotency_key: str | None = None) -> Game:
        """:meth:`Client.import_record <boxfish.client.Client.import_record>`, awaited: one
        ``Idempotency-Key`` for all the attempts."""
        return await self._run(self._import_record(record, format, width, height,
                                                   idempotency_key))
