"""The webhook registrations of games: the storage port and its backends, in memory and Redis.

A registration is a JSON object with a string ``id``, kept with its game: in Redis a Hash
(webhook id -> JSON) under the game's hash tag (:meth:`KeySpace.game_webhooks`), so on a Redis
Cluster it is on the game's master, replicated with its log, and the append script reads it in
the step that appends a move (:attr:`service.store.recorder.Appended.webhooks`). It is written
without ``WAIT``: replicated as the log is, asynchronously (``min_replicas`` is the appends'
promise). Every backend passes the contract suite in
``tests/service/test_webhook_registrations_contract.py``.
"""

from __future__ import annotations

import copy
import json
import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import redis
from redis.cluster import RedisCluster

from ..errors import GameNotFound
from .keys import KeySpace

if TYPE_CHECKING:
    from .recorder import Recorder


class WebhookRegistrations(ABC):
    """The games' webhook registrations. Thread-safe."""

    @abstractmethod
    def add(self, game_id: str, hook: dict, limit: int) -> bool:
        """Store ``hook`` (a JSON object with a string ``id``) as a registration of the game,
        atomically unless the game has ``limit`` registrations already: True if stored, False
        at the limit (nothing stored). Raises :class:`GameNotFound`, ``ValueError`` if the
        game has a registration with that id."""

    @abstractmethod
    def list(self, game_id: str) -> list[dict]:
        """The game's registrations, in no particular order (none for an unknown game)."""

    @abstractmethod
    def get(self, game_id: str, webhook_id: str) -> dict | None:
        """The registration, or None (none with that id, or no such game)."""

    @abstractmethod
    def update(self, game_id: str, webhook_id: str, fields: dict) -> dict | None:
        """Atomically set ``fields`` (not ``id``) in the registration; returns it as stored
        now, or None when there is none (nothing stored)."""

    @abstractmethod
    def delete(self, game_id: str, webhook_id: str) -> bool:
        """Remove the registration; False if there was none."""


class InMemoryWebhookRegistrations(WebhookRegistrations):
    """Registrations in process memory, of the games of ``recorder`` (asked whether a game
    exists). The in-memory recorder keeps one (``InMemoryRecorder.webhook_registrations``),
    which its appends read."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._lock = threading.Lock()
        #: game id -> webhook id -> registration
        self._hooks: dict[str, dict[str, dict]] = {}

    def add(self, game_id, hook, limit):
        self._recorder.get_meta(game_id)  # a game is never deleted: it exists from now on
        with self._lock:
            hooks = self._hooks.setdefault(game_id, {})
            if hook["id"] in hooks:
                raise ValueError(f"webhook {hook['id']!r} exists")
            if len(hooks) >= limit:
                return False
            hooks[hook["id"]] = copy.deepcopy(hook)
            return True

    def list(self, game_id):
        with self._lock:
            return copy.deepcopy(list(self._hooks.get(game_id, {}).values()))

    def get(self, game_id, webhook_id):
        with self._lock:
            return copy.deepcopy(self._hooks.get(game_id, {}).get(webhook_id))

    def update(self, game_id, webhook_id, fields):
        with self._lock:
            hook = self._hooks.get(game_id, {}).get(webhook_id)
            if hook is None:
                return None
            hook.update(copy.deepcopy({k: v for k, v in fields.items() if k != "id"}))
            return copy.deepcopy(hook)

    def delete(self, game_id, webhook_id):
        with self._lock:
            return self._hooks.get(game_id, {}).pop(webhook_id, None) is not None


# KEYS: the game's meta, its registrations. ARGV: id, JSON, limit.
# Returns 'ok' | 'nogame' | 'taken' | 'limit'.
ADD_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 'nogame' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 'taken' end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then return 'limit' end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 'ok'
"""

# KEYS: the game's meta (unused: named for the game's slot, as by the other scripts), its
# registrations. ARGV: id, the JSON read, the JSON to write. Sets it only if the stored one is
# still the one read: 1, else 0 (changed or deleted meanwhile).
SWAP_LUA = """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
"""


class RedisWebhookRegistrations(WebhookRegistrations):
    """Registrations on the move store's Redis ``connection`` (one server or a Redis Cluster),
    under ``keys``: the game's Hash :meth:`KeySpace.game_webhooks`."""

    def __init__(self, connection: redis.Redis | RedisCluster,
                 keys: KeySpace | None = None) -> None:
        self.redis = connection
        self.keys = keys or KeySpace()
        self._add = connection.register_script(ADD_LUA)
        self._swap = connection.register_script(SWAP_LUA)

    def add(self, game_id, hook, limit):
        keys = [self.keys.game_meta(game_id), self.keys.game_webhooks(game_id)]
        res = self._add(keys=keys, args=[hook["id"], json.dumps(hook), limit])
        res = res.decode() if isinstance(res, bytes) else res
        if res == "nogame":
            raise GameNotFound(game_id)
        if res == "taken":
            raise ValueError(f"webhook {hook['id']!r} exists")
        return res == "ok"

    def list(self, game_id):
        return [json.loads(v) for v in self.redis.hvals(self.keys.game_webhooks(game_id))]

    def get(self, game_id, webhook_id):
        raw = self.redis.hget(self.keys.game_webhooks(game_id), webhook_id)
        return json.loads(raw) if raw is not None else None

    def update(self, game_id, webhook_id, fields):
        """A compare-and-set of the registration's JSON, read again while another writer
        changes it in between."""
        key = self.keys.game_webhooks(game_id)
        while True:
            raw = self.redis.hget(key, webhook_id)
            if raw is None:
                return None
            hook = json.loads(raw)
            hook.update({k: v for k, v in fields.items() if k != "id"})
            if self._swap(keys=[self.keys.game_meta(game_id), key],
                          args=[webhook_id, raw, json.dumps(hook)]):
                return hook

    def delete(self, game_id, webhook_id):
        return bool(self.redis.hdel(self.keys.game_webhooks(game_id), webhook_id))
