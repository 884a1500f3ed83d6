"""The store of exact values (issue 33, part 2): the Redis store on one Redis and on a Redis
Cluster, symmetric positions sharing an entry, the budget, and the served path: a value a
worker proves answers the next analysis at once (``source: store``), ``GET /v1/positions``, and
a lost store costs only searches."""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from redis.cluster import RedisCluster

from boxfish import engine
from boxfish.engine.dots.search.board import tables
from boxfish.service.application.exact_values import ExactValues
from boxfish.service.http.app import create_app
from boxfish.service.store.exact_values import ENTRY_BYTES, ExactValueStore
from boxfish.service.store.keys import KeySpace
from tests.engine.dots.reference import reference_move_values, reference_value

from .conftest import CheckedClient, start_worker, stop_process, wait_for_workers

# a 3x3 position (12 of 24 lines drawn, no box to take), and its mirror image
MOVES = [[1, 1, 1], [2, 2, 2], [3, 4, 1], [4, 1, 2], [1, 2, 1], [2, 1, 2], [3, 3, 1],
         [1, 3, 2], [2, 4, 1]]


def state_of(moves, w=3, h=3):
    game = engine.load_game("dots-and-boxes", width=w, height=h)
    s = game.new_state()
    for m in moves:
        s.play(tuple(m))
    return s


def mirrored(moves, w=3, h=3) -> list[list[int]]:
    """The same moves under a symmetry of the board other than the identity."""
    t = tables(w, h)
    game = engine.load_game("dots-and-boxes", width=w, height=h)
    perm = t.syms[1]
    return [list(game.action_to_move(perm[game.move_to_action(tuple(m))])) for m in moves]


@pytest.fixture(params=["redis", "cluster"])
def store_connection(request, redis_client, cluster_url):
    if request.param == "redis":
        yield redis_client
        return
    conn = RedisCluster.from_url(cluster_url)
    yield conn
    conn.close()


def test_entries_round_trip_and_the_budget_keeps_the_costliest(store_connection):
    keys = KeySpace(f"exact-{uuid.uuid4().hex[:8]}")
    store = ExactValueStore(store_connection, keys, max_bytes=3 * ENTRY_BYTES, shards=1)
    assert store.shard_entries == 3
    assert store.get("p0") is None
    for i in range(8):
        store.put(f"p{i}", {"value": i}, cost=float(i))
    st = store.stats()
    assert st["entries"] == 3 and st["evictions"] == 5 and st["writes"] == 8
    assert [store.get(f"p{i}") for i in range(8)] == [None] * 5 + [{"value": i}
                                                                   for i in (5, 6, 7)]
    assert store.stats()["hits"] == 3 and store.stats()["misses"] == 6
    store.clear()
    assert store.stats()["entries"] == 0


def test_the_shards_spread_over_a_clusters_masters(cluster_url):
    conn = RedisCluster.from_url(cluster_url)
    keys = KeySpace(f"exact-{uuid.uuid4().hex[:8]}")
    store = ExactValueStore(conn, keys, max_bytes=1 << 20)
    for i in range(200):
        store.put(f"position-{i}", {"value": i}, cost=1.0)
    masters = {conn.get_node_from_key(keys.exact_shard(s)[0]).name for s in range(store.shards)
               if conn.hlen(keys.exact_shard(s)[0])}
    assert len(masters) == 3
    assert store.stats()["entries"] == 200
    store.clear()
    conn.close()


def test_a_mirrored_position_reads_the_same_entry_in_its_own_frame(redis_client):
    """Stored from one position, looked up from its mirror image: the value, and each move's
    value as the reference solver gives it for the mirrored position."""
    exact = ExactValues(ExactValueStore(redis_client, KeySpace(f"exact-{uuid.uuid4().hex[:8]}"),
                                        1 << 20))
    s = state_of(MOVES)
    a = engine.analyse(s, time_ms=None)
    assert exact.record_analysis(s, {**a.to_dict(), "time_ms": 12.0})
    m = state_of(mirrored(MOVES))
    assert m.drawn != s.drawn
    stored = exact.lookup(3, 3, m.drawn)
    assert stored is not None and stored.all and stored.proof_s == 0.012
    assert stored.value == reference_value(3, 3, m.drawn)
    want = reference_move_values(3, 3, m.drawn)
    assert dict(stored.moves) == want
    assert exact.lookup(3, 3, state_of(MOVES[:-1]).drawn) is None
    exact.store.clear()


