"""The HTTP API on a real Redis Cluster (issue 13): a real gunicorn whose move store is the
cluster (3 masters, a replica each; the analysis queue on the plain test Redis).

* games whose ids land on every master, each played to its end and read back;
* racing appends at one serial: one 201 per serial, the rest 409, no gap, no fork;
* the event stream delivers every move in order, and resumes after Last-Event-ID;
* idempotent retries (sequential and concurrent): one answer, one log entry;
* a master SIGKILLed under 8 clients, in 3 trials with seeds of their own, with
  ``BOXFISH_MIN_REPLICAS_ACK=2`` on a cluster of the test's own with two replicas per master
  (every replica has each acknowledged move, so none is lost whichever replica is promoted):
  every 201 is an entry of its own, checked against the log serial by serial (position
  included), and against every 409; only 201/409/503 answers, none slower than the request
  timeout; 201s again within :data:`RECOVERY_BOUND_S` of the killed master's return;
* the same checks report a move lost where acknowledgements do not wait for a replica.
"""

from __future__ import annotations

import contextlib
import http.client as httplib
import json
import random
import threading
import time

import pytest

from boxfish import engine
from boxfish.service.runtime.embedded_redis import free_port
from boxfish.service.store.keys import KeySpace
from tests.redis_cluster import RedisClusterProcesses

from .conftest import start_gunicorn, stop_process
from .failover_load import (
    RETRY_PAUSE_S,
    Http,
    Ledger,
    Load,
    Player,
    Stream,
    check_answers,
    compare_logs,
    fail_over_under_load,
)
from .test_failover_heads import lose_next_write

#: The API's Redis socket timeout and request timeout in these tests.
SOCKET_TIMEOUT_S = 2.0
REQUEST_TIMEOUT_S = 10.0
#: No answer may take longer than this (the request timeout plus scheduling slack).
MAX_ANSWER_S = REQUEST_TIMEOUT_S + 5.0
#: Every client must have 201s again within this many seconds of the killed master's return.
RECOVERY_BOUND_S = 30.0
MOVES_PATH = "/v1/games/{}/moves"


def bearer(game: dict) -> dict:
    return {"Authorization": f"Bearer {game['write_token']}"}


def create_game(api: Http, width: int = 2, height: int = 2) -> dict:
    status, body, _ = api.request("POST", "/v1/games",
                                   {"game": "dots-and-boxes", "width": width, "height": height})
    assert status == 201, body
    return body


def logged(api: Http, game_id: str) -> list[tuple[int, list]]:
    status, body, _ = api.request("GET", MOVES_PATH.format(game_id))
    assert status == 200, body
    return [(m["serial"], m["move"]) for m in body["moves"]]


def all_moves(width: int, height: int) -> list[list]:
    return [list(m) for m in
            engine.load_game("dots-and-boxes", width=width, height=height)
            .new_state().legal_moves()]


def games_on_every_master(api: Http, cluster: RedisClusterProcesses, keys: KeySpace,
                          per_master: int = 1, width: int = 2, height: int = 2,
                          limit: int = 200) -> dict[str, list[dict]]:
    """Create games until every master owns ``per_master`` of them (by the slot of the
    game's meta key); ``{master name: [game, ...]}`` (extra games are left unused)."""
    masters = {m.name: m for m in cluster.masters()}
    assert len(masters) == cluster.n_masters
    placed: dict[str, list[dict]] = {name: [] for name in masters}
    for _ in range(limit):
        if all(len(g) >= per_master for g in placed.values()):
            return placed
        game = create_game(api, width, height)
        owner = cluster.node_for_key(keys.game_meta(game["id"]))
        if len(placed[owner.name]) < per_master:
            placed[owner.name].append(game)
    raise AssertionError(f"{limit} games did not cover every master: "
                         f"{ {k: len(v) for k, v in placed.items()} }")


