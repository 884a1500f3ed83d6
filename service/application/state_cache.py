"""An in-process LRU of rebuilt game states, keyed by (game id, serial).

Cached states are shared and must be treated as immutable: :meth:`StateCache.entry` hands
out the cached object, and whoever wants to play on it calls ``state.copy()`` first. Rebuilding a
game at serial N starts from the newest cached state at or before N and replays only the
events after it.

Each state is kept with the head it was built to (:func:`service.store.recorder.next_head`:
the identity of the log position): after a failover lost moves, the log may hold other moves
at the same serials, and a state is good only while its head is the log's.
:meth:`StateCache.entry` and :meth:`StateCache.nearest_entry` return it; :meth:`StateCache.drop`
forgets a game's states (all, or those above a serial).

The entries are a ``cachetools.LRUCache`` (:class:`SerialIndexedLRU`) that also keeps, per
game, the set of its cached serials, updated on every insertion and every removal (eviction
included), so :meth:`StateCache.nearest_entry` and :meth:`StateCache.latest` need not scan the
cache.
"""

from __future__ import annotations

import threading

from cachetools import LRUCache


class SerialIndexedLRU(LRUCache):
    """An LRU of ``(game id, serial) -> state`` with the index ``serials``: game id -> the
    serials of that game in the cache (a game with none is not in the index)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize)
        self.serials: dict[str, set[int]] = {}

    def __setitem__(self, key: tuple[str, int], value) -> None:
        super().__setitem__(key, value)  # evicts (through __delitem__) first when full
        game_id, serial = key
        self.serials.setdefault(game_id, set()).add(serial)

    def __delitem__(self, key: tuple[str, int]) -> None:
        # Every removal comes here: popitem (eviction), pop and del.
        super().__delitem__(key)
        game_id, serial = key
        serials = self.serials[game_id]
        serials.discard(serial)
        if not serials:
            del self.serials[game_id]


class StateCache:
    """The states, with hit and miss counters; safe to share between threads."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._lock = threading.Lock()
        self._entries = SerialIndexedLRU(max_entries)
        self.hits = 0
        self.misses = 0

    @property
    def max_entries(self) -> int:
        return self._entries.maxsize

    def put(self, game_id: str, serial: int, state, head: str) -> None:
        with self._lock:
            self._entries[(game_id, serial)] = (state, head)

    def entry(self, game_id: str, serial: int) -> tuple[object, str] | None:
        """``(state, head)`` at exactly ``serial``, or None."""
        with self._lock:
            found = self._entries.get((game_id, serial))
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            return found

    def nearest_entry(self, game_id: str, serial: int):
        """``(serial', state, head)`` with the greatest cached serial' <= ``serial``, or None."""
        with self._lock:
            below = [s for s in self._entries.serials.get(game_id, ()) if s <= serial]
            if not below:
                self.misses += 1
                return None
            best = max(below)
            if best == serial:
                self.hits += 1
            else:
                self.misses += 1
            state, head = self._entries[(game_id, best)]  # a read marks it recently used
            return best, state, head

    def drop(self, game_id: str, above: int | None = None) -> None:
        """Forget the states of ``game_id``: all of them, or those with a serial > ``above``."""
        with self._lock:
            for serial in list(self._entries.serials.get(game_id, ())):
                if above is None or serial > above:
                    del self._entries[(game_id, serial)]

    def latest(self, game_id: str) -> int | None:
        """The greatest cached serial of ``game_id``, or None."""
        with self._lock:
            serials = self._entries.serials.get(game_id)
            return max(serials) if serials else None

    def __len__(self) -> int:
        return len(self._entries)
