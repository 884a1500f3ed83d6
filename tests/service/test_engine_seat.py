"""The engine seat: Boxfish plays one side of a game.

API-level tests use an app on a queue of their own (no worker serves it) and run its jobs in
this process (``work_here``) with an :class:`EngineMovePlayer` on the test's Redis; the end to
end tests play whole games through a real gunicorn, the event stream and a real
``boxfish worker`` subprocess.
"""

from __future__ import annotations

import json
import random
import time
import uuid

import pytest
import redis
import requests
from rq import Queue
from rq.job import Job

from boxfish import engine
from boxfish.service.application.engine_seats import (
    ENGINE_JOB_FUNCTION,
    ENGINE_RETRIES,
    engine_job_id,
)
from boxfish.service.http.app import create_app
from boxfish.service.store import connections
from boxfish.workers import engine_move_job as worker_engine_seat
from boxfish.workers.analysis_job import AnalysisRunner

from .conftest import CheckedClient

TIMEOUT_S = 30


@pytest.fixture
def own_settings(settings):
    """The session's settings with a queue of this test's own: no worker takes its jobs."""
    return settings.model_copy(update={"queue_name": f"{settings.queue_name}-seat-"
                                                     f"{uuid.uuid4().hex[:6]}"})


@pytest.fixture
def seat_client(own_settings, redis_client, spec) -> CheckedClient:
    return CheckedClient(create_app(own_settings, connection=redis_client).test_client(), spec)


@pytest.fixture
def player(own_settings, redis_client, monkeypatch):
    """This process's engine-move player (what ``process_player()`` gives a worker), on the
    test's Redis."""
    conns = connections.Connections(store=redis_client, queue=redis_client, cluster=False)
    real = worker_engine_seat.EngineMovePlayer(own_settings, conns,
                                               AnalysisRunner(search_cache_entries=1000))
    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: real)
    return real


def create(client, seat: int, game="dots-and-boxes", time_ms=20, **params):
    if game == "dots-and-boxes":
        params = {"width": 2, "height": 2, **params}
    resp = client.post("/v1/games", json={"game": game, **params,
                                          "engine": {"seat": seat, "time_ms": time_ms}})
    assert resp.status_code == 201, resp.json
    body = resp.json
    return body["id"], {"Authorization": f"Bearer {body['write_token']}"}, body


def moves_of(client, gid) -> list[dict]:
    return client.get(f"/v1/games/{gid}/moves").json["moves"]


def job(redis_client, gid, serial) -> Job | None:
    return Job.fetch(engine_job_id(gid, serial), connection=redis_client) \
        if redis_client.exists(f"rq:job:{engine_job_id(gid, serial)}") else None


# -- creating, reading, refusing ---------------------------------------------------------------


def test_create_with_the_engine_on_either_seat(seat_client, redis_client, own_settings):
    gid, _, body = create(seat_client, 0)
    assert body["engine"] == {"seat": 0, "time_ms": 20, "status": "thinking"}
    queued = job(redis_client, gid, 1)
    assert queued is not None and queued.origin == own_settings.queue_name
    assert queued.args == (gid, 1) and queued.retries_left == 3
    assert seat_client.get(f"/v1/games/{gid}").json["engine"]["status"] == "thinking"

    gid, _, body = create(seat_client, 1, game="extreme-tictactoe")
    assert body["engine"] == {"seat": 1, "time_ms": 20, "status": "waiting"}
    assert job(redis_client, gid, 1) is None
    got = seat_client.get(f"/v1/games/{gid}").json
    assert got["engine"] == {"seat": 1, "time_ms": 20, "status": "waiting"}

    resp = seat_client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                               "height": 2, "engine": {"seat": 1}})
    assert resp.json["engine"]["time_ms"] == own_settings.default_time_ms
    plain = seat_client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                                "height": 2})
    assert "engine" not in plain.json
    assert "engine" not in seat_client.get(f"/v1/games/{plain.json['id']}").json