@contextlib.contextmanager
def cluster_api(settings, cluster_url: str, log_path, threads: int = 16, **env):
    """A gunicorn serving the API with the move store on ``cluster_url`` and the job queue on
    the plain test Redis; ``env``: more BOXFISH_* settings. Yields its port."""
    own = settings.model_copy(update={"redis_url": cluster_url,
                                      "queue_redis_url": settings.redis_url,
                                      "request_timeout_s": REQUEST_TIMEOUT_S})
    extra = {"BOXFISH_QUEUE_REDIS_URL": settings.redis_url,
             "BOXFISH_REDIS_SOCKET_TIMEOUT_S": str(SOCKET_TIMEOUT_S),
             "BOXFISH_REDIS_CLUSTER": "auto", **env}
    port = free_port()
    # start_gunicorn hands the test process's environment (plus the settings it knows) to
    # the server: the cluster settings travel in the environment.
    with pytest.MonkeyPatch.context() as mp:
        for name in ("BOXFISH_MIN_REPLICAS_ACK", "BOXFISH_REPLICA_ACK_TIMEOUT_MS",
                     "BOXFISH_IDEMPOTENCY_TTL_S"):
            mp.delenv(name, raising=False)
        for name, value in extra.items():
            mp.setenv(name, value)
        api = start_gunicorn(own, port, log_path, threads=threads)
    try:
        yield port
    finally:
        stop_process(api)


@pytest.fixture(scope="module")
def api_port(redis_cluster, settings, tmp_path_factory):
    redis_cluster.ensure_healthy()  # an earlier test may have killed a node
    log_path = tmp_path_factory.mktemp("cluster-api") / "api.log"
    with cluster_api(settings, redis_cluster.url, log_path) as port:
        yield port
    text = log_path.read_text(errors="replace")
    # An event stream cut by the failover may log its error (a warning); no 500, though.
    assert "unexpected error" not in text, text[-3000:]


@pytest.fixture
def api(api_port):
    client = Http(api_port)
    yield client
    client.close()


@pytest.fixture(scope="module")
def keys(settings) -> KeySpace:
    return KeySpace(settings.key_prefix)


# -- games on every master -------------------------------------------------------------------


def test_games_on_every_master_are_played_to_the_end(api, redis_cluster, keys):
    placed = games_on_every_master(api, redis_cluster, keys)
    moves = all_moves(2, 2)
    for master_name, (game, *_) in placed.items():
        gid = game["id"]
        # Every key of the game is on that master itself (the hash tag), not just routed.
        master = next(m for m in redis_cluster.masters() if m.name == master_name)
        with contextlib.closing(master.client()) as direct:
            assert direct.exists(keys.game_meta(gid)) == 1
        order = moves[:]
        random.Random(gid).shuffle(order)
        for serial, move in enumerate(order, start=1):
            status, body, hdrs = api.request("POST", MOVES_PATH.format(gid),
                                              {"move": move, "serial": serial}, bearer(game))
            assert status == 201, body
            assert body["serial"] == serial and body["move"] == move
        with contextlib.closing(master.client()) as direct:
            assert direct.xlen(keys.game_log(gid)) == len(order)
            head = direct.hget(keys.game_meta(gid), "head")
        assert logged(api, gid) == list(enumerate(order, start=1))
        status, view, hdrs = api.request("GET", f"/v1/games/{gid}")
        # The ETag names the log position: the serial and the head the master keeps.
        assert status == 200 and hdrs["etag"] == f'"{len(order)}.{head}"'
        assert view["serial"] == len(order) and view["status"] == "finished"
        assert set(view["lines"]) == {"1"} and sum(view["scores"]) == 4
        replayed = engine.replay(engine.load_game("dots-and-boxes", width=2, height=2),
                                 list(enumerate(order, start=1))).to_dict()
        for field in ("serial", "lines", "scores", "status", "result"):
            assert view[field] == replayed[field], field
        status, index, _ = api.request("GET", f"/v1/games/{gid}/index")
        assert status == 200
        serials = sorted(s for ys in index.values() for os_ in ys.values()
                         for s in os_.values())
        assert serials == list(range(1, len(order) + 1))
        # A finished game takes no more moves; ?after= reads a suffix.
        status, body, _ = api.request("POST", MOVES_PATH.format(gid),
                                       {"move": order[0]}, bearer(game))
        assert status in (409, 422), body
        status, tail, _ = api.request("GET", MOVES_PATH.format(gid) + "?after=9")
        assert [m["serial"] for m in tail["moves"]] == [10, 11, 12]


