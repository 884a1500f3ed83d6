"""The recorder: the storage interface of the move store, and its in-memory backend.

A recorder keeps, per game, metadata and an append-only log of :class:`MoveEvent` with serials
1, 2, 3, ... and no gap. :meth:`Recorder.append` is an atomic compare-and-append: it stores the
event only if its serial is the current serial + 1, and records the idempotency key with it in
the same step. Every backend passes the shared contract suite in
``tests/service/test_recorder_contract.py``.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

from .events import MoveEvent


class GameNotFound(LookupError):
    """No game with that id."""


class SerialConflict(Exception):
    """The log has moved on: the expected serial is not the current serial + 1."""

    def __init__(self, current_serial: int) -> None:
        self.current_serial = current_serial
        super().__init__(f"the current serial is {current_serial}")


class IdempotencyKeyReused(Exception):
    """The idempotency key was already used with a different request body."""

    def __init__(self, serial: int) -> None:
        self.serial = serial
        super().__init__(f"idempotency key already used for serial {serial} with another body")


@dataclass(frozen=True, slots=True)
class GameMeta:
    game_id: str
    game: str
    params: dict
    token_sha256: str
    created_at: int  # ms since the epoch
    serial: int = 0
    status: str = "in_progress"


@dataclass(frozen=True, slots=True)
class Appended:
    """The outcome of :meth:`Recorder.append`: the stored event and whether it is a replay of
    an earlier append with the same idempotency key and body (then nothing was appended)."""

    event: MoveEvent
    replayed: bool = False


class Recorder(ABC):
    """Storage of game metadata and move logs. Thread-safe."""

    @abstractmethod
    def create_game(self, meta: GameMeta) -> None:
        """Store a new game (serial 0). Raises ``ValueError`` if the id is taken."""

    @abstractmethod
    def get_meta(self, game_id: str) -> GameMeta:
        """Raises :class:`GameNotFound`."""

    @abstractmethod
    def append(self, game_id: str, expected_serial: int, event: MoveEvent,
               idempotency_key: str | None = None, fingerprint: str = "") -> Appended:
        """Atomically append ``event`` (whose serial must equal ``expected_serial``).

        In one step: if ``idempotency_key`` was recorded before, return the event it appended
        (``replayed=True``) when ``fingerprint`` matches, else raise
        :class:`IdempotencyKeyReused`; if ``expected_serial`` is not current + 1 raise
        :class:`SerialConflict`; else append, set the game's serial and status from the event
        and record the key. Raises :class:`GameNotFound`.
        """

    @abstractmethod
    def lookup_idempotency(self, game_id: str, key: str) -> tuple[str, int] | None:
        """``(fingerprint, serial)`` recorded for ``key``, or None."""

    @abstractmethod
    def read(self, game_id: str, after: int = 0, upto: int | None = None) -> list[MoveEvent]:
        """Events with ``after < serial <= upto`` in order (``upto`` None: to the end).
        Raises :class:`GameNotFound`."""

    @abstractmethod
    def wait(self, game_id: str, after: int, timeout_s: float) -> list[MoveEvent]:
        """Like ``read(game_id, after)`` but blocks up to ``timeout_s`` until there is at least
        one event; returns ``[]`` on timeout."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (connections)."""


def _check_event(expected_serial: int, event: MoveEvent) -> None:
    if event.serial != expected_serial:
        raise ValueError(f"event serial {event.serial} != expected serial {expected_serial}")


class InMemoryRecorder(Recorder):
    """A recorder in process memory: for unit tests and single-process experiments."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._meta: dict[str, GameMeta] = {}
        self._logs: dict[str, list[MoveEvent]] = {}
        self._idem: dict[str, dict[str, tuple[str, int]]] = {}

    def create_game(self, meta: GameMeta) -> None:
        with self._cond:
            if meta.game_id in self._meta:
                raise ValueError(f"game {meta.game_id!r} exists")
            self._meta[meta.game_id] = replace(meta, serial=0)
            self._logs[meta.game_id] = []
            self._idem[meta.game_id] = {}

    def get_meta(self, game_id: str) -> GameMeta:
        with self._cond:
            try:
                return self._meta[game_id]
            except KeyError:
                raise GameNotFound(game_id) from None

    def append(self, game_id, expected_serial, event, idempotency_key=None, fingerprint=""):
        _check_event(expected_serial, event)
        with self._cond:
            meta = self.get_meta(game_id)
            log = self._logs[game_id]
            if idempotency_key is not None:
                rec = self._idem[game_id].get(idempotency_key)
                if rec is not None:
                    if rec[0] != fingerprint:
                        raise IdempotencyKeyReused(rec[1])
                    return Appended(log[rec[1] - 1], replayed=True)
            if expected_serial != meta.serial + 1:
                raise SerialConflict(meta.serial)
            log.append(event)
            self._meta[game_id] = replace(meta, serial=event.serial, status=event.status)
            if idempotency_key is not None:
                self._idem[game_id][idempotency_key] = (fingerprint, event.serial)
            self._cond.notify_all()
            return Appended(event)

    def lookup_idempotency(self, game_id, key):
        with self._cond:
            self.get_meta(game_id)
            return self._idem[game_id].get(key)

    def read(self, game_id, after=0, upto=None):
        with self._cond:
            self.get_meta(game_id)
            log = self._logs[game_id]
            return list(log[max(after, 0):upto])

    def wait(self, game_id, after, timeout_s):
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                events = self.read(game_id, after)
                remaining = deadline - time.monotonic()
                if events or remaining <= 0:
                    return events
                self._cond.wait(remaining)