def test_bad_engine_bodies_are_refused_and_create_nothing(seat_client, redis_client,
                                                          own_settings):
    metas = f"{own_settings.key_prefix}:*:meta"
    before = len(list(redis_client.scan_iter(metas)))
    base = {"game": "dots-and-boxes", "width": 2, "height": 2}
    cases = [
        ({"seat": 2}, "invalid_request"),
        ({"seat": -1}, "invalid_request"),
        ({"seat": True}, "invalid_request"),
        ({"seat": "0"}, "invalid_request"),
        ({"seat": 0.0}, "invalid_request"),
        ({}, "invalid_request"),
        ({"seat": 0, "time_ms": 0}, "invalid_request"),
        ({"seat": 0, "time_ms": None}, "invalid_request"),
        ({"seat": 0, "colour": "red"}, "invalid_request"),
        ({"seat": 0, "time_ms": own_settings.max_time_ms + 1}, "limit_exceeded"),
        (None, "invalid_request"),
        ([0], "invalid_request"),
    ]
    for engine_field, reason in cases:
        resp = seat_client.post("/v1/games", json={**base, "engine": engine_field})
        assert resp.status_code == 422, engine_field
        assert resp.json["reason"] == reason, (engine_field, resp.json)
    assert len(list(redis_client.scan_iter(metas))) == before
    assert Queue(own_settings.queue_name, connection=redis_client).count == 0


def test_a_client_cannot_move_for_the_engine(seat_client):
    gid, auth, _ = create(seat_client, 0)
    resp = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert resp.status_code == 409
    assert (resp.json["reason"], resp.json["current_serial"]) == ("engine_seat", 0)
    assert resp.json["type"].endswith(":engine-seat")
    assert moves_of(seat_client, gid) == []

    gid, auth, _ = create(seat_client, 1)
    first = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1], "serial": 1},
                             headers=auth)
    assert first.status_code == 201 and first.json["to_move"] == 1
    for body in ({"move": [1, 2, 1]}, {"move": [1, 2, 1], "serial": 2}):
        resp = seat_client.post(f"/v1/games/{gid}/moves", json=body, headers=auth)
        assert resp.status_code == 409 and resp.json["reason"] == "engine_seat", body
    stale = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 2, 1], "serial": 7},
                             headers=auth)
    assert stale.status_code == 409 and stale.json["type"].endswith(":serial-conflict")
    reserved = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 2, 1]},
                                headers={**auth, "Idempotency-Key": "engine:2"})
    assert reserved.status_code == 422 and reserved.json["reason"] == "invalid_idempotency_key"
    assert [m["serial"] for m in moves_of(seat_client, gid)] == [1]


def test_a_retried_client_append_is_replayed_even_when_the_engine_is_to_move(
        seat_client, own_settings, redis_client):
    gid, auth, _ = create(seat_client, 1)
    headers = {**auth, "Idempotency-Key": "k1"}
    first = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                             headers=headers)
    again = seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                             headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true" and again.json == first.json
    # The replay told the listener again: the engine's move 2 is still one job.
    queue = Queue(own_settings.queue_name, connection=redis_client)
    assert queue.get_job_ids() == [engine_job_id(gid, 2)]


# -- the job, in this process ------------------------------------------------------------------


def test_the_engine_plays_its_moves_through_the_queue(seat_client, own_settings, work_here,
                                                      player):
    gid, auth, _ = create(seat_client, 0, width=2, height=1)
    work_here(own_settings.queue_name)
    played = moves_of(seat_client, gid)
    assert [(m["serial"], m["player"]) for m in played] == [(1, 0)]
    assert seat_client.get(f"/v1/games/{gid}").json["engine"]["status"] == "waiting"
    # The client plays until the game ends, the engine answering each time.
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    while True:
        state = engine.replay(game, [(m["serial"], tuple(m["move"]))
                                     for m in moves_of(seat_client, gid)])
        if state.is_terminal():
            break
        assert state.to_move == 1
        resp = seat_client.post(f"/v1/games/{gid}/moves",
                                json={"move": list(state.legal_moves()[0]),
                                      "serial": state.serial + 1}, headers=auth)
        assert resp.status_code == 201, resp.json
        work_here(own_settings.queue_name)
    view = seat_client.get(f"/v1/games/{gid}").json
    assert view["status"] == "finished" and view["engine"]["status"] == "waiting"


