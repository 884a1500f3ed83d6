"""An in-process LRU of rebuilt game states, keyed by (game id, serial).

Cached states are shared and must be treated as immutable: :meth:`StateCache.get` hands out
the cached object, and whoever wants to play on it calls ``state.copy()`` first. Rebuilding a
game at serial N starts from the newest cached state at or before N and replays only the
events after it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class StateCache:
    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int], object] = OrderedDict()
        self._serials: dict[str, set[int]] = {}
        self.hits = 0
        self.misses = 0

    def put(self, game_id: str, serial: int, state) -> None:
        with self._lock:
            key = (game_id, serial)
            self._entries[key] = state
            self._entries.move_to_end(key)
            self._serials.setdefault(game_id, set()).add(serial)
            while len(self._entries) > self.max_entries:
                (gid, s), _ = self._entries.popitem(last=False)
                serials = self._serials[gid]
                serials.discard(s)
                if not serials:
                    del self._serials[gid]

    def get(self, game_id: str, serial: int):
        """The state at exactly ``serial``, or None."""
        with self._lock:
            state = self._entries.get((game_id, serial))
            if state is None:
                self.misses += 1
                return None
            self.hits += 1
            self._entries.move_to_end((game_id, serial))
            return state

    def nearest(self, game_id: str, serial: int):
        """``(serial', state)`` with the greatest cached serial' <= ``serial``, or None."""
        with self._lock:
            below = [s for s in self._serials.get(game_id, ()) if s <= serial]
            if not below:
                self.misses += 1
                return None
            best = max(below)
            self._entries.move_to_end((game_id, best))
            if best == serial:
                self.hits += 1
            else:
                self.misses += 1
            return best, self._entries[(game_id, best)]

    def latest(self, game_id: str) -> int | None:
        """The greatest cached serial of ``game_id``, or None."""
        with self._lock:
            serials = self._serials.get(game_id)
            return max(serials) if serials else None

    def __len__(self) -> int:
        return len(self._entries)