def test_writes_are_not_counted_as_lookups(redis_client):
    """The metrics' hits and misses count lookups only: a writer's read of the entry it
    replaces is neither."""
    exact = ExactValues(ExactValueStore(redis_client, KeySpace(f"exact-{uuid.uuid4().hex[:8]}"),
                                        1 << 20))
    drawn = state_of(MOVES).drawn
    exact.record(3, 3, drawn, 1, [], False, 0.5)
    exact.record(3, 3, drawn, 1, [], False, 0.5)
    st = exact.store.stats()
    assert (st["writes"], st["hits"], st["misses"]) == (2, 0, 0)
    assert exact.lookup(3, 3, drawn).value == 1
    assert exact.store.stats()["hits"] == 1
    exact.store.clear()


@pytest.fixture
def store_settings(settings):
    tag = f"exact-{uuid.uuid4().hex[:8]}"
    return settings.model_copy(update={"exact_store_mb": 16, "key_prefix": tag,
                                       "queue_name": tag})


@pytest.fixture
def store_worker(store_settings, redis_client, tmp_path):
    proc = start_worker(store_settings, tmp_path / "worker.log")
    wait_for_workers(redis_client, store_settings.queue_name, 1)
    yield proc
    stop_process(proc)


def test_a_proven_position_is_answered_from_the_store(store_settings, store_worker,
                                                      redis_client, spec):
    """A worker proves it; this process (another one) answers the same position, and its
    mirror image, from the store at once; GET /v1/positions gives it; with the store lost,
    analyses search again and answer the same."""
    app = create_app(store_settings, connection=redis_client)
    client = CheckedClient(app.test_client(), spec)
    body = {"game": "dots-and-boxes", "width": 3, "height": 3, "moves": MOVES, "time_ms": 2000}
    first = client.post("/v1/analyses?wait=10", json=body)
    assert first.status_code == 200 and first.json["status"] == "finished", first.json
    searched = first.json["result"]
    assert searched["exact"] and searched["source"] == "search"
    drawn = state_of(MOVES).drawn
    assert searched["value"] == reference_value(3, 3, drawn)

    again = client.post("/v1/analyses", json=body)
    assert again.status_code == 200 and again.json["id"].startswith("st_")
    result = again.json["result"]
    assert result["source"] == "store" and result["value"] == searched["value"]
    assert result["time_used_ms"] == result["time_ms"] == 0  # no search
    assert [m["value"] for m in result["moves"]] == [m["value"] for m in searched["moves"]]
    assert client.get(f"/v1/analyses/{again.json['id']}").json == again.json

    mirror = client.post("/v1/analyses", json={**body, "moves": mirrored(MOVES)}).json
    assert mirror["result"]["source"] == "store"
    game = engine.load_game("dots-and-boxes", width=3, height=3)
    want = reference_move_values(3, 3, state_of(mirrored(MOVES)).drawn)
    assert {game.move_to_action(tuple(m["move"])): m["value"]
            for m in mirror["result"]["moves"]} == want

    got = client.get("/v1/positions", query_string={"width": 3, "height": 3,
                                                    "moves": json.dumps(MOVES)})
    assert got.status_code == 200 and got.json["value"] == searched["value"]
    by_lines = client.get("/v1/positions", query_string={
        "width": 3, "height": 3, "lines": state_of(mirrored(MOVES)).to_lines()})
    assert by_lines.status_code == 200 and by_lines.json["value"] == searched["value"]
    metrics = client.get("/metrics", validate_spec=False).data.decode()
    assert "boxfish_exact_store_hits" in metrics

    ExactValueStore(redis_client, KeySpace(store_settings.key_prefix), 1).clear()
    lost = client.get("/v1/positions", query_string={"width": 3, "height": 3,
                                                     "moves": json.dumps(MOVES)})
    assert lost.status_code == 404 and lost.mimetype == "application/problem+json"
    searched_again = client.post("/v1/analyses?wait=10",
                                 json={**body, "time_ms": 2001}).json
    assert searched_again["status"] == "finished"
    assert searched_again["result"]["source"] == "search"
    assert searched_again["result"]["value"] == searched["value"]


@pytest.mark.parametrize("query, status", [
    ({"width": 3, "height": 3, "moves": "[[9,9,9]]"}, 422),
    ({"width": 3, "height": 3, "moves": "not json"}, 422),
    ({"width": 3, "height": 3}, 422),
    ({"width": 3, "height": 3, "moves": "[]", "lines": "0" * 24}, 422),
    ({"width": 0, "height": 3, "moves": "[]"}, 422),
    ({"width": 3, "height": 3, "lines": "01"}, 422),
    ({"game": "extreme-tictactoe", "width": 3, "height": 3, "moves": "[]"}, 422),
    ({"width": 3, "height": 3, "moves": "[]"}, 404),
])
def test_bad_position_lookups_are_problems(store_settings, redis_client, spec, query, status):
    client = CheckedClient(create_app(store_settings, connection=redis_client).test_client(),
                           spec)
    r = client.get("/v1/positions", query_string=query)
    assert r.status_code == status and r.mimetype == "application/problem+json", r.json