def test_a_stale_job_does_nothing(seat_client, own_settings, redis_client, work_here, player):
    gid, auth, _ = create(seat_client, 1)
    queue = Queue(own_settings.queue_name, connection=redis_client)
    # The client (seat 0) is to move: a job for the engine's move 1 is stale.
    stale = queue.enqueue(ENGINE_JOB_FUNCTION, gid, 1)
    work_here(own_settings.queue_name)
    assert stale.return_value() == {"outcome": "stale", "serial": 0}
    assert moves_of(seat_client, gid) == []
    # The engine's move 2 is played once; the same job run again finds it played.
    seat_client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    work_here(own_settings.queue_name)
    assert [m["player"] for m in moves_of(seat_client, gid)] == [0, 1]
    again = queue.enqueue(ENGINE_JOB_FUNCTION, gid, 2)
    work_here(own_settings.queue_name)
    assert again.return_value() == {"outcome": "stale", "serial": 2}
    assert len(moves_of(seat_client, gid)) == 2


class FailingPlayer:
    """The real player, but its first ``failures`` plays raise ``error`` (a worker's error)."""

    def __init__(self, real, failures: int, error: Exception | None = None) -> None:
        self.real, self.failures, self.calls = real, failures, 0
        self.error = error or RuntimeError("injected failure of the engine's job")

    def play(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.real.play(*args, **kwargs)


#: A store outage the engine's job must outlast: far longer than RQ's immediate retries take
#: (moments), shorter than the pauses before them add up to (1 + 2 s by the third run).
OUTAGE_S = 2.5


class OutagePlayer:
    """The real player behind a move store that is down for ``outage_s`` from its first play:
    a play within that window raises ``redis.ConnectionError``. ``runs``: when each play
    began (``time.monotonic()``)."""

    def __init__(self, real, outage_s: float) -> None:
        self.real, self.outage_s, self.runs = real, outage_s, []

    def play(self, *args, **kwargs):
        self.runs.append(time.monotonic())
        if self.runs[-1] - self.runs[0] < self.outage_s:
            raise redis.ConnectionError("store down")
        return self.real.play(*args, **kwargs)


def test_a_job_that_fails_on_the_store_pauses_so_its_retries_outlast_an_outage(
        seat_client, own_settings, redis_client, work_here, player, monkeypatch):
    """RQ retries at once: a run that failed on the move store pauses 1 s, then 2 s, before
    it raises, so the job's runs outlast a store outage of 2.5 s and the engine's move is
    played. The pauses are slept (recorded on the way), and the runs were that far apart."""
    outage = OutagePlayer(player, OUTAGE_S)
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: outage)
    monkeypatch.setattr(worker_engine_seat, "sleep", pause)
    gid, _, _ = create(seat_client, 0)
    work_here(own_settings.queue_name)
    assert [(m["serial"], m["player"]) for m in moves_of(seat_client, gid)] == [(1, 0)]
    runs = outage.runs
    # At least one run failed; the one that played came after the outage, its retries not
    # all spent (a loaded host may stretch a pause past the outage's end: 2 or 3 runs).
    assert 2 <= len(runs) <= ENGINE_RETRIES and runs[-1] - runs[0] >= OUTAGE_S
    assert pauses == list(worker_engine_seat.STORE_ERROR_PAUSES_S[:len(runs) - 1])
    assert all(later - earlier >= paused
               for earlier, later, paused in zip(runs, runs[1:], pauses, strict=False))
    assert job(redis_client, gid, 1).get_status() == "finished"


def test_a_job_that_fails_otherwise_is_retried_without_a_pause(
        seat_client, own_settings, work_here, player, monkeypatch):
    """An error that is not the store's is retried at once: no pause."""
    pauses: list[float] = []
    monkeypatch.setattr(worker_engine_seat, "sleep", pauses.append)
    broken = FailingPlayer(player, failures=1)
    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: broken)
    gid, _, _ = create(seat_client, 0)
    work_here(own_settings.queue_name)
    assert broken.calls == 2 and pauses == []
    assert [(m["serial"], m["player"]) for m in moves_of(seat_client, gid)] == [(1, 0)]


def test_a_failed_job_is_retried_and_the_move_appears(seat_client, own_settings, redis_client,
                                                      work_here, player, monkeypatch):
    flaky = FailingPlayer(player, failures=1)
    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: flaky)
    gid, _, _ = create(seat_client, 0)
    work_here(own_settings.queue_name)
    assert flaky.calls == 2
    done = job(redis_client, gid, 1)
    assert done.get_status() == "finished" and done.return_value()["outcome"] == "played"
    assert [(m["serial"], m["player"]) for m in moves_of(seat_client, gid)] == [(1, 0)]