# -- racing appends ----------------------------------------------------------------------------


def test_racing_appends_one_winner_per_serial(api, api_port):
    width, height, racers = 3, 3, 6
    game = create_game(api, width, height)
    gid = game["id"]
    rules = engine.load_game("dots-and-boxes", width=width, height=height)
    clients = [Http(api_port) for _ in range(racers)]
    winners: list[tuple[int, list]] = []
    try:
        for serial in range(1, rules.num_lines + 1):
            drawn = {tuple(m) for _, m in winners}
            free = [m for m in all_moves(width, height) if tuple(m) not in drawn]
            barrier = threading.Barrier(racers)
            answers: list[tuple[int, dict, list]] = []
            lock = threading.Lock()

            def race(i: int, serial=serial, free=free, barrier=barrier, answers=answers,
                     lock=lock) -> None:
                move = random.Random(f"{serial}-{i}").choice(free)
                barrier.wait()
                status, body, _ = clients[i].request(
                    "POST", MOVES_PATH.format(gid), {"move": move, "serial": serial},
                    bearer(game))
                with lock:
                    answers.append((status, body, move))

            threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(MAX_ANSWER_S)
            assert len(answers) == racers, f"serial {serial}: a racer hung"
            won = [(b, m) for s, b, m in answers if s == 201]
            lost = [b for s, b, _ in answers if s == 409]
            assert len(won) == 1 and len(lost) == racers - 1, (serial, answers)
            body, move = won[0]
            assert body["serial"] == serial and body["move"] == move
            assert all(b["current_serial"] == serial for b in lost), lost
            winners.append((serial, move))
    finally:
        for c in clients:
            c.close()
    log = logged(api, gid)
    assert [s for s, _ in log] == list(range(1, rules.num_lines + 1))  # every serial once
    assert log == winners
    status, view, _ = api.request("GET", f"/v1/games/{gid}")
    assert view["status"] == "finished"
    replayed = engine.replay(rules, log).to_dict()
    for field in ("serial", "lines", "scores", "status", "result"):
        assert view[field] == replayed[field], field


# -- the event stream ---------------------------------------------------------------------------


def test_event_streams_on_every_master_deliver_every_move_in_order(
        api, api_port, redis_cluster, keys):
    width, height = 2, 3  # 17 lines
    placed = games_on_every_master(api, redis_cluster, keys, width=width, height=height)
    games = [g for gs in placed.values() for g in gs]
    moves = all_moves(width, height)
    half = len(moves) // 2
    streams = [Stream(api_port, g["id"]) for g in games]
    try:
        for s in streams:
            kind, event_id, data = s.next()
            assert (kind, event_id, data["serial"]) == ("game", "0", 0)
        # Appends from another thread while the streams block in their reads.
        errors: list = []

        def append(upto: int, start: int = 1) -> None:
            client = Http(api_port)
            try:
                for serial in range(start, upto + 1):
                    for g in games:
                        status, body, _ = client.request(
                            "POST", MOVES_PATH.format(g["id"]),
                            {"move": moves[serial - 1], "serial": serial}, bearer(g))
                        if status != 201:
                            errors.append((status, body))
                    time.sleep(0.01)
            finally:
                client.close()

        writer = threading.Thread(target=append, args=(half,))
        writer.start()
        for s in streams:
            got = [s.next() for _ in range(half)]
            assert [(k, i.partition(".")[0]) for k, i, _ in got] == [
                ("move", str(n)) for n in range(1, half + 1)]
            assert [(d["serial"], d["move"]) for _, _, d in got] == list(
                enumerate(moves[:half], start=1))
            s.close()
        writer.join(MAX_ANSWER_S)
        assert not errors, errors
        # Moves appended while no stream is open, then resumed after Last-Event-ID.
        append(len(moves), start=half + 1)
        assert not errors, errors
        resumed = [Stream(api_port, g["id"], last_event_id=str(half - 2)) for g in games]
        streams += resumed
        for s in resumed:
            got = []
            while True:
                kind, event_id, data = s.next()
                if kind == "<end>":  # the game is finished: the stream ends
                    break
                assert kind == "move"
                got.append((int(event_id.partition(".")[0]), data["serial"], data["move"]))
            assert got == [(n, n, moves[n - 1]) for n in range(half - 1, len(moves) + 1)]
    finally:
        for s in streams:
            s.close()


