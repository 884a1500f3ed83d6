"""The opening explorer, a projection of the feed (issue 35): it equals a count made from
scratch over the stored logs, after a random mix of games, appends, replayed appends and
projector restarts (SIGKILL of ``boxfish project`` included), after a failover on the real
Redis Cluster that loses acknowledged moves, and after a rebuild under a new version, with
readers served throughout. Plus the endpoint and the client against a real server."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict

import pytest

from boxfish.client import Client
from boxfish.client.errors import BoxfishError
from boxfish.engine import load_game
from boxfish.service.application.explorer import (
    NAME,
    Explorer,
    board_name,
    fold,
)
from boxfish.service.application.games import GameService
from boxfish.service.application.state_cache import StateCache
from boxfish.service.application.wiring import explorer_projection, projection_runner
from boxfish.service.store.feed import partition_of
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.projections import ProjectionStore
from boxfish.service.store.redis_recorder import RedisRecorder

from .conftest import _env, stop_process
from .test_failover_heads import lose_next_write

MAX_MOVES = 6
BOARDS = [("dots-and-boxes", {"width": 2, "height": 2}),
          ("dots-and-boxes", {"width": 3, "height": 2}),
          ("dots-and-boxes", {"width": 2, "height": 3})]


def own_settings(settings, **extra):
    return settings.model_copy(update={"key_prefix": f"{settings.key_prefix}-x"
                                                     f"{uuid.uuid4().hex[:6]}",
                                       "explorer_max_moves": MAX_MOVES, **extra})


class Players:
    """Random games through the games service: appends, and some replayed with the same
    Idempotency-Key (which must append nothing)."""

    def __init__(self, recorder, rng: random.Random) -> None:
        self.games = GameService(recorder, StateCache(64), listeners=[])
        self.rng = rng
        self.ids: list[str] = []
        self.open: list[tuple] = []  # (meta, state, game)

    def new(self, name: str, params: dict) -> None:
        game = load_game(name, **params)
        meta, _ = self.games.create(game)
        self.ids.append(meta.game_id)
        self.open.append((meta, game.new_state()))

    def step(self, n: int) -> None:
        for _ in range(n):
            if not self.open:
                return
            meta, state = self.rng.choice(self.open)
            move = self.rng.choice(state.legal_moves())
            key = uuid.uuid4().hex
            self.games.append(meta, list(move), state.serial + 1, key, "fp")
            if self.rng.random() < 0.2:
                replay = self.games.append(meta, list(move), state.serial + 1, key, "fp")
                assert replay.replayed
            state.play(move)
            if state.is_terminal():
                self.open.remove((meta, state))

    def finish_some(self, fraction: float) -> None:
        for meta, state in list(self.open):
            if self.rng.random() < fraction:
                while not state.is_terminal():
                    self.step_game(meta, state)

    def step_game(self, meta, state) -> None:
        move = self.rng.choice(state.legal_moves())
        self.games.append(meta, list(move), state.serial + 1, uuid.uuid4().hex, "fp")
        state.play(move)
        if state.is_terminal():
            self.open.remove((meta, state))


def from_scratch(recorder, game_ids, max_moves=MAX_MOVES):
    """The explorer counted directly from the stored logs: (board, folded position) ->
    canonical move -> [games, wins of 0, wins of 1, draws, margin sum], and the games."""
    counts = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0, 0]))
    games = defaultdict(lambda: defaultdict(set))
    prefixes = {}
    for game_id in game_ids:
        meta = recorder.get_meta(game_id)
        if meta.status != "finished":
            continue
        game = load_game(meta.game, **meta.params)
        events = recorder.read(game_id)
        end = game.new_state()
        for e in events:
            end.play(e.move)
        result = end.result()
        margin = result["points"][0] - result["points"][1]
        state = game.new_state()
        for e in events[:max_moves]:
            f = fold(state)
            where = (board_name(meta.game, meta.params), f.key)
            prefixes.setdefault(where, (game, [list(m.move) for m in events[:state.serial]]))
            row = counts[where][f.to_canonical(game.move_to_action(e.move))]
            row[0] += 1
            row[{0: 1, 1: 2, None: 3}[result["winner"]]] += 1
            row[4] += margin
            games[where][f.to_canonical(game.move_to_action(e.move))].add(game_id)
            state.play(e.move)
    return counts, games, prefixes


def assert_explorer_is_the_count(store: ProjectionStore, explorer: Explorer, recorder,
                                 game_ids, keys: KeySpace) -> None:
    counts, games, prefixes = from_scratch(recorder, game_ids)
    version = store.versions(NAME).current
    assert version is not None
    for where, expected in counts.items():
        game, moves = prefixes[where]
        state = game.new_state()
        for m in moves:
            state.play(m)
        answer = explorer.query(state)
        assert answer["version"] == version
        f = fold(state)
        got = {}
        for row in answer["moves"]:
            m = f.to_canonical(game.move_to_action(row["move"]))
            got[m] = [row["games"], *row["wins"], row["draws"],
                      round(row["mean_margin"] * row["games"])]
            assert set(row["examples"]) <= games[where][m], (where, m)
            assert row["examples"], (where, m)
        assert got == {m: list(v) for m, v in expected.items()}, where
    # No position beyond those: the version's buckets are exactly the positions counted.
    buckets = list(store.redis.scan_iter(match=keys.projection_bucket(NAME, version, "*"),
                                         count=1000))
    assert len(buckets) == len(counts)


def caught_up(store: ProjectionStore, recorder) -> bool:
    versions = store.versions(NAME)
    if versions.current is None or versions.current != versions.target:
        return False
    return store.checkpoints(NAME, versions.current) == recorder.feed_heads()


def wait_caught_up(store, recorder, timeout_s=60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not caught_up(store, recorder):
        assert time.monotonic() < deadline, "the projector did not catch up"
        time.sleep(0.05)


def start_projector(settings, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "project",
                             NAME], env=_env(settings, BOXFISH_REDIS_CLUSTER="no"),
                            stdout=log, stderr=log, start_new_session=True)


def test_the_explorer_equals_a_count_over_the_logs_through_replays_and_sigkills(
        settings, redis_client, tmp_path):
    own = own_settings(settings)
    keys = KeySpace(own.key_prefix)
    recorder = RedisRecorder(redis_client, keys)
    store = ProjectionStore(redis_client, keys)
    explorer = Explorer(store, explorer_projection(own), pointer_ttl_s=0)
    rng = random.Random(35)
    players = Players(recorder, rng)
    with open(tmp_path / "projector.log", "ab") as log:
        proc = start_projector(own, log)
        try:
            for round_ in range(6):
                for _ in range(6):
                    players.new(*rng.choice(BOARDS))
                players.step(rng.randrange(40, 120))
                players.finish_some(0.3)
                time.sleep(rng.random() * 0.3)
                # SIGKILL at a random point, and a restart; twice a clean SIGTERM.
                if round_ % 3 == 2:
                    stop_process(proc)
                else:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                proc = start_projector(own, log)
            wait_caught_up(store, recorder)
        finally:
            stop_process(proc)
    assert_explorer_is_the_count(store, explorer, recorder, players.ids, keys)
    # A finished game's feed entries read again (a checkpoint set back to the start):
    # nothing changes.
    runner = projection_runner(own, NAME, redis_client, recorder)
    version = store.versions(NAME).current
    for p in range(16):
        store.set_checkpoint(NAME, version, p, None)
    runner.catch_up()
    assert runner.stats["applies"] == 0
    assert_explorer_is_the_count(store, explorer, recorder, players.ids, keys)


def test_a_failover_that_loses_a_counted_last_move_retracts_it(
        settings, redis_cluster, redis_client):
    redis_cluster.ensure_healthy()
    own = own_settings(settings, min_replicas_ack=0)
    keys = KeySpace(own.key_prefix)
    store_conn = redis_cluster.client(socket_timeout=5.0)
    try:
        recorder = RedisRecorder(store_conn, keys)
        store = ProjectionStore(store_conn, keys)
        explorer = Explorer(store, explorer_projection(own), pointer_ttl_s=0)
        runner = projection_runner(own, NAME, store_conn, recorder)
        rng = random.Random(7)
        players = Players(recorder, rng)
        for _ in range(8):
            players.new("dots-and-boxes", {"width": 2, "height": 2})
        players.finish_some(1.0)
        runner.catch_up()
        # The game whose last move is lost: all but its last move now; on another master
        # than the explorer's state (else the failover loses the explorer's count of it
        # with it, and there is nothing to retract).
        explorer_master = redis_cluster.node_for_key(
            keys.projection_checkpoints(NAME, store.versions(NAME).current))
        while True:
            players.new("dots-and-boxes", {"width": 2, "height": 2})
            meta, state = players.open[-1]
            if redis_cluster.node_for_key(keys.game_log(meta.game_id)).name != explorer_master.name:
                break
        while len(state.legal_moves()) > 1:
            players.step_game(meta, state)
        runner.catch_up()

        def lost_write():
            players.step_game(meta, state)  # acknowledged: the game is finished
            runner.catch_up()  # and counted
            assert explorer.query(load_game("dots-and-boxes", width=2, height=2)
                                  .new_state())["games"] == 9

        lose_next_write(redis_cluster, keys.feed(partition_of(meta.game_id)), lost_write)
        assert recorder.get_meta(meta.game_id).status == "in_progress"
        runner.catch_up(timeout_s=60)
        assert runner.stats["reconciled"] >= 1
        assert_explorer_is_the_count(store, explorer, recorder, players.ids, keys)
        # The game goes on after the failover (its last move again, a new head): counted.
        game = load_game("dots-and-boxes", width=2, height=2)
        state = game.new_state()
        for e in recorder.read(meta.game_id):
            state.play(e.move)
        players.open.append((meta, state))
        players.step_game(meta, state)
        runner.catch_up()
        assert_explorer_is_the_count(store, explorer, recorder, players.ids, keys)
    finally:
        store_conn.close()
        redis_cluster.ensure_healthy()


def test_a_rebuild_under_a_new_version_serves_readers_throughout(settings, redis_client):
    own = own_settings(settings)
    keys = KeySpace(own.key_prefix)
    recorder = RedisRecorder(redis_client, keys)
    store = ProjectionStore(redis_client, keys)
    explorer = Explorer(store, explorer_projection(own), pointer_ttl_s=0)
    rng = random.Random(11)
    players = Players(recorder, rng)
    for _ in range(30):
        players.new(*rng.choice(BOARDS))
    players.finish_some(0.8)
    runner = projection_runner(own, NAME, redis_client, recorder)
    runner.drop_grace_s = 0.2
    runner.batch = 20  # many rounds: readers are read between them
    first = runner.catch_up().current
    roots = {b: load_game(n, **p).new_state() for b, (n, p) in enumerate(BOARDS)}
    totals = {b: explorer.query(s)["games"] for b, s in roots.items()}
    assert sum(totals.values()) == sum(
        recorder.get_meta(g).status == "finished" for g in players.ids)

    seen, problems, stop = set(), [], threading.Event()

    def read():
        while not stop.is_set():
            for b, s in roots.items():
                answer = explorer.query(s)
                seen.add(answer["version"])
                if answer["games"] != totals[b]:
                    problems.append(answer)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        version = store.request_rebuild(NAME, explorer_projection(own).schema)
        assert version == first + 1
        runner.catch_up()
        time.sleep(0.3)
        runner.sync()  # past the grace: the old version is dropped
    finally:
        stop.set()
        reader.join()
    assert not problems, problems[:3]
    assert seen == {first, version}
    assert store.versions(NAME).current == version
    assert not list(redis_client.scan_iter(match=f"{keys.projection_base(NAME, first)}:*"))
    assert_explorer_is_the_count(store, explorer, recorder, players.ids, keys)
    # A changed setting is another schema: the runner builds a new version by itself.
    bigger = projection_runner(own.model_copy(update={"explorer_max_moves": MAX_MOVES + 1}),
                               NAME, redis_client, recorder)
    assert bigger.catch_up().current == version + 1


def test_the_endpoint(client, settings, redis_client, new_game):
    gid, auth, _ = new_game(width=2, height=2)
    game = load_game("dots-and-boxes", width=2, height=2)
    state, rng = game.new_state(), random.Random(3)
    while not state.is_terminal():
        move = rng.choice(state.legal_moves())
        assert client.post(f"/v1/games/{gid}/moves", json={"move": list(move)},
                           headers=auth).status_code == 201
        state.play(move)
    projection_runner(settings, NAME, redis_client).catch_up()
    first = list(RedisRecorder(redis_client, KeySpace(settings.key_prefix)).read(gid)[0].move)
    resp = client.get(f"/v1/explorer?game=dots-and-boxes&width=2&height=2&moves=[{first}]"
                      .replace(" ", ""))
    assert resp.status_code == 200, resp.json
    assert resp.json["serial"] == 1 and resp.json["max_moves"] == settings.explorer_max_moves
    assert resp.json["games"] >= 1 and resp.json["moves"]
    root = client.get("/v1/explorer?width=2&height=2")
    assert root.status_code == 200 and root.json["games"] >= 1
    x = client.get("/v1/explorer?game=extreme-tictactoe&moves=[[7,7]]")
    assert x.status_code == 200 and x.json["serial"] == 1
    for query, field in [("width=2", "height"), ("width=2&height=2&moves=[", "moves"),
                         ("width=x&height=2", "width"), ("game=chess", "game"),
                         ("width=2&height=2&moves=[[9,9,9]]", None)]:
        bad = client.get(f"/v1/explorer?{query}")
        assert bad.status_code == 422, (query, bad.json)
        assert bad.headers["Content-Type"].startswith("application/problem+json")
        if field is not None:
            assert field in str(bad.json), (query, bad.json)


def test_the_client_reads_the_explorer_from_a_real_server(server_url, settings, redis_client):
    with Client(server_url) as api:
        game = api.create_game("dots-and-boxes", width=2, height=2)
        state, rng = load_game("dots-and-boxes", width=2, height=2).new_state(), \
            random.Random(5)
        while not state.is_terminal():
            move = rng.choice(state.legal_moves())
            api.play(game.id, move, token=game.token)
            state.play(move)
        projection_runner(settings, NAME, redis_client).catch_up()
        answer = api.explorer("dots-and-boxes", width=2, height=2,
                              moves=[state.history[0]])
        assert answer["serial"] == 1 and answer["games"] >= 1
        assert any(game.id in m["examples"] for m in answer["moves"]) or answer["games"] > 5
        with pytest.raises(BoxfishError) as raised:
            api.explorer("dots-and-boxes", width=2, height=2, moves=[[9, 9, 9]])
        assert raised.value.status == 422
