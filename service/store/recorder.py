"""The recorder: the event log's storage port, and its in-memory backend.

A recorder keeps, per game, metadata (:class:`~service.store.game_meta.GameMeta`) and an
append-only log of :class:`MoveEvent` with serials 1, 2, 3, ... and no gap, each with the log's
head after it (:func:`next_head`). :meth:`Recorder.append` is an atomic compare-and-append: it
stores the event only if its serial is the current serial + 1 (and its expected head the
current head), and records the idempotency key with it in the same step. Idempotency records
may expire (``idempotency_ttl_s``): after that the key is a new key. A backend that replicates
may be asked to acknowledge an append only once replicas have it; when they do not in time it
raises :class:`NotReplicated` (the event is stored all the same). Every backend passes the
shared contract suite in ``tests/service/test_recorder_contract.py``.

A game's webhook registrations are kept with it, behind a port of their own
(:mod:`service.store.webhook_registrations`); a new append returns them, read in its step.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..errors import (  # noqa: F401 - re-exported: the recorder's contract raises them
    FeedRewritten,
    GameIdTaken,
    GameNotFound,
    IdempotencyKeyReused,
    NotReplicated,
    SerialConflict,
    StaleHead,
)
from .events import MoveEvent
from .feed import (
    FEED_CREATED,
    FEED_MOVE,
    FEED_PARTITIONS,
    FeedEntry,
    FeedPosition,
    created_body,
    next_feed_head,
    partition_of,
)
from .game_meta import GameMeta
from .webhook_registrations import InMemoryWebhookRegistrations

#: How often :meth:`Recorder.follow_feed` looks for new entries while it waits, in seconds.
FEED_POLL_S = 0.05

#: How many of the newest games a recorder's :meth:`Recorder.recent_games` index keeps by
#: default (the service passes ``Settings.recent_games_kept``).
DEFAULT_RECENT_KEPT = 1000


def next_head(head: str, event: MoveEvent) -> str:
    """The head of the log after ``event``, appended to a log whose head was ``head`` (the
    head of serial 0 is ``""``): the first 16 hex digits of SHA-1 over the previous head, a
    newline and the event's stored JSON. A chain, so a head names the whole history up to its
    serial. The Redis append script computes the same with ``redis.sha1hex``."""
    return hashlib.sha1(f"{head}\n{event.to_json()}".encode()).hexdigest()[:16]


def replay_head(head: str, events) -> str:
    """The head after ``events`` appended in order to a log whose head was ``head``."""
    for event in events:
        head = next_head(head, event)
    return head


@dataclass(frozen=True, slots=True)
class Appended:
    """The outcome of :meth:`Recorder.append`: the stored event and whether it is a replay of
    an earlier append with the same idempotency key and body (then nothing was appended)."""

    event: MoveEvent
    replayed: bool = False
    #: The game's webhook registrations (as ``WebhookRegistrations.list`` returns them) read
    #: in the same atomic step as a new append, so that the move's listeners need not read
    #: them again; None when not read (a replay).
    webhooks: tuple[dict, ...] | None = None


class Recorder(ABC):
    """Storage of game metadata and move logs. Thread-safe."""

    @abstractmethod
    def create_game(self, meta: GameMeta) -> None:
        """Store a new game (serial 0, head ``""``) with its static fields (``engine``
        included, in the same step). Raises :class:`~service.errors.GameIdTaken` (a
        ``ValueError``) if the id is taken."""

    @abstractmethod
    def get_meta(self, game_id: str) -> GameMeta:
        """Raises :class:`GameNotFound`."""

    @abstractmethod
    def append(self, game_id: str, expected_serial: int, event: MoveEvent,
               idempotency_key: str | None = None, fingerprint: str = "",
               expected_head: str | None = None) -> Appended:
        """Atomically append ``event`` (whose serial must equal ``expected_serial``).

        In one step: if ``idempotency_key`` was recorded before, return the event it appended
        (``replayed=True``) when ``fingerprint`` matches, else raise
        :class:`IdempotencyKeyReused`; if ``expected_serial`` is not current + 1 raise
        :class:`SerialConflict`; if ``expected_head`` is given and differs from the game's
        head, raise :class:`StaleHead`; else append, set the game's serial, status and head
        (:func:`next_head` of its head) from the event, record the key, and return the event
        with that head (``Appended.event.head``) and the game's webhook registrations as they
        are at that step (``Appended.webhooks``). A replay's event carries the head stored
        with it. Raises :class:`GameNotFound`.

        A backend configured to wait for replicas raises :class:`NotReplicated` after storing
        the event (or finding its record on a retry) when they do not confirm it in time.
        """

    @abstractmethod
    def lookup_idempotency(self, game_id: str, key: str) -> tuple[str, int] | None:
        """``(fingerprint, serial)`` recorded for ``key``, or None (never recorded, or
        expired). Raises :class:`GameNotFound`. A backend configured to wait for replicas
        returns a record only once they have it (so that an answer built from it promises as
        much as an append), else raises :class:`NotReplicated`."""

    @abstractmethod
    def read(self, game_id: str, after: int = 0, upto: int | None = None) -> list[MoveEvent]:
        """Events with ``after < serial <= upto`` in order (``upto`` None: to the end), each
        with the log's head after it (``MoveEvent.head``). Raises :class:`GameNotFound`."""

    @abstractmethod
    def wait(self, game_id: str, after: int, timeout_s: float) -> list[MoveEvent]:
        """Like ``read(game_id, after)`` but blocks up to ``timeout_s`` until there is at least
        one event; returns ``[]`` on timeout."""

    def read_games(self, game_ids: list[str]) -> list[tuple[GameMeta, list[MoveEvent]] | None]:
        """Each game's metadata and whole log, each game's two read in one step (the log's
        last head is the metadata's), None for a game not found. Backends may read many
        games in one round trip."""
        out = []
        for game_id in game_ids:
            try:
                while True:
                    meta, events = self.get_meta(game_id), self.read(game_id)
                    if (events[-1].head if events else "") == meta.head:
                        break
                out.append((meta, events))
            except GameNotFound:
                out.append(None)
        return out

    @abstractmethod
    def recent_games(self, limit: int) -> list[GameMeta]:
        """The metadata of up to ``limit`` (>= 1) games, newest ``created_at`` first, from an
        index of the ``recent_kept`` newest games created (older ones drop out of it as new
        ones come; games created in the same millisecond in any order). A game whose metadata
        is gone is skipped, so fewer than ``limit`` may come back although more exist."""

    # -- the feed of every game (service.store.feed) ---------------------------------------

    @abstractmethod
    def read_feed(self, partition: int, after: tuple[int, str] | None = None,
                  limit: int = 1000) -> list[FeedEntry]:
        """Up to ``limit`` entries of ``partition``'s feed after the entry ``after`` names
        (``(serial, head)``; None: from the start), in order. Raises
        :class:`~service.errors.FeedRewritten` when the feed has no entry at that serial with
        that head (a failover rewrote it)."""

    def feed_heads(self) -> dict[int, tuple[int, str]]:
        """The last (serial, head) of every partition's feed that has entries."""
        out = {}
        for p in range(FEED_PARTITIONS):
            last = self._feed_last(p)
            if last is not None:
                out[p] = last
        return out

    @abstractmethod
    def _feed_last(self, partition: int) -> tuple[int, str] | None:
        """The last (serial, head) of ``partition``'s feed; None: empty."""

    def follow_feed(self, position: FeedPosition, timeout_s: float, limit: int = 1000,
                    poll_s: float = FEED_POLL_S,
                    partitions: Iterable[int] | None = None) -> list[FeedEntry]:
        """The entries after ``position`` in ``partitions`` (None: every one; each
        partition's in order, the partitions one after another), at most ``limit``; waits up
        to ``timeout_s`` for at least one (polling every ``poll_s``; ``[]`` on timeout).
        Raises :class:`~service.errors.FeedRewritten` for the first partition rewritten."""
        parts = range(FEED_PARTITIONS) if partitions is None else list(partitions)
        deadline = time.monotonic() + timeout_s
        while True:
            out: list[FeedEntry] = []
            for p in parts:
                if len(out) >= limit:
                    break
                out += self.read_feed(p, position.of(p), limit - len(out))
            remaining = deadline - time.monotonic()
            if out or remaining <= 0:
                return out
            time.sleep(min(poll_s, remaining))

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (connections)."""


def _check_event(expected_serial: int, event: MoveEvent) -> None:
    if event.serial != expected_serial:
        raise ValueError(f"event serial {event.serial} != expected serial {expected_serial}")


def _check_recent_kept(recent_kept: int) -> None:
    if not isinstance(recent_kept, int) or recent_kept < 1:
        raise ValueError(f"recent_kept must be an integer >= 1, not {recent_kept!r}")


def _check_ttl(idempotency_ttl_s: float | None) -> None:
    if idempotency_ttl_s is not None and not 0 < idempotency_ttl_s < math.inf:
        raise ValueError(f"idempotency_ttl_s must be positive and finite (None: no expiry), "
                         f"not {idempotency_ttl_s!r}")


class InMemoryRecorder(Recorder):
    """A recorder in process memory: for unit tests and single-process experiments.

    ``idempotency_ttl_s``: how long an idempotency record lasts (None: for ever). There are no
    replicas, so there is nothing to wait for: :class:`NotReplicated` is never raised.
    ``recent_kept``: how many of the newest games :meth:`recent_games` can list.
    :attr:`webhook_registrations` keeps its games' registrations; an append reads them.
    """

    def __init__(self, *, idempotency_ttl_s: float | None = None,
                 recent_kept: int = DEFAULT_RECENT_KEPT) -> None:
        _check_ttl(idempotency_ttl_s)
        _check_recent_kept(recent_kept)
        self.idempotency_ttl_s = idempotency_ttl_s
        self.recent_kept = recent_kept
        self.webhook_registrations = InMemoryWebhookRegistrations(self)
        self._cond = threading.Condition()
        self._meta: dict[str, GameMeta] = {}
        self._logs: dict[str, list[MoveEvent]] = {}
        #: game id -> key -> (fingerprint, serial, monotonic expiry or None)
        self._idem: dict[str, dict[str, tuple[str, int, float | None]]] = {}
        self._feeds: list[list[FeedEntry]] = [[] for _ in range(FEED_PARTITIONS)]

    def _feed_add(self, game_id: str, kind: str, body: str, game_head: str = "") -> None:
        feed = self._feeds[partition_of(game_id)]
        head = next_feed_head(feed[-1].head if feed else "", game_id, kind, body)
        feed.append(FeedEntry(partition_of(game_id), len(feed) + 1, head, game_id, kind,
                              body, game_head))

    def _record(self, game_id: str, key: str) -> tuple[str, int] | None:
        rec = self._idem[game_id].get(key)
        if rec is None:
            return None
        if rec[2] is not None and time.monotonic() >= rec[2]:
            del self._idem[game_id][key]
            return None
        return rec[0], rec[1]

    def create_game(self, meta: GameMeta) -> None:
        with self._cond:
            if meta.game_id in self._meta:
                raise GameIdTaken(meta.game_id)
            self._meta[meta.game_id] = replace(meta, serial=0, head="")
            self._logs[meta.game_id] = []
            self._idem[meta.game_id] = {}
            self._feed_add(meta.game_id, FEED_CREATED,
                           created_body(meta.game, meta.params, meta.created_at))

    def get_meta(self, game_id: str) -> GameMeta:
        with self._cond:
            try:
                return self._meta[game_id]
            except KeyError:
                raise GameNotFound(game_id) from None

    def append(self, game_id, expected_serial, event, idempotency_key=None, fingerprint="",
               expected_head=None):
        _check_event(expected_serial, event)
        with self._cond:
            meta = self.get_meta(game_id)
            log = self._logs[game_id]
            if idempotency_key is not None:
                rec = self._record(game_id, idempotency_key)
                if rec is not None:
                    if rec[0] != fingerprint:
                        raise IdempotencyKeyReused(rec[1])
                    return Appended(log[rec[1] - 1], replayed=True)
            if expected_serial != meta.serial + 1:
                raise SerialConflict(meta.serial)
            if expected_head is not None and meta.head != expected_head:
                raise StaleHead(meta.serial)
            head = next_head(meta.head, event)
            log.append(replace(event, head=head))
            self._feed_add(game_id, FEED_MOVE, event.to_json(), head)
            self._meta[game_id] = replace(meta, serial=event.serial, status=event.status,
                                          head=head)
            if idempotency_key is not None:
                ttl = self.idempotency_ttl_s
                self._idem[game_id][idempotency_key] = (
                    fingerprint, event.serial, None if ttl is None else time.monotonic() + ttl)
            self._cond.notify_all()
            return Appended(replace(event, head=head),
                            webhooks=tuple(self.webhook_registrations.list(game_id)))

    def lookup_idempotency(self, game_id, key):
        with self._cond:
            self.get_meta(game_id)
            return self._record(game_id, key)

    def read(self, game_id, after=0, upto=None):
        with self._cond:
            self.get_meta(game_id)
            log = self._logs[game_id]
            return list(log[max(after, 0):upto])

    def recent_games(self, limit):
        with self._cond:
            # Newest first; of equal created_at, the one created later first.
            newest = sorted(reversed(list(self._meta.values())), key=lambda m: m.created_at,
                            reverse=True)
            return newest[:min(limit, self.recent_kept)]

    def read_feed(self, partition, after=None, limit=1000):
        with self._cond:
            feed = self._feeds[partition]
            start = 0
            if after is not None:
                serial, head = after
                if serial > len(feed) or feed[serial - 1].head != head:
                    raise FeedRewritten(partition, serial)
                start = serial
            return feed[start:start + limit]

    def _feed_last(self, partition):
        with self._cond:
            feed = self._feeds[partition]
            return (len(feed), feed[-1].head) if feed else None

    def wait(self, game_id, after, timeout_s):
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                events = self.read(game_id, after)
                remaining = deadline - time.monotonic()
                if events or remaining <= 0:
                    return events
                self._cond.wait(remaining)
