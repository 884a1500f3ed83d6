"""Projections: state derived from the feed of every game, kept up to date by a runner (see
docs/projections.md).

A :class:`Projection` says what one stored game contributes: :meth:`Projection.source` turns
the game as stored (its metadata and log) into a compact source (None: it contributes
nothing, e.g. a game not finished), :meth:`Projection.changes` turns a source into counter
increments and samples. The :class:`ProjectionRunner` reads the feed from the version's
checkpoints, and for each game whose feed entries may change what it contributes, projects
the game as the store has it now: when the log's head differs from the head in the version's
ledger, it retracts what the ledger says was counted and adds the new contribution, with the
ledger entry and the partition's checkpoint, in one step (``ProjectionStore.apply``). So:

* a replayed feed entry, or a game seen again at the same head, changes nothing;
* a game whose head changed (a failover lost its last moves) has its contribution retracted
  (and, if it is finished again, the new one added);
* a feed partition rewritten by a failover (``FeedRewritten``) has every game of its ledger
  checked against the stored log, then is read again from its start.

Versions: the pointer names the version readers read (``current``) and the one being built
(``target``). A new version (a schema the runner does not find built, or ``boxfish rebuild``)
is built from the start of the feed beside the current one, which the runner keeps following;
once the new one has taken in every entry, the pointer switches to it in one step and the old
version's keys are deleted after :data:`DROP_GRACE_S`.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import redis

from ..errors import FeedRewritten
from ..store.events import MoveEvent
from ..store.feed import FEED_MOVE, FEED_PARTITIONS
from ..store.game_meta import GameMeta
from ..store.projections import Apply, Changes, ProjectionStore, Versions
from ..store.recorder import Recorder

log = logging.getLogger(__name__)

#: Feed entries a runner reads from a partition at a time.
FEED_BATCH = 500
#: How long a runner that found nothing new waits before it looks again, in seconds.
POLL_S = 0.05
#: How long a replaced version's keys are kept after the switch, in seconds: longer than a
#: reader keeps the pointer it read (:data:`POINTER_TTL_S`) plus a read.
DROP_GRACE_S = 5.0
#: How long a reader keeps the version it read from the pointer, in seconds.
POINTER_TTL_S = 1.0
#: How long the runner waits after a Redis error before it tries again, in seconds.
RETRY_S = 1.0
#: How many times an apply is recomputed when another projector changed the ledger entry.
APPLY_ATTEMPTS = 5

# What a finished game's move entry says (MoveEvent.to_json): a cheap test of a feed entry's
# body before it is parsed.
_FINISHED = '"st":"finished"'


class Projection(ABC):
    """What a game contributes to one projection."""

    #: The projection's name (its keys, ``boxfish project NAME``).
    name: str
    #: The longest a list of samples grows.
    sample_cap: int = 5

    @property
    @abstractmethod
    def schema(self) -> str:
        """What the code builds: a version built by another schema is rebuilt (change it
        whenever :meth:`source` or :meth:`changes` would give something else). No spaces."""

    @abstractmethod
    def source(self, game_id: str, meta: GameMeta, events: list[MoveEvent]) -> str | None:
        """The compact source (no newline) of what the stored game contributes, or None:
        nothing."""

    @abstractmethod
    def changes(self, game_id: str, source: str) -> Changes:
        """The contribution of a game with ``source``: counter increments and samples
        added (its retraction is the same negated and removed)."""


def net_changes(old: Changes | None, new: Changes | None) -> Changes:
    """``new`` less ``old``: the counters' differences (zeros dropped), the samples only in
    ``old`` removed and those only in ``new`` added."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    samples: dict[tuple[str, str, str], bool] = {}
    if old is not None:
        for k, d in old.counts.items():
            counts[k] -= d
        for k in old.samples:
            samples[k] = False
    if new is not None:
        for k, d in new.counts.items():
            counts[k] += d
        for k in new.samples:
            if samples.pop(k, None) is None:
                samples[k] = True
    return Changes({k: d for k, d in counts.items() if d}, samples)


def ledger_entry(head: str, source: str) -> str:
    return f"{head} {source}"


