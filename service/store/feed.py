"""The feed of every game: what a recorder writes beside each game's log, in the same step.

Games are spread over :data:`FEED_PARTITIONS` partitions (:func:`partition_of`, fixed for a
store: it decides where a game's keys live). Each partition has one feed, an append-only log
of :class:`FeedEntry` with serials 1, 2, 3, ... and no gap: a ``created`` entry when a game is
created and a ``move`` entry per move appended, written by the same atomic step as the game's
metadata or move (so neither exists without the other). Like a game's log, a feed has a head
chain (:func:`next_feed_head`): a position ``serial.head`` names the whole history up to it.

The ordering promised: within a partition, the order in which its steps ran (so a game's
events in serial order, after its ``created`` entry); across partitions, none. A reader keeps
a :class:`FeedPosition` (one position per partition) and resumes from it. If the feed was
rewritten (a failover lost entries and others took their serials), a read from a position
whose head is no longer the stored one raises :class:`~service.errors.FeedRewritten`: the
reader must then read that partition from its start again (readers are idempotent per game
and head) and check what it derived from the games of that partition.

On a Redis Cluster each partition's keys (its feed and its games) share one hash tag, so the
partitions spread over the masters (16 partitions over 3 masters: 6, 5, 5), and no key is hot
for every write.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass, replace

from ..errors import FeedPositionInvalid
from .events import MoveEvent

#: Partitions of the games and their feeds. Fixed for a store: it decides the keys of games.
FEED_PARTITIONS = 16

FEED_CREATED = "created"
FEED_MOVE = "move"


def partition_of(game_id: str) -> int:
    """The partition of a game (CRC-32 of its id)."""
    return zlib.crc32(game_id.encode()) % FEED_PARTITIONS


def next_feed_head(head: str, game_id: str, kind: str, body: str) -> str:
    """The feed's head after an entry (the head of serial 0 is ``""``): the first 16 hex
    digits of SHA-1 over the previous head, the game id, the kind and the entry's body (the
    event's JSON, or the created game's JSON), each on its own line. The Redis scripts
    compute the same with ``redis.sha1hex``."""
    return hashlib.sha1(f"{head}\n{game_id}\n{kind}\n{body}".encode()).hexdigest()[:16]


def created_body(game: str, params: dict, created_at: int) -> str:
    """The body of a ``created`` entry: the game's static fields as JSON."""
    return json.dumps({"game": game, "params": params, "created_at": created_at},
                      sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One entry of a partition's feed: ``serial`` in the partition, the feed's ``head``
    after it, the game, and either the move event (``kind`` ``move``: :attr:`event`, with
    the game log's head after it) or the created game (``kind`` ``created``: :attr:`game`,
    :attr:`params`, :attr:`created_at`)."""

    partition: int
    serial: int
    head: str
    game_id: str
    kind: str
    body: str
    #: A move's game log head after it (``""`` for a ``created`` entry).
    game_head: str = ""

    @property
    def event(self) -> MoveEvent | None:
        """A ``move`` entry's event, with the game log's head after it."""
        if self.kind != FEED_MOVE:
            return None
        return replace(MoveEvent.from_json(self.body), head=self.game_head)

    @property
    def created(self) -> dict | None:
        """``{"game", "params", "created_at"}`` of a ``created`` entry."""
        return json.loads(self.body) if self.kind == FEED_CREATED else None

    @property
    def position(self) -> tuple[int, str]:
        return self.serial, self.head

    def to_dict(self) -> dict:
        """The entry as the feed endpoint serves it."""
        out = {"partition": self.partition, "serial": self.serial, "head": self.head,
               "game_id": self.game_id, "kind": self.kind}
        if self.kind == FEED_MOVE:
            event = self.event
            out["event"] = {**event.summary(), "scores": list(event.scores)
                            if event.scores is not None else None,
                            "to_move": event.to_move, "status": event.status, "at": event.at,
                            "head": self.game_head}
        else:
            out["game"] = self.created
        return out


_PART = re.compile(r"^(\d+):(\d+)\.([0-9a-f]{16})$")


@dataclass(frozen=True, slots=True)
class FeedPosition:
    """Where a reader of the feed is: per partition, the serial and head of the last entry
    it read (a partition not named: none read). Text form (:meth:`__str__`, :meth:`parse`):
    ``<partition>:<serial>.<head>`` joined by commas, e.g. ``0:12.5f0c2a9e41b7d803,3:4.…``;
    the empty string is the start."""

    parts: tuple[tuple[int, int, str], ...] = ()

    @classmethod
    def start(cls) -> FeedPosition:
        return cls()

    @classmethod
    def parse(cls, text: str) -> FeedPosition:
        """Raises :class:`~service.errors.FeedPositionInvalid` (a ``ValueError``)."""
        parts: dict[int, tuple[int, str]] = {}
        for item in filter(None, text.split(",")):
            m = _PART.match(item)
            if m is None:
                raise FeedPositionInvalid(text, f"{item!r} is not <partition>:<serial>.<head>")
            p, serial = int(m.group(1)), int(m.group(2))
            if not 0 <= p < FEED_PARTITIONS or p in parts or serial < 1:
                raise FeedPositionInvalid(text, f"{item!r}: a partition out of range, named "
                                                f"twice, or serial 0")
            parts[p] = (serial, m.group(3))
        return cls(tuple(sorted((p, s, h) for p, (s, h) in parts.items())))

    def __str__(self) -> str:
        return ",".join(f"{p}:{s}.{h}" for p, s, h in self.parts)

    def of(self, partition: int) -> tuple[int, str] | None:
        """The (serial, head) read last in ``partition``; None: none."""
        for p, s, h in self.parts:
            if p == partition:
                return s, h
        return None

    def after(self, entry: FeedEntry) -> FeedPosition:
        """This position moved past ``entry``."""
        return self.moved(entry.partition, (entry.serial, entry.head))

    def moved(self, partition: int, where: tuple[int, str] | None) -> FeedPosition:
        """This position with ``partition`` at ``where`` (None: at its start)."""
        rest = [x for x in self.parts if x[0] != partition]
        if where is not None:
            rest.append((partition, *where))
        return FeedPosition(tuple(sorted(rest)))
