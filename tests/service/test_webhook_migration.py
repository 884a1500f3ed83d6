"""Webhook registrations kept where versions before issue 24 kept them (the job queue's Redis,
``<prefix>:webhooks:<game id>``) are migrated into the move store, with their game, on the
first read: read old, write new, delete old; idempotent, and safe under concurrency (each id
is imported once, so a late migration never brings back a deleted registration). On a real
Redis (the store and the queue being the same server here, the keys apart) and on the real
cluster (the store on the cluster, the queue on the plain Redis)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading

import pytest
import redis

from boxfish.service.application.webhooks import Webhooks, new_secret, public_view
from boxfish.service.http.app import create_app
from boxfish.service.store.keys import KeySpace

from .conftest import CheckedClient


def old_hook(webhook_id: str, created_at: str, **fields) -> dict:
    """A registration as versions before issue 24 stored it."""
    return {"id": webhook_id, "url": f"https://93.184.215.14/{webhook_id}",
            "events": ["move.appended", "game.finished"], "active": True,
            "created_at": created_at, "disabled_reason": None, "disabled_at": None,
            "secret": new_secret(), **fields}


@pytest.fixture(params=["redis", "cluster"])
def api(request, settings, redis_client, spec):
    """``(client, services)`` of an app whose store is the plain Redis or the cluster."""
    if request.param == "redis":
        app = create_app(settings, connection=redis_client)
        yield CheckedClient(app.test_client(), spec), app.extensions["boxfish"]
        return
    cluster = request.getfixturevalue("redis_cluster")
    cluster.ensure_healthy()
    store = cluster.client(socket_timeout=5.0)
    app = create_app(settings, connection=store, queue_connection=redis_client)
    try:
        yield CheckedClient(app.test_client(), spec), app.extensions["boxfish"]
    finally:
        store.close()


def new_game_with_old_hooks(client, redis_client, settings, hooks) -> tuple[str, dict]:
    created = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                             "height": 2})
    gid = created.json["id"]
    old_key = KeySpace(settings.key_prefix).webhooks(gid)
    redis_client.hset(old_key, mapping={h["id"]: json.dumps(h) for h in hooks})
    return gid, {"Authorization": f"Bearer {created.json['write_token']}"}


def test_the_first_read_migrates(api, redis_client, settings):
    client, services = api
    hooks = [old_hook("wh_0000000000000002", "2026-01-02T00:00:00.000Z"),
             old_hook("wh_0000000000000001", "2026-01-01T00:00:00.000Z", active=False,
                      disabled_reason="gone", disabled_at="2026-01-03T00:00:00.000Z")]
    gid, auth = new_game_with_old_hooks(client, redis_client, settings, hooks)
    old_key = KeySpace(settings.key_prefix).webhooks(gid)
    assert services.recorder.webhooks(gid) == []
    listed = client.get(f"/v1/games/{gid}/webhooks", headers=auth)
    assert listed.status_code == 200
    assert listed.json["webhooks"] == [public_view(h) for h in reversed(hooks)]
    # Written new, deleted old; with the secrets, which deliveries sign with.
    assert sorted(services.recorder.webhooks(gid), key=lambda h: h["created_at"]) == hooks[::-1]
    assert not redis_client.exists(old_key)
    # Idempotent: nothing more to do, and the same answer.
    assert services.webhooks.migrate(gid) == 0
    assert client.get(f"/v1/games/{gid}/webhooks", headers=auth).json == listed.json
    # Every route reads through the migration: one read of one hook migrates all.
    gid2, auth2 = new_game_with_old_hooks(client, redis_client, settings, hooks)
    one = client.get(f"/v1/games/{gid2}/webhooks/{hooks[0]['id']}", headers=auth2)
    assert one.status_code == 200 and one.json == public_view(hooks[0])
    assert len(services.recorder.webhooks(gid2)) == 2
    assert not redis_client.exists(KeySpace(settings.key_prefix).webhooks(gid2))


def test_a_late_migration_brings_back_nothing_deleted(api, redis_client, settings):
    """A migration that read the old hash before another finished, and imports after the
    registration was deleted, stores nothing (and still deletes the old fields)."""
    client, services = api
    hooks = [old_hook("wh_00000000000000a1", "2026-01-01T00:00:00.000Z")]
    gid, auth = new_game_with_old_hooks(client, redis_client, settings, hooks)
    old_key = KeySpace(settings.key_prefix).webhooks(gid)
    late_read = redis_client.hgetall(old_key)  # what the late migration read
    assert client.delete(f"/v1/games/{gid}/webhooks/{hooks[0]['id']}",
                         headers=auth).status_code == 204  # migrated, then deleted
    redis_client.hset(old_key, mapping=late_read)  # the late one's view of the old hash
    assert services.webhooks.migrate(gid) == 0
    assert client.get(f"/v1/games/{gid}/webhooks", headers=auth).json == {"webhooks": []}
    assert not redis_client.exists(old_key)


def test_concurrent_migrations_import_each_registration_once(api, redis_client, settings):
    client, services = api
    hooks = [old_hook(f"wh_{i:016x}", f"2026-01-01T00:00:0{i}.000Z") for i in range(5)]
    gid, auth = new_game_with_old_hooks(client, redis_client, settings, hooks)
    barrier = threading.Barrier(8)
    stored = []

    def migrate() -> None:
        barrier.wait()
        stored.append(services.webhooks.migrate(gid))

    threads = [threading.Thread(target=migrate) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(stored) == 5 and len(stored) == 8
    assert sorted(services.recorder.webhooks(gid), key=lambda h: h["id"]) == hooks
    assert not redis_client.exists(KeySpace(settings.key_prefix).webhooks(gid))


def test_migrated_registrations_count_toward_the_limit(api, redis_client, settings):
    """The game's limit counts migrated registrations (a game over it keeps them all, and
    gets no more until some are deleted: a 422 that changes nothing)."""
    client, services = api
    limit = services.settings.webhook_max_per_game
    hooks = [old_hook(f"wh_{i:016x}", f"2026-01-01T00:00:{i:02d}.000Z")
             for i in range(limit)]
    gid, auth = new_game_with_old_hooks(client, redis_client, settings, hooks)
    refused = client.post(f"/v1/games/{gid}/webhooks", headers=auth,
                          json={"url": "https://93.184.215.14/more"})
    assert refused.status_code == 422 and refused.json["reason"] == "limit_exceeded"
    assert sorted(services.recorder.webhooks(gid), key=lambda h: h["id"]) == hooks


def test_a_move_announced_migrates_and_reaches_the_migrated_webhooks(api, redis_client,
                                                                     settings):
    """The first read may be the announcement of a move: the deliveries of that move are
    enqueued for the migrated registrations (the active one subscribed to the event)."""
    from rq import Queue

    client, services = api
    # Ids of this test's own: message ids (and their markers) are made of them.
    hooks = [old_hook(f"wh_{secrets.token_hex(8)}", "2026-01-01T00:00:00.000Z"),
             old_hook(f"wh_{secrets.token_hex(8)}", "2026-01-01T00:00:01.000Z", active=False)]
    gid, auth = new_game_with_old_hooks(client, redis_client, settings, hooks)
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                       headers=auth).status_code == 201
    assert not redis_client.exists(KeySpace(settings.key_prefix).webhooks(gid))
    assert len(services.recorder.webhooks(gid)) == 2
    webhooks = services.webhooks
    queue = Queue(settings.webhook_queue_name, connection=redis_client)
    for hook, sent in ((hooks[0], True), (hooks[1], False)):
        message_id = f"msg_{hook['id']}_1_move.appended"
        assert bool(redis_client.exists(webhooks.keys.webhook_enqueued(message_id))) is sent
        job = queue.fetch_job(webhooks.job_id(message_id, 1))
        assert (job is not None) is sent
        if job is not None:  # not for a worker to try: the URL is nobody's
            assert job.args[0] == {"game": gid, "webhook": hook["id"]}
            job.delete()


def test_migrate_all_moves_every_old_hash_and_ends_the_migration(api, redis_client, settings,
                                                                  monkeypatch):
    """``Webhooks.migrate_all`` (``boxfish migrate-webhooks``) migrates every game's old hash,
    keeps a game the store does not have, and sets the marker; from then on no read looks
    at the old location (the old hashes are gone and no writer of them is left): a process
    sees the marker at its next look, and stops reading."""
    client, services = api
    keys = KeySpace(settings.key_prefix)
    marker = keys.webhook_migration_done()
    hooks = [old_hook(f"wh_{i:016x}", f"2026-02-01T00:00:0{i}.000Z") for i in range(3)]
    gid1, auth1 = new_game_with_old_hooks(client, redis_client, settings, hooks[:2])
    gid2, _ = new_game_with_old_hooks(client, redis_client, settings, hooks[2:])
    ghost = keys.webhooks("no-such-game-here")
    redis_client.hset(ghost, hooks[0]["id"], json.dumps(hooks[0]))
    other = Webhooks.from_settings(redis_client, settings, keys, services.recorder)
    try:
        assert not other.migration_done()
        games, stored, orphans = services.webhooks.migrate_all()
        assert games >= 2 and stored >= 3 and orphans >= 1
        assert redis_client.exists(marker)
        assert not redis_client.exists(keys.webhooks(gid1))
        assert not redis_client.exists(keys.webhooks(gid2))
        assert redis_client.exists(ghost)  # no game to attach it to
        listed = client.get(f"/v1/games/{gid1}/webhooks", headers=auth1)
        assert listed.json["webhooks"] == [public_view(h) for h in hooks[:2]]  # oldest first
        # Another process's Webhooks looked before: it sees the marker at its next look.
        assert not other.migration_done()
        monkeypatch.setattr("boxfish.service.application.webhooks.MIGRATION_CHECK_S", 0.0)
        other._migration_next_check = 0.0
        assert other.migration_done()
        # An old hash written now is not read (the marker says no writer of it is left).
        gid3, _ = new_game_with_old_hooks(client, redis_client, settings, hooks[:1])
        assert other.migrate(gid3) == 0 and services.webhooks.migrate(gid3) == 0
        assert redis_client.exists(keys.webhooks(gid3))
        assert services.recorder.webhooks(gid3) == []
    finally:
        # the marker would end the migration for the tests after this one
        redis_client.delete(marker, ghost)


def test_the_migrate_webhooks_command(settings, redis_client):
    """``boxfish migrate-webhooks`` on the configured Redis: what it did, and the marker."""
    app = create_app(settings, connection=redis_client)
    client = app.test_client()
    created = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                             "height": 2}).json
    keys = KeySpace(settings.key_prefix)
    hook = old_hook("wh_00000000000000c1", "2026-03-01T00:00:00.000Z")
    redis_client.hset(keys.webhooks(created["id"]), hook["id"], json.dumps(hook))
    env = {**os.environ, "REDIS_URL": settings.redis_url,
           "BOXFISH_KEY_PREFIX": settings.key_prefix, "BOXFISH_REDIS_CLUSTER": "no"}
    try:
        run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "boxfish"),
                              "migrate-webhooks"], env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr
        assert "into the move store" in run.stdout and "the migration is over" in run.stdout
        assert redis_client.exists(keys.webhook_migration_done())
        assert app.extensions["boxfish"].recorder.webhooks(created["id"]) == [hook]
    finally:
        redis_client.delete(keys.webhook_migration_done())


def test_boxfish_serve_on_its_own_redis_ends_the_migration_first(settings, redis_client,
                                                                  capsys, tmp_path):
    """``boxfish serve`` with its embedded Redis owns every process on it: it migrates the
    registrations still kept where versions before issue 24 kept them, and ends the
    migration, before it starts the API (so no append looks there again)."""
    from boxfish.service.runtime.cli import _end_webhook_migration
    from boxfish.service.runtime.embedded_redis import free_port

    app = create_app(settings, connection=redis_client)
    created = app.test_client().post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                                        "height": 2}).json
    keys = KeySpace(settings.key_prefix)
    hook = old_hook("wh_00000000000000d1", "2026-03-01T00:00:00.000Z")
    redis_client.hset(keys.webhooks(created["id"]), hook["id"], json.dumps(hook))
    try:
        _end_webhook_migration(settings, {"REDIS_URL": settings.redis_url,
                                          "BOXFISH_QUEUE_REDIS_URL": settings.redis_url})
        assert "migrated 1 webhook registrations of 1 games" in capsys.readouterr().err
        assert redis_client.exists(keys.webhook_migration_done())
        assert not redis_client.exists(keys.webhooks(created["id"]))
        assert app.extensions["boxfish"].recorder.webhooks(created["id"]) == [hook]
    finally:
        redis_client.delete(keys.webhook_migration_done())

    # The command itself: the marker is in its queue Redis before the API answers.
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "BOXFISH_REDIS_URL", "BOXFISH_QUEUE_REDIS_URL")}
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "serve", "--port",
                             str(port), "--workers", "0", "--webhook-workers", "0",
                             "--data-dir", str(tmp_path / "data")], env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        queue_url = None
        for line in proc.stderr:
            if "embedded Redis (job queue) on " in line:
                queue_url = line.split(" on ", 1)[1].split(",")[0].strip()
            if "serving on" in line:
                break
        assert queue_url is not None and proc.poll() is None
        queue = redis.Redis.from_url(queue_url)
        assert queue.exists(KeySpace(os.environ.get("BOXFISH_KEY_PREFIX", "boxfish"))
                            .webhook_migration_done())
        queue.close()
    finally:
        proc.terminate()
        proc.wait(60)