def test_spent_retries_show_failed_until_the_client_asks_again(seat_client, own_settings,
                                                               work_here, player, monkeypatch):
    broken = FailingPlayer(player, failures=10)
    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: broken)
    gid, auth, _ = create(seat_client, 0)
    work_here(own_settings.queue_name)
    assert broken.calls == 4  # the first run and three retries
    view = seat_client.get(f"/v1/games/{gid}").json
    assert view["engine"]["status"] == "failed"
    assert "injected failure" in view["engine"]["error"] and view["serial"] == 0

    assert seat_client.post(f"/v1/games/{gid}/engine/retry").status_code == 401
    monkeypatch.setattr(worker_engine_seat, "process_player", lambda: player)
    resp = seat_client.post(f"/v1/games/{gid}/engine/retry", headers=auth)
    assert resp.status_code == 200 and resp.json["engine"]["status"] == "thinking"
    work_here(own_settings.queue_name)
    view = seat_client.get(f"/v1/games/{gid}").json
    assert (view["serial"], view["engine"]["status"]) == (1, "waiting")
    # Nothing to retry now: nothing changes.
    resp = seat_client.post(f"/v1/games/{gid}/engine/retry", headers=auth)
    assert resp.status_code == 200 and resp.json["serial"] == 1
    plain = seat_client.post("/v1/games", json={"game": "extreme-tictactoe"}).json
    resp = seat_client.post(f"/v1/games/{plain['id']}/engine/retry",
                            headers={"Authorization": f"Bearer {plain['write_token']}"})
    assert resp.status_code == 404


# -- end to end: gunicorn, the event stream, a worker subprocess -------------------------------


def sse_events(resp):
    """``(event, data)`` of a live ``requests`` stream, as they arrive."""
    event, data = None, []
    for line in resp.iter_lines(decode_unicode=True):
        if line == "":
            if event is not None:
                yield event, json.loads("\n".join(data))
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def replayed_to(base: str, gid: str, game, serial: int):
    """The game's state after its first ``serial`` moves, replayed from ``GET .../moves``."""
    moves = requests.get(f"{base}/v1/games/{gid}/moves", timeout=TIMEOUT_S).json()["moves"]
    return engine.replay(game, [(m["serial"], tuple(m["move"])) for m in moves[:serial]])


def play_against_the_engine(base: str, body: dict, seat: int, max_client_moves=None,
                            seed=0, open_at_serial=0, time_ms=30) -> tuple[str, list[int]]:
    """Create a game with the engine on ``seat`` and play the other side with random legal
    moves, following the event stream, until the game ends (or the client made
    ``max_client_moves``). The stream is opened once the game reached ``open_at_serial``
    (the engine may have moved before it opens in any case). Returns the game id and the
    serials of the client's moves."""
    rng = random.Random(seed)
    created = requests.post(f"{base}/v1/games", timeout=TIMEOUT_S,
                            json={**body, "engine": {"seat": seat, "time_ms": time_ms}})
    assert created.status_code == 201, created.text
    gid = created.json()["id"]
    auth = {"Authorization": f"Bearer {created.json()['write_token']}"}
    game = engine.load_game(body["game"], **{k: v for k, v in body.items() if k != "game"})
    state = game.new_state()
    mine: list[int] = []
    deadline = time.monotonic() + TIMEOUT_S
    game_url = f"{base}/v1/games/{gid}"
    while requests.get(game_url, timeout=TIMEOUT_S).json()["serial"] < open_at_serial:
        assert time.monotonic() < deadline, "the engine did not move"
        time.sleep(0.05)
    with requests.get(f"{base}/v1/games/{gid}/events", stream=True, timeout=TIMEOUT_S) as resp:
        assert resp.status_code == 200
        for event, data in sse_events(resp):
            if event == "game":  # the whole state: the engine may have moved already
                assert data["engine"]["seat"] == seat
                state = replayed_to(base, gid, game, data["serial"])
                assert state.serial == data["serial"]
                to_move, status = data["to_move"], data["status"]
            else:
                assert data["serial"] == state.serial + 1
                state.play(game.parse_move(data["move"]))
                to_move, status = data["to_move"], data["status"]
            if status == "finished" or (max_client_moves is not None
                                        and len(mine) >= max_client_moves):
                break
            if to_move != seat:
                move = list(rng.choice(state.legal_moves()))
                posted = requests.post(f"{base}/v1/games/{gid}/moves", headers=auth,
                                       json={"move": move, "serial": state.serial + 1},
                                       timeout=TIMEOUT_S)
                assert posted.status_code == 201, posted.text
                mine.append(posted.json()["serial"])
    return gid, mine


