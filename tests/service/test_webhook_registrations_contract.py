"""The webhook registrations' contract, run against every backend of the recorder contract
(in-memory, Redis, Redis Cluster, Redis Cluster with appends waiting for a replica), each with
the registrations kept with the recorder's games: an in-memory recorder's own, else those on
the recorder's Redis connection."""

from __future__ import annotations

import threading

import pytest

from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import GameNotFound, InMemoryRecorder
from boxfish.service.store.redis_recorder import RedisRecorder
from boxfish.service.store.webhook_registrations import RedisWebhookRegistrations

from .test_recorder_contract import cluster_client, ev, make_recorder, new_game  # noqa: F401


@pytest.fixture
def stores(make_recorder):  # noqa: F811 - the fixture imported above
    """``(recorder, registrations)`` of the backend under test."""
    recorder = make_recorder()
    if isinstance(recorder, InMemoryRecorder):
        return recorder, recorder.webhook_registrations
    return recorder, RedisWebhookRegistrations(recorder.redis, recorder.keys)


def hook(webhook_id: str, **fields) -> dict:
    return {"id": webhook_id, "url": f"https://example.com/{webhook_id}",
            "events": ["move.appended"], "active": True, "disabled_reason": None, **fields}


def test_webhooks_add_get_list_delete(stores):
    recorder, hooks = stores
    gid, other = new_game(recorder), new_game(recorder)
    assert hooks.list(gid) == [] and hooks.get(gid, "wh_a") is None
    assert hooks.add(gid, hook("wh_a"), limit=2)
    assert hooks.add(gid, hook("wh_b", events=[]), limit=2)
    assert not hooks.add(gid, hook("wh_c"), limit=2)  # at the limit: not stored
    assert sorted(hooks.list(gid), key=lambda h: h["id"]) == [hook("wh_a"),
                                                             hook("wh_b", events=[])]
    assert hooks.get(gid, "wh_c") is None
    assert hooks.get(gid, "wh_b") == hook("wh_b", events=[])
    with pytest.raises(ValueError):  # the id is taken: the stored one stays
        hooks.add(gid, hook("wh_a", url="https://other.example"), limit=5)
    assert hooks.get(gid, "wh_a") == hook("wh_a")
    assert hooks.list(other) == []  # per game
    assert hooks.add(other, hook("wh_a"), limit=1)
    assert hooks.delete(gid, "wh_a") and not hooks.delete(gid, "wh_a")
    assert hooks.get(gid, "wh_a") is None and hooks.get(other, "wh_a")
    assert hooks.add(gid, hook("wh_c"), limit=2)  # room again
    assert {h["id"] for h in hooks.list(gid)} == {"wh_b", "wh_c"}
    # Registrations do not touch the game's log or metadata.
    assert recorder.read(gid) == [] and recorder.get_meta(gid).serial == 0


def test_an_append_returns_the_registrations_of_its_step(stores):
    """A new append returns the game's registrations read in the same step (its listeners
    need not read them); a replay returns none (not read)."""
    recorder, hooks = stores
    gid = new_game(recorder)
    first = recorder.append(gid, 1, ev(1), "k1", "fp")
    assert first.webhooks == () and not first.replayed
    hooks.add(gid, hook("wh_a"), limit=5)
    hooks.add(gid, hook("wh_b", active=False), limit=5)
    second = recorder.append(gid, 2, ev(2))
    assert sorted(second.webhooks, key=lambda h: h["id"]) == [hook("wh_a"),
                                                             hook("wh_b", active=False)]
    hooks.delete(gid, "wh_a")
    assert recorder.append(gid, 3, ev(3)).webhooks == (hook("wh_b", active=False),)
    replay = recorder.append(gid, 1, ev(1), "k1", "fp")
    assert replay.replayed and replay.event == ev(1) and replay.webhooks is None


def test_webhook_update(stores):
    recorder, hooks = stores
    gid = new_game(recorder)
    hooks.add(gid, hook("wh_a"), limit=5)
    fields = {"active": False, "disabled_reason": "410", "id": "wh_other"}
    updated = hooks.update(gid, "wh_a", fields)
    assert updated == hook("wh_a", active=False, disabled_reason="410")  # never the id
    assert hooks.get(gid, "wh_a") == updated
    assert hooks.update(gid, "wh_none", {"active": False}) is None
    assert hooks.get(gid, "wh_none") is None
    assert hooks.update("no-such-game", "wh_a", {"active": False}) is None


def test_concurrent_webhook_updates_lose_none(stores):
    recorder, hooks = stores
    gid = new_game(recorder)
    hooks.add(gid, hook("wh_a"), limit=5)
    barrier = threading.Barrier(8)

    def update(i: int) -> None:
        barrier.wait()
        hooks.update(gid, "wh_a", {f"f{i}": i})

    threads = [threading.Thread(target=update, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert hooks.get(gid, "wh_a") == hook("wh_a", **{f"f{i}": i for i in range(8)})


def test_webhooks_of_an_unknown_game(stores):
    _, hooks = stores
    with pytest.raises(GameNotFound):
        hooks.add("nope", hook("wh_a"), limit=5)
    assert hooks.list("nope") == [] and hooks.get("nope", "wh_a") is None
    assert not hooks.delete("nope", "wh_a")


def test_webhooks_live_in_the_games_slot(settings, redis_cluster, cluster_client):  # noqa: F811
    """On a cluster, a game's registrations are on the game's master (its hash tag)."""
    redis_cluster.ensure_healthy()
    keys = KeySpace(settings.key_prefix)
    recorder = RedisRecorder(cluster_client, keys)
    hooks = RedisWebhookRegistrations(cluster_client, keys)
    gid = new_game(recorder)
    hooks.add(gid, hook("wh_a"), limit=5)
    hooks.add(gid, hook("wh_b"), limit=5)
    slot = redis_cluster.keyslot(keys.game_log(gid))
    assert redis_cluster.keyslot(keys.game_webhooks(gid)) == slot
    master = redis_cluster.node_for_slot(slot)
    with master.client() as c:
        assert sorted(c.hkeys(keys.game_webhooks(gid))) == ["wh_a", "wh_b"]
