"""Reading the feed of every game (:mod:`service.store.feed`) from a saved position: what the
operators' ``GET /v1/feed`` serves and what in-process readers use.

A read gives :class:`FeedItem` in order, each with the position after it: an ``entry`` (a game
created, a move), or ``rewritten`` when a partition no longer has the history the position
names (a failover lost entries): the reader is then told so and that partition is read again
from its start, so a reader that stores each item's position misses nothing and sees every
history change. Readers are expected to be idempotent per game and head.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import FeedRewritten
from ..store.feed import FEED_PARTITIONS, FeedEntry, FeedPosition
from ..store.recorder import Recorder

ENTRY = "entry"
REWRITTEN = "rewritten"


@dataclass(frozen=True, slots=True)
class FeedItem:
    """An entry of the feed, or the news that ``partition`` was rewritten after ``serial``
    (its reader starts it again); ``position`` is where a reader is after this item."""

    kind: str
    position: FeedPosition
    entry: FeedEntry | None = None
    partition: int | None = None
    serial: int | None = None

    def to_dict(self) -> dict:
        if self.kind == ENTRY:
            return {**self.entry.to_dict(), "position": str(self.position)}
        return {"kind": REWRITTEN, "partition": self.partition, "serial": self.serial,
                "position": str(self.position)}


def check_partitions(partitions: Iterable[int] | None) -> list[int]:
    """The partitions named (None: all), sorted, each once; ``ValueError`` for one out of
    range."""
    if partitions is None:
        return list(range(FEED_PARTITIONS))
    parts = sorted(set(partitions))
    bad = [p for p in parts if not 0 <= p < FEED_PARTITIONS]
    if bad:
        raise ValueError(f"partitions are 0 to {FEED_PARTITIONS - 1}, not {bad}")
    return parts


def read_feed(recorder: Recorder, position: FeedPosition, partitions: Iterable[int] | None = None,
              limit: int = 1000, timeout_s: float = 0.0) -> list[FeedItem]:
    """Up to ``limit`` items after ``position`` in ``partitions`` (None: all), waiting up to
    ``timeout_s`` for one. A rewritten partition gives a ``rewritten`` item, and its entries
    from its start follow."""
    parts = check_partitions(partitions)
    items: list[FeedItem] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            entries = recorder.follow_feed(position, max(0.0, deadline - time.monotonic()),
                                           limit - len(items), partitions=parts)
        except FeedRewritten as exc:
            position = position.moved(exc.partition, None)
            items.append(FeedItem(REWRITTEN, position, partition=exc.partition,
                                  serial=exc.serial))
            if len(items) >= limit:
                return items
            continue
        for entry in entries:
            position = position.after(entry)
            items.append(FeedItem(ENTRY, position, entry=entry))
        return items


def follow(recorder: Recorder, position: FeedPosition, partitions: Iterable[int] | None,
           wait_s: float, limit: int = 1000) -> Iterator[list[FeedItem]]:
    """Pages of items for ever, each after the last; an empty page after ``wait_s`` with
    nothing new (a reader's chance to send a keep-alive)."""
    while True:
        items = read_feed(recorder, position, partitions, limit, wait_s)
        if items:
            position = items[-1].position
        yield items