@pytest.mark.parametrize("seat, width, height, open_at_serial",
                         [(0, 2, 2, 0), (1, 3, 3, 0), (0, 2, 2, 1)])
def test_a_whole_dots_game_against_the_engine(server_url, rq_worker, seat, width, height,
                                              open_at_serial):
    """Also with the stream opened after the engine's first move: its ``game`` event then
    holds that move, and the client plays on from it."""
    body = {"game": "dots-and-boxes", "width": width, "height": height}
    gid, mine = play_against_the_engine(server_url, body, seat, seed=width,
                                        open_at_serial=open_at_serial)
    moves = requests.get(f"{server_url}/v1/games/{gid}/moves", timeout=TIMEOUT_S).json()
    serials = [m["serial"] for m in moves["moves"]]
    assert serials == list(range(1, len(serials) + 1)) == list(range(1, 2 * width * height
                                                                      + width + height + 1))
    game = engine.load_game("dots-and-boxes", width=width, height=height)
    final = engine.replay(game, [(m["serial"], tuple(m["move"])) for m in moves["moves"]])
    assert final.is_terminal()
    engine_serials = [m["serial"] for m in moves["moves"] if m["player"] == seat]
    assert engine_serials and sorted(engine_serials + mine) == serials
    assert all(m["player"] != seat for m in moves["moves"] if m["serial"] in mine)
    view = requests.get(f"{server_url}/v1/games/{gid}", timeout=TIMEOUT_S).json()
    assert view["status"] == "finished" and view["engine"]["status"] == "waiting"


@pytest.mark.parametrize("seat", [0, 1])
def test_the_engine_plays_value_optimal_moves_where_its_proof_fits(server_url, rq_worker,
                                                                   seat):
    """The engine seat's promise: on 3x3 (24 lines), where a proof fits its 2 s from the
    empty board on, every move it plays is worth the position's exact value, by the
    independent reference solver (a plain alpha-beta, tests/engine/dots/reference)."""
    from boxfish.engine.dots.search.board import tables
    from tests.engine.dots.reference import reference_move_values, reference_value

    body = {"game": "dots-and-boxes", "width": 3, "height": 3}
    gid, _ = play_against_the_engine(server_url, body, seat, seed=7 + seat, time_ms=2000)
    moves = requests.get(f"{server_url}/v1/games/{gid}/moves", timeout=TIMEOUT_S).json()
    geo = tables(3, 3).geo
    drawn, checked = 0, 0
    for m in moves["moves"]:
        line = geo.line_id(*m["move"])
        if m["player"] == seat:
            best = reference_value(3, 3, drawn, max_seconds=60)
            assert reference_move_values(3, 3, drawn, [line], max_seconds=60)[line] == best, (
                f"serial {m['serial']}: the engine drew {m['move']}, worth less than {best}")
            checked += 1
        drawn |= 1 << line
    assert checked >= 6 and drawn == tables(3, 3).full


def test_a_few_moves_of_extreme_tictactoe_against_the_engine(server_url, rq_worker):
    gid, mine = play_against_the_engine(server_url, {"game": "extreme-tictactoe"}, seat=1,
                                        max_client_moves=3)
    moves = requests.get(f"{server_url}/v1/games/{gid}/moves", timeout=TIMEOUT_S).json()
    players = {m["serial"]: m["player"] for m in moves["moves"]}
    assert mine and all(players[s] == 0 for s in mine)
    assert [s for s, p in players.items() if p == 1]  # the engine answered
    game = engine.load_game("extreme-tictactoe")
    engine.replay(game, [(m["serial"], tuple(m["move"])) for m in moves["moves"]])