# -- idempotent retries -------------------------------------------------------------------------


def test_idempotent_retries_answer_once(api, api_port, redis_cluster, keys):
    placed = games_on_every_master(api, redis_cluster, keys)
    moves = all_moves(2, 2)
    for game in (gs[0] for gs in placed.values()):
        gid, auth = game["id"], bearer(game)
        path = MOVES_PATH.format(gid)
        # The same key and body twice: the same 201, the second marked as a replay.
        first = api.request("POST", path, {"move": moves[0], "serial": 1},
                             {**auth, "Idempotency-Key": "k-1"})
        again = api.request("POST", path, {"move": moves[0], "serial": 1},
                             {**auth, "Idempotency-Key": "k-1"})
        assert first[0] == again[0] == 201 and first[1] == again[1]
        assert "idempotent-replayed" not in first[2]
        assert again[2].get("idempotent-replayed") == "true"
        # Without a serial too (the retry must not append the move a second time).
        first = api.request("POST", path, {"move": moves[1]},
                             {**auth, "Idempotency-Key": "k-2"})
        again = api.request("POST", path, {"move": moves[1]},
                             {**auth, "Idempotency-Key": "k-2"})
        assert first[0] == again[0] == 201 and first[1] == again[1]
        assert first[1]["serial"] == 2
        # After a later move, a retry of an earlier one still answers its own 201.
        assert api.request("POST", path, {"move": moves[2], "serial": 3},
                            {**auth, "Idempotency-Key": "k-3"})[0] == 201
        late = api.request("POST", path, {"move": moves[0], "serial": 1},
                            {**auth, "Idempotency-Key": "k-1"})
        assert late[0] == 201 and late[1]["serial"] == 1 and late[1]["move"] == moves[0]
        # The same key with another body: refused, nothing appended.
        status, body, _ = api.request("POST", path, {"move": moves[3], "serial": 4},
                                       {**auth, "Idempotency-Key": "k-1"})
        assert status == 422 and body["reason"] == "idempotency_key_reused", body
        # Concurrent retries of one request: one append, the same answer for all.
        answers: list = []
        barrier = threading.Barrier(6)

        def retry(path=path, auth=auth, answers=answers, barrier=barrier) -> None:
            client = Http(api_port)
            try:
                barrier.wait()
                answers.append(client.request("POST", path, {"move": moves[3], "serial": 4},
                                              {**auth, "Idempotency-Key": "k-4"}))
            finally:
                client.close()

        threads = [threading.Thread(target=retry) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(MAX_ANSWER_S)
        assert [a[0] for a in answers] == [201] * 6, answers
        assert len({json.dumps(a[1], sort_keys=True) for a in answers}) == 1
        assert sum(a[2].get("idempotent-replayed") != "true" for a in answers) == 1
        assert logged(api, gid) == [(1, moves[0]), (2, moves[1]), (3, moves[2]),
                                     (4, moves[3])]
        # One record per key, on the game's master, with a TTL.
        master = next(m for m in redis_cluster.masters() if m.name in placed
                      and game in placed[m.name])
        with contextlib.closing(master.client()) as direct:
            for key in ("k-1", "k-2", "k-3", "k-4"):
                assert direct.ttl(keys.idempotency_record(gid, key)) > 0, key


# -- failover ---------------------------------------------------------------------------------

CLIENTS = 8
#: Each client's game: 12x12 boxes (the largest the tests' server takes), 312 lines, to last
#: past the failover and the recovery at one move every :data:`PACE_S` or more.
FAILOVER_BOARD = (12, 12)
#: A client's pause after each 201.
PACE_S = 0.08
#: The trials of the failover under load, each with its own seed (moves, victim).
TRIAL_SEEDS = (1, 2, 3)


@pytest.fixture
def own_cluster(tmp_path):
    """3 masters with 2 replicas each, of this test's own."""
    cluster = RedisClusterProcesses(tmp_path / "cluster", replicas_per_master=2,
                                    node_timeout_ms=1500)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


class Watcher:
    """An event stream on one game, resumed after Last-Event-ID whenever it ends or breaks,
    as an EventSource does, in a thread of its own: ``seen`` holds each ``move`` event as
    ``(serial, move, event id)``."""

    def __init__(self, port: int, game_id: str) -> None:
        self.port, self.game_id = port, game_id
        self.seen: list[tuple[int, tuple, str]] = []
        self.breaks: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.is_set():
            # from serial 0: a first stream opened after the first move would show it in
            # its opening ``game`` event, not as a ``move``
            last = self.seen[-1][0] if self.seen else 0
            try:
                stream = Stream(self.port, self.game_id, str(last), MAX_ANSWER_S)
            except (OSError, httplib.HTTPException, AssertionError) as exc:
                self.breaks.append(f"open: {str(exc).splitlines()[0][:120]}")
                self.done.wait(0.2)
                continue
            try:
                while not self.done.is_set():
                    kind, event_id, data = stream.next(comments=True)
                    if kind == "<end>":
                        self.breaks.append("end")
                        break
                    if kind == "move":
                        self.seen.append((int(event_id.partition(".")[0]),
                                          tuple(data["move"]), event_id))
            except (OSError, httplib.HTTPException) as exc:
                self.breaks.append(repr(exc))
            finally:
                stream.close()
            self.done.wait(0.1)

    def stop(self, upto: int, timeout_s: float = 30.0) -> None:
        """Wait until the stream has shown ``upto`` moves (or ``timeout_s``), then stop."""
        deadline = time.monotonic() + timeout_s
        while len(self.seen) < upto and time.monotonic() < deadline:
            time.sleep(0.05)
        self.done.set()
        self.thread.join(MAX_ANSWER_S + 5)


@pytest.mark.parametrize("seed", TRIAL_SEEDS)
def test_with_every_replica_acknowledging_a_killed_master_loses_no_acknowledged_move(
        own_cluster, settings, tmp_path, keys, seed):
    """``BOXFISH_MIN_REPLICAS_ACK=2`` on a cluster with 2 replicas per master, so a 201 means
    every replica of the game's master has the move, whichever is promoted: the setting where
    an acknowledged move survives the loss of its master (docs/operations.md). 8 clients append
    to their own games (:class:`~.failover_load.Player`), 3 of them on the master that is
    SIGKILLed (chosen by the seed, which also draws the moves). While its promoted replica has
    one replica, its games' appends get 503 ``not_replicated`` and the other games go on; the
    killed master comes back as a replica and every client has 201s again within
    :data:`RECOVERY_BOUND_S`. Only 201/409/503 answers, none slower than the request timeout;
    no serial gets two 201s, no 409 is below an acknowledged serial, every acknowledged entry
    is in the log at its serial and position; an event stream on a game of the killed master,
    resumed after each break, shows that game's log, move by move, position by position."""
    cluster = own_cluster
    log_path = tmp_path / "api.log"
    with cluster_api(settings, cluster.url, log_path, threads=CLIENTS + 4,
                     BOXFISH_MIN_REPLICAS_ACK="2",
                     BOXFISH_REPLICA_ACK_TIMEOUT_MS="500") as port:
        setup = Http(port)
        placed = games_on_every_master(setup, cluster, keys, per_master=3,
                                       width=FAILOVER_BOARD[0], height=FAILOVER_BOARD[1])
        setup.close()
        # The victim owns 3 of the games, the others 5 between them.
        victim_name = sorted(placed)[seed % len(placed)]
        victim = next(m for m in cluster.masters() if m.name == victim_name)
        games = placed[victim_name] + [g for name, gs in sorted(placed.items())
                                       if name != victim_name for g in gs][:CLIENTS - 3]
        watcher = Watcher(port, placed[victim_name][0]["id"])
        try:
            ledger = Ledger(slow_s=MAX_ANSWER_S)
            load = Load([Player(i, game, port, ledger, seed, MAX_ANSWER_S)
                         for i, game in enumerate(games)], PACE_S).start()
            try:
                failover = fail_over_under_load(cluster, victim, load, on_victim={0, 1, 2},
                                                recovery_s=RECOVERY_BOUND_S)
            finally:
                hung = load.stop()
            print(f"\nfailover (seed {seed}): {victim.name} killed, {failover}; answers "
                  f"{dict(ledger.statuses)}, 503s {dict(ledger.problems)}; "
                  f"{len(ledger.acks)} moves acknowledged")
            check_answers(ledger, hung)
            with contextlib.closing(cluster.client(decode_responses=True)) as store:
                logs = compare_logs(port, store, keys, ledger, [g["id"] for g in games])
            ledger.assert_no_loss()

            # The stream delivered the whole log of its game, in order, each move once, with
            # the log's positions.
            expected = logs[watcher.game_id]
            watcher.stop(upto=len(expected))
        finally:
            watcher.done.set()
        print(f"stream on {watcher.game_id}: {len(watcher.seen)} moves, breaks: "
              f"{watcher.breaks}")
        differ = next((i for i, (a, b) in enumerate(zip(watcher.seen, expected, strict=False))
                       if a != b), None)
        assert watcher.seen == expected, (
            f"the stream's moves differ from the log: first difference at {differ}, "
            f"{len(watcher.seen)} seen, {len(expected)} stored; breaks {watcher.breaks}")
    text = log_path.read_text(errors="replace")
    # An event stream cut by the failover may log its error (a warning); no 500, though.
    assert "unexpected error" not in text, text[-3000:]


def test_the_failover_checks_report_a_move_lost_with_acknowledgements_off(
        redis_cluster, settings, tmp_path, keys):
    """The failover tests' checks see a loss where one happens: ``BOXFISH_MIN_REPLICAS_ACK=0``
    (a 201 does not survive the loss of its master) on the session's cluster. A
    :class:`~.failover_load.Player` has 3 moves acknowledged; its game's replica is frozen and
    cut off, the master acknowledges move 4 alone and is killed, and the replica takes over
    without it (as tests/service/test_failover_heads.py does). Playing on, the player meets a
    409 below serial 4, gets a second 201 for serial 4, and the log holds another entry there:
    the ledger reports each of the three, with serial 4 and the lost move, and its verdict
    fails."""
    redis_cluster.ensure_healthy()
    try:
        with cluster_api(settings, redis_cluster.url, tmp_path / "api.log",
                         BOXFISH_MIN_REPLICAS_ACK="0") as port:
            setup = Http(port)
            game = create_game(setup, 3, 3)
            setup.close()
            ledger = Ledger()
            player = Player(0, game, port, ledger, seed=30)
            for _ in range(3):
                assert player.step() == 201, ledger.statuses

            def acknowledged_by_the_master_alone() -> None:
                assert player.step() == 201, ledger.statuses

            lose_next_write(redis_cluster, keys.game_log(game["id"]),
                            acknowledged_by_the_master_alone)
            (lost,) = ledger.acks[3:]
            assert lost.serial == 4
            # Play on (503s while the API finds the new master) until 3 more 201s.
            deadline = time.monotonic() + 60
            while len(ledger.acks) < 7:
                assert time.monotonic() < deadline, (ledger.statuses, ledger.report())
                if player.step() != 201:
                    time.sleep(RETRY_PAUSE_S)
            assert player.http.request("GET", f"/v1/games/{game['id']}")[1]["serial"] == 6
            player.http.close()
            with contextlib.closing(redis_cluster.client(decode_responses=True)) as store:
                compare_logs(port, store, keys, ledger, [game["id"]])
    finally:
        redis_cluster.ensure_healthy()
    print(f"\n{ledger.report()}")
    assert sorted((b.kind, b.serial) for b in ledger.breaches) == [
        ("conflict_below_ack", 4), ("lost", 4), ("second_ack", 4)], ledger.report()
    named = f"{list(lost.move)} at {lost.position}"
    assert all(named in b.detail for b in ledger.breaches), ledger.report()
    with pytest.raises(AssertionError, match=r"lost: client 0, game \S+, serial 4: 201 for "):
        ledger.assert_no_loss()