def test_an_unknown_stored_analysis_is_a_404(store_settings, redis_client, spec):
    client = CheckedClient(create_app(store_settings, connection=redis_client).test_client(),
                           spec)
    r = client.get(f"/v1/analyses/st_{uuid.uuid4().hex}")
    assert r.status_code == 404 and r.mimetype == "application/problem+json"


def test_the_store_holds_its_budget_under_a_burst_of_writes(redis_client):
    keys = KeySpace(f"exact-{uuid.uuid4().hex[:8]}")
    store = ExactValueStore(redis_client, keys, max_bytes=64 * 4 * ENTRY_BYTES)
    for i in range(2000):
        store.put(f"p{i}", {"value": i, "moves": [[j, -j] for j in range(24)]}, cost=i % 97)
    st = store.stats()
    assert st["entries"] <= 64 * 4 and st["writes"] == 2000
    assert st["evictions"] == 2000 - st["entries"]
    assert st["bytes"] > 0
    store.clear()


def test_losing_the_store_connection_fails_no_analysis(monkeypatch):
    """A worker whose store is unreachable still answers (the store is a cache)."""
    from boxfish.service.application.analysis_request import AnalysisRequest
    from boxfish.workers.analysis_job import AnalysisRunner

    dead = ExactValues(ExactValueStore(redis.Redis(port=1, socket_connect_timeout=0.2),
                                       KeySpace("gone"), 1 << 20))
    runner = AnalysisRunner(search_cache_entries=0, threads=1, exact_values=dead)
    req = AnalysisRequest(game="dots-and-boxes", params={"width": 3, "height": 3},
                          moves=tuple(tuple(m) for m in MOVES), time_ms=2000)
    result = runner.analyse(req)
    assert result["exact"] and result["value"] == reference_value(3, 3, state_of(MOVES).drawn)


def test_boxfish_solve_fills_the_store(redis_url, monkeypatch, capsys):
    """``boxfish solve ... --store URL`` writes its proven root values where analyses read
    them: the value and the move values agree with the reference solver."""
    from boxfish.service.runtime.cli import main

    prefix = f"exact-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("BOXFISH_KEY_PREFIX", prefix)
    moves = " ".join(",".join(map(str, m)) for m in MOVES[:6])
    assert main(["solve", "3", "3", "--moves", moves, "--progress", "0",
                 "--store", redis_url]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("value ") and "stored the value" in captured.err
    drawn = state_of(MOVES[:6]).drawn
    store = ExactValueStore(redis.Redis.from_url(redis_url), KeySpace(prefix), 1 << 20)
    stored = ExactValues(store).lookup(3, 3, drawn)
    assert stored is not None and stored.value == reference_value(3, 3, drawn)
    assert stored.moves and stored.moves[0][1] == stored.value
    want = reference_move_values(3, 3, drawn, lines=[ln for ln, _ in stored.moves])
    assert dict(stored.moves) == want
    store.clear()


def test_on_a_cluster_a_workers_proof_is_answered_from_the_store(settings, cluster_url,
                                                                 redis_client, spec, tmp_path):
    """The move store (and so the store of exact values) on the suite's Redis Cluster, the
    queue on the plain Redis: a worker's proof answers the next analysis and a lookup."""
    tag = f"exact-{uuid.uuid4().hex[:8]}"
    on_cluster = settings.model_copy(update={
        "redis_url": cluster_url, "queue_redis_url": settings.redis_url, "exact_store_mb": 16,
        "key_prefix": tag, "queue_name": tag})
    proc = start_worker(on_cluster, tmp_path / "worker.log")
    try:
        wait_for_workers(redis_client, tag, 1)
        client = CheckedClient(create_app(on_cluster).test_client(), spec)
        body = {"game": "dots-and-boxes", "width": 3, "height": 3, "moves": MOVES,
                "time_ms": 2000}
        first = client.post("/v1/analyses?wait=10", json=body).json
        assert first["status"] == "finished" and first["result"]["source"] == "search", first
        again = client.post("/v1/analyses", json=body).json
        assert again["result"]["source"] == "store"
        assert again["result"]["value"] == reference_value(3, 3, state_of(MOVES).drawn)
        got = client.get("/v1/positions", query_string={"width": 3, "height": 3,
                                                        "moves": json.dumps(mirrored(MOVES))})
        assert got.status_code == 200 and got.json["value"] == again["result"]["value"]
    finally:
        stop_process(proc)
        conn = RedisCluster.from_url(cluster_url)
        ExactValueStore(conn, KeySpace(tag), 1).clear()
        conn.close()