def split_ledger_entry(entry: str) -> tuple[str, str | None]:
    """``(head, source)`` of a ledger entry (``("", None)`` for none)."""
    if not entry:
        return "", None
    head, _, source = entry.partition(" ")
    return head, source


class ProjectionRunner:
    """Keeps ``projection``'s versions in ``store`` up to date with ``recorder``'s feed.

    :meth:`sync` runs one round (every version built or being built takes in what is new);
    :meth:`run` runs rounds until stopped; :meth:`catch_up` until a round finds nothing new
    and the target is current. One runner per projection is enough; two are safe (each apply
    is a compare-and-set of the game's ledger entry), only wasteful.
    """

    def __init__(self, recorder: Recorder, store: ProjectionStore, projection: Projection, *,
                 batch: int = FEED_BATCH, drop_grace_s: float = DROP_GRACE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.recorder = recorder
        self.store = store
        self.projection = projection
        self.batch = batch
        self.drop_grace_s = drop_grace_s
        self.clock = clock
        #: version -> when it may be dropped (replaced by a switch this runner made).
        self._retired: dict[int, float] = {}
        #: Counters of what this runner did (for tests and the bench): entries read, applies
        #: made, partitions reconciled after a rewrite, switches.
        self.stats: dict[str, int] = defaultdict(int)

    @property
    def name(self) -> str:
        return self.projection.name

    def versions(self) -> Versions:
        """The pointer, with a target built by the projection's schema (a new version asked
        for when there is none, or the target's schema is another)."""
        return self.store.ensure_target(self.name, self.projection.schema)

    def sync(self) -> int:
        """One round: every version built or being built takes in up to a batch per
        partition; a target that took in nothing (it has every entry) becomes current, and
        a version it replaced is dropped once its grace is over. Returns the entries read."""
        versions = self.versions()
        read = 0
        target_read = None
        for version in dict.fromkeys(v for v in (versions.current, versions.target)
                                     if v is not None):
            n = self._round(version)
            read += n
            if version == versions.target:
                target_read = n
        if versions.target != versions.current and target_read == 0:
            switched, old = self.store.switch(self.name, versions.target)
            if switched:
                self.stats["switches"] += 1
                log.info("projection %s: version %s is current (was %s)", self.name,
                         versions.target, old)
                if old is not None:
                    self._retired[old] = self.clock() + self.drop_grace_s
        for version, due in list(self._retired.items()):
            if self.clock() >= due:
                self.store.drop(self.name, version)
                del self._retired[version]
        return read

    def catch_up(self, timeout_s: float = 60.0) -> Versions:
        """Rounds until one reads nothing and the target is current; returns the pointer.
        Raises TimeoutError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            read = self.sync()
            versions = self.store.versions(self.name)
            if read == 0 and versions.current == versions.target:
                return versions
            if time.monotonic() > deadline:
                raise TimeoutError(f"projection {self.name} did not catch up in {timeout_s} s")

    def run(self, stop: threading.Event, poll_s: float = POLL_S) -> None:
        """Rounds until ``stop`` is set, waiting ``poll_s`` after one that read nothing; a
        Redis error is logged and the round tried again after :data:`RETRY_S`."""
        while not stop.is_set():
            try:
                read = self.sync()
            except redis.RedisError:
                log.warning("projection %s: Redis error; trying again", self.name,
                            exc_info=True)
                stop.wait(RETRY_S)
                continue
            if not read:
                stop.wait(poll_s)

    # -- one version -----------------------------------------------------------------------

    def _round(self, version: int) -> int:
        checkpoints = self.store.checkpoints(self.name, version)
        return sum(self._partition(version, p, checkpoints.get(p))
                   for p in range(FEED_PARTITIONS))

    def _partition(self, version: int, partition: int, after: tuple[int, str] | None) -> int:
        """Take in the entries of ``partition`` after ``after``: each game with a finished
        move among them is projected as stored, in feed order, each apply carrying the
        checkpoint of that game's last such entry; then the checkpoint of the last entry."""
        try:
            entries = self.recorder.read_feed(partition, after, self.batch)
        except FeedRewritten:
            self._reconcile(version, partition)
            return 1
        if not entries:
            return 0
        self.stats["entries"] += len(entries)
        last: dict[str, int] = {}
        for i, entry in enumerate(entries):
            if entry.kind == FEED_MOVE and _FINISHED in entry.body:
                last.pop(entry.game_id, None)
                last[entry.game_id] = i
        games = list(last.items())
        ids = [g for g, _ in games]
        ledger = self.store.ledger(self.name, version, partition, ids)
        plans: list[tuple[int, Apply]] = []
        for (game_id, i), entry, got in zip(games, ledger, self.recorder.read_games(ids),
                                            strict=True):
            plan = self._plan(game_id, entry, *self._source_of(game_id, got))
            if plan is not None:
                plans.append((i, replace(plan, checkpoint=entries[i].position)))
        done = self.store.apply_many(self.name, version, partition, [a for _, a in plans],
                                     self.projection.sample_cap)
        carried = False
        for (i, plan), ok in zip(plans, done, strict=True):
            if ok:
                self._count(plan)
            else:  # another projector changed the entry: project it again, alone
                entry = self.store.ledger(self.name, version, partition, [plan.game_id])[0]
                ok = self._project(version, partition, plan.game_id, entry, plan.checkpoint)
            carried = carried or (ok and i == len(entries) - 1)
        if not carried:
            self.store.set_checkpoint(self.name, version, partition, entries[-1].position)
        return len(entries)

    def _reconcile(self, version: int, partition: int) -> None:
        """After ``partition``'s feed was rewritten: every game of its ledger projected as
        stored now, then the partition read again from its start."""
        log.warning("projection %s v%s: feed partition %s was rewritten; checking its games "
                    "and reading it again", self.name, version, partition)
        self.stats["reconciled"] += 1
        for game_id, entry in list(self.store.ledger_items(self.name, version, partition)):
            self._project(version, partition, game_id, entry, None)
        self.store.set_checkpoint(self.name, version, partition, None)

    def _source_of(self, game_id: str, got: tuple[GameMeta, list[MoveEvent]] | None
                   ) -> tuple[str, str | None]:
        """The game's log head and source, from its metadata and log read together
        (``Recorder.read_games``; None: no such game, ``("", None)``)."""
        if got is None:
            return "", None
        meta, events = got
        if meta.status != "finished":
            return meta.head, None
        return meta.head, self.projection.source(game_id, meta, events)

    def _plan(self, game_id: str, entry: str, head: str, source: str | None) -> Apply | None:
        """The apply that makes the version count ``game_id`` with ``head`` and ``source``
        as stored, given its ledger ``entry`` ('' for none); None: nothing to change."""
        old_head, old_source = split_ledger_entry(entry)
        if source is None and old_source is None:
            return None
        if source is not None and old_source is not None and head == old_head:
            return None
        p = self.projection
        changes = net_changes(
            p.changes(game_id, old_source) if old_source is not None else None,
            p.changes(game_id, source) if source is not None else None)
        value = ledger_entry(head, source) if source is not None else ""
        return Apply(game_id, entry, value, changes, None)

    def _count(self, plan: Apply) -> None:
        self.stats["applies"] += 1
        if plan.expected:
            self.stats["retractions"] += 1

    def _project(self, version: int, partition: int, game_id: str, entry: str,
                 checkpoint: tuple[int, str] | None) -> bool:
        """Make the version count ``game_id`` as stored now, given its ledger ``entry``
        ('' for none); with ``checkpoint``, set the partition's in the same step. Returns
        whether anything was written."""
        for _ in range(APPLY_ATTEMPTS):
            got = self.recorder.read_games([game_id])[0]
            plan = self._plan(game_id, entry, *self._source_of(game_id, got))
            if plan is None:
                return False
            plan = replace(plan, checkpoint=checkpoint)
            if self.store.apply_many(self.name, version, partition, [plan],
                                     self.projection.sample_cap)[0]:
                self._count(plan)
                return True
            entry = self.store.ledger(self.name, version, partition, [game_id])[0]
        raise RuntimeError(f"projection {self.name}: the ledger entry of {game_id} kept "
                           f"changing")
