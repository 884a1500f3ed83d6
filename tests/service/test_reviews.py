"""Game reviews (issue 33) through a real ``boxfish serve`` (its own embedded Redis, key prefix,
queue and port; two analysis workers): a finished 3x3 Dots-and-Boxes game reviewed exactly
and checked against the independent reference solver, two reviews of one game at once, the bad
inputs, the Python client (sync and async) and ``boxfish review``, and an Extreme
Tic-Tac-Toe review."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from boxfish import engine
from boxfish.client import AsyncClient, Client
from boxfish.engine.dots.search.board import tables
from boxfish.service.http.app import create_app
from tests.engine.dots.reference import reference_move_values, reference_value

from .conftest import boxfish_serve

#: The served maximum of time_ms (a review's is per position).
MAX_TIME_MS = 5000
#: How long any one review may take here, at most (a loaded machine included).
REVIEW_DEADLINE_S = 180
JUDGEMENTS = {"best", "inaccuracy", "mistake", "blunder"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``boxfish serve`` with two analysis workers on a free port, keys and queue its own."""
    tag = f"rv-{uuid.uuid4().hex[:8]}"
    with boxfish_serve(tmp_path_factory.mktemp("served") / "data",
                       {"BOXFISH_MAX_TIME_MS": str(MAX_TIME_MS), "BOXFISH_KEY_PREFIX": tag,
                        "BOXFISH_QUEUE_NAME": tag, "BOXFISH_RATE_LIMIT_ENABLED": "false"},
                       "--webhook-workers", "0", "--http-workers", "1", "--threads", "8",
                       "--search-threads", "1") as base:
        yield base


def _play_game(base: str, body: dict, moves: list, token: list | None = None) -> str:
    """A new game with ``moves`` played; its id (its write token appended to ``token``)."""
    with Client(base) as api:
        game = api.create_game(**body)
        for move in moves:
            api.play(game.id, move, token=game.token)
    if token is not None:
        token.append(game.token)
    return game.id


def _random_game(name: str, seed: int, limit: int | None = None, **params) -> list:
    """The moves of a game of random legal moves (at most ``limit``)."""
    rng = random.Random(seed)
    state = engine.load_game(name, **params).new_state()
    while not state.is_terminal() and (limit is None or len(state.history) < limit):
        state.play(rng.choice(state.legal_moves()))
    return [list(m) for m in state.history]


def _finished_review(http: httpx.Client, review_id: str) -> dict:
    """The review once it has ended (``?wait=`` polls, with a deadline)."""
    deadline = time.monotonic() + REVIEW_DEADLINE_S
    while True:
        r = http.get(f"/v1/reviews/{review_id}", params={"wait": 5})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] in ("queued", "started", "finished"), body
        if body["status"] == "finished":
            return body
        assert time.monotonic() < deadline, f"review not finished: {body['progress']}"


def _etag_position(http: httpx.Client, game_id: str) -> str:
    return http.get(f"/v1/games/{game_id}").headers["ETag"].strip('"')


def _check_well_formed(body: dict, moves: list) -> None:
    assert body["id"].startswith("rv_")
    assert len(body["moves"]) == len(moves)
    assert body["progress"]["done"] == body["progress"]["total"]
    for i, m in enumerate(body["moves"]):
        assert m["serial"] == i + 1 and m["move"] == moves[i]
        assert m["loss"] >= 0 and m["lower"] >= 0, m
        assert m["lower"] <= m["loss"] and (m["upper"] is None or m["loss"] <= m["upper"]), m
        assert m["judgement"] in JUDGEMENTS and m["best_moves"], m
    assert [p["player"] for p in body["players"]] == [0, 1]
    for p in body["players"]:
        assert 0 <= p["accuracy"] <= 100 and p["total_loss"] >= 0


def _check_against_reference(body: dict, moves: list, w: int, h: int) -> None:
    """Every exact value and loss of a Dots review is the reference solver's; every move
    (3x3: all solvable at once) is exact."""
    t = tables(w, h)
    drawn = 0
    for m, move in zip(body["moves"], moves, strict=True):
        line = t.geo.line_id(*move)
        assert m["exact"], m
        before = reference_value(w, h, drawn, max_seconds=60)
        played = reference_move_values(w, h, drawn, [line], max_seconds=60)[line]
        assert (m["value_before"], m["value_played"], m["loss"]) == (
            before, played, before - played), (m, before, played)
        assert m["lower"] == m["upper"] == m["loss"]
        for best in m["best_moves"]:
            bl = t.geo.line_id(*best)
            assert reference_move_values(w, h, drawn, [bl], max_seconds=60)[bl] == before
        drawn |= 1 << line


def test_a_served_review_of_a_finished_3x3_game_agrees_with_the_reference_solver(served):
    moves = _random_game("dots-and-boxes", 33, width=3, height=3)
    game_id = _play_game(served, {"width": 3, "height": 3}, moves)
    with httpx.Client(base_url=served, timeout=30) as http:
        r = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 2000})
        assert r.status_code == 202, r.text
        assert r.headers["Location"] == f"/v1/reviews/{r.json()['id']}"
        assert r.json()["status"] in ("queued", "started")
        assert r.json()["progress"]["total"] == len(moves) + 1
        body = _finished_review(http, r.json()["id"])
        assert body["game_id"] == game_id and body["game"] == "dots-and-boxes"
        assert body["position"] == _etag_position(http, game_id)
        assert body["time_ms"] == 2000
    _check_well_formed(body, moves)
    _check_against_reference(body, moves, 3, 3)
    for p in body["players"]:
        mine = [m for m in body["moves"] if m["player"] == p["player"]]
        assert p["moves"] == len(mine) and p["exact"]
        assert p["total_loss"] == sum(m["loss"] for m in mine)


def test_two_reviews_of_one_game_at_once_both_finish_right(served):
    """Two reviews of one game (each its own time, so two jobs: identical requests join one)
    run at once on the two workers; both agree with the reference solver."""
    moves = _random_game("dots-and-boxes", 7, width=3, height=3)
    game_id = _play_game(served, {"width": 3, "height": 3}, moves)
    with httpx.Client(base_url=served, timeout=30) as http:
        def review(time_ms: int) -> dict:
            r = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": time_ms})
            assert r.status_code == 202, r.text
            return _finished_review(http, r.json()["id"])

        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(review, (2000, 1999))
        assert first["id"] != second["id"]
        # the same request again joins the finished review
        again = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 2000})
        assert again.status_code == 200 and again.json()["id"] == first["id"], again.text
    for body in (first, second):
        _check_well_formed(body, moves)
        _check_against_reference(body, moves, 3, 3)


def test_a_review_fills_the_store_of_exact_values_and_the_next_one_reads_it(served):
    """What one review proves goes to the store of exact values (``boxfish serve`` has it on):
    the game's positions are then looked up with no search, and a second review (another
    time, so another job) reads them, with the same reference-checked values."""
    moves = _random_game("dots-and-boxes", 11, width=3, height=3)
    game_id = _play_game(served, {"width": 3, "height": 3}, moves)
    game = engine.load_game("dots-and-boxes", width=3, height=3)

    def hits(http) -> float:
        text = http.get("/metrics").text
        return sum(float(line.split()[1]) for line in text.splitlines()
                   if line.startswith("boxfish_exact_store_hits "))

    with httpx.Client(base_url=served, timeout=30) as http:
        first = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 1500})
        assert first.status_code == 202, first.text
        first = _finished_review(http, first.json()["id"])
        state = game.new_state()
        for m in moves[:6]:
            state.play(tuple(m))
        looked = http.get("/v1/positions", params={"width": 3, "height": 3,
                                                   "lines": state.to_lines()})
        assert looked.status_code == 200, looked.text
        assert looked.json()["value"] == reference_value(3, 3, state.drawn)
        before = hits(http)
        second = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 1400})
        assert second.status_code == 202, second.text
        second = _finished_review(http, second.json()["id"])
        assert hits(http) >= before + len(moves) // 2
    assert second["moves"] == first["moves"]
    _check_against_reference(second, moves, 3, 3)


def test_a_finished_review_has_a_value_chart_in_svg_and_png(served):
    """Every move is a point of the chart at its value for the first player; the PNG has the
    asked width; an unknown review or format is a 404."""
    import io
    import xml.etree.ElementTree as ET

    from PIL import Image

    moves = _random_game("dots-and-boxes", 13, width=2, height=2)
    game_id = _play_game(served, {"width": 2, "height": 2}, moves)
    with httpx.Client(base_url=served, timeout=30) as http:
        r = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 300})
        assert r.status_code == 202, r.text
        body = _finished_review(http, r.json()["id"])
        svg = http.get(f"/v1/reviews/{body['id']}/chart.svg")
        assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
        points = [e for e in ET.fromstring(svg.content).iter()
                  if e.tag.endswith("circle") and e.get("data-serial")]
        assert [int(p.get("data-serial")) for p in points] == [m["serial"]
                                                                for m in body["moves"]]
        for p, m in zip(points, body["moves"], strict=True):
            want = m["value_before"] if m["player"] == 0 else -m["value_before"]
            assert float(p.get("data-value")) == want
            assert p.get("data-judgement") == m["judgement"]
        png = http.get(f"/v1/reviews/{body['id']}/chart.png", params={"size": 640})
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        assert Image.open(io.BytesIO(png.content)).size[0] == 640
        assert http.get(f"/v1/reviews/{body['id']}/chart.txt").status_code == 404
        missing = http.get(f"/v1/reviews/rv_{uuid.uuid4().hex}/chart.svg")
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"


def test_a_review_names_the_log_position_and_a_new_one_reviews_the_new_log(served):
    moves = _random_game("dots-and-boxes", 5, width=2, height=2)
    token: list = []
    game_id = _play_game(served, {"width": 2, "height": 2}, moves[:4], token)
    with httpx.Client(base_url=served, timeout=30) as http:
        first = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 200})
        assert first.status_code == 202, first.text
        at_first = _etag_position(http, game_id)
        with Client(served) as api:
            api.play(game_id, moves[4], token=token[0])
        second = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 200})
        assert second.status_code == 202, second.text
        old, new = (_finished_review(http, r.json()["id"]) for r in (first, second))
        assert old["position"] == at_first and len(old["moves"]) == 4
        assert new["position"] == _etag_position(http, game_id) != at_first
        assert len(new["moves"]) == 5
    _check_well_formed(old, moves[:4])
    _check_well_formed(new, moves[:5])


def test_bad_inputs_are_problems(served):
    empty = _play_game(served, {"width": 2, "height": 2}, [])
    played = _play_game(served, {"width": 2, "height": 2}, [[1, 1, 1]])
    with httpx.Client(base_url=served, timeout=30) as http:
        def problem(r, status: int, slug: str | None = None) -> dict:
            assert r.status_code == status, r.text
            assert r.headers["Content-Type"].startswith("application/problem+json")
            body = r.json()
            assert body["status"] == status and body["detail"]
            if slug:
                assert body["type"].endswith(slug), body
            return body

        problem(http.post("/v1/games/nosuchgame/reviews", json={}), 404, "not-found")
        body = problem(http.post(f"/v1/games/{empty}/reviews", json={}), 409,
                       "nothing-to-review")
        assert body["reason"] == "no_moves"
        body = problem(http.post(f"/v1/games/{played}/reviews",
                                 json={"time_ms": MAX_TIME_MS + 1}), 422)
        assert body["reason"] == "limit_exceeded"
        problem(http.post(f"/v1/games/{played}/reviews", json={"time_ms": 0}), 422)
        problem(http.post(f"/v1/games/{played}/reviews", json={"time": 5}), 422)
        problem(http.get("/v1/reviews/rv_" + "0" * 32), 404, "not-found")
        problem(http.get("/v1/reviews/nosuchreview"), 404, "not-found")
        # a review is no analysis, and an analysis no review
        r = http.post(f"/v1/games/{played}/reviews", json={"time_ms": 50})
        assert r.status_code == 202, r.text
        problem(http.get(f"/v1/reviews/{r.json()['id']}", params={"wait": "-1"}), 422)
        problem(http.get(f"/v1/analyses/{r.json()['id']}"), 404)
        a = http.post(f"/v1/games/{played}/analyses", json={"time_ms": 50})
        assert a.status_code in (200, 202), a.text
        problem(http.get(f"/v1/reviews/{a.json()['id']}"), 404)
        _finished_review(http, r.json()["id"])


def test_the_client_and_the_command_line(served):
    moves = _random_game("dots-and-boxes", 11, width=2, height=2)
    game_id = _play_game(served, {"width": 2, "height": 2}, moves)
    with Client(served) as api:
        review = api.review(game_id, time_ms=300, timeout=REVIEW_DEADLINE_S)
    assert review.id.startswith("rv_") and review.game_id == game_id
    _check_well_formed(review.raw, moves)
    _check_against_reference(review.raw, moves, 2, 2)

    async def reviewed():
        async with AsyncClient(served) as api:
            return await api.review(game_id, time_ms=300, timeout=REVIEW_DEADLINE_S)

    again = asyncio.run(reviewed())  # the same request: it joins the finished review
    assert again.id == review.id and again.moves == review.moves

    out = subprocess.run([sys.executable, "-m", "boxfish.service.runtime.cli", "review",
                          game_id, "--url", served, "--time-ms", "300"],
                         capture_output=True, text=True, timeout=REVIEW_DEADLINE_S)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert game_id in lines[0] and lines[1].split()[:3] == ["serial", "player", "move"]
    assert len(lines) == 2 + len(moves) + 2
    for line, m in zip(lines[2:], review.moves, strict=False):
        assert line.split()[0] == str(m["serial"]) and m["judgement"] in line
    assert lines[-2].startswith("player 0:") and "accuracy" in lines[-2]
    missing = subprocess.run([sys.executable, "-m", "boxfish.service.runtime.cli", "review",
                              "nosuchgame", "--url", served],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no game" in missing.stderr


def test_an_extreme_tictactoe_review_finishes_with_a_move_list(served):
    moves = _random_game("extreme-tictactoe", 3, limit=12)
    game_id = _play_game(served, {"game": "extreme-tictactoe"}, moves)
    with httpx.Client(base_url=served, timeout=30) as http:
        r = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 50})
        assert r.status_code == 202, r.text
        body = _finished_review(http, r.json()["id"])
    assert body["game"] == "extreme-tictactoe"
    _check_well_formed(body, moves)


def test_reviews_have_a_rate_class_of_their_own(settings, redis_client):
    """In process, on the suite's Redis with keys and a queue of this test's own: spending the
    analyses' limit leaves reviews their own, and theirs is refused as ``reviews``."""
    tag = f"rv-limits-{uuid.uuid4().hex[:8]}"
    own = settings.model_copy(update={
        "key_prefix": tag, "queue_name": tag, "rate_limit_enabled": True,
        "rate_limit_analyses": "1/minute", "rate_limit_reviews": "2/minute",
        "rate_limit_games": "", "rate_limit_appends": "", "rate_limit_reads": ""})
    try:
        client = create_app(own, connection=redis_client).test_client()
        game = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2}).json
        auth = {"Authorization": f"Bearer {game['write_token']}"}
        assert client.post(f"/v1/games/{game['id']}/moves", json={"move": [1, 1, 1]},
                           headers=auth).status_code == 201
        path = f"/v1/games/{game['id']}"
        assert client.post(f"{path}/analyses", json={"time_ms": 10}).status_code == 202
        assert client.post(f"{path}/analyses", json={"time_ms": 11}).status_code == 429
        for time_ms in (10, 11):
            r = client.post(f"{path}/reviews", json={"time_ms": time_ms})
            assert r.status_code == 202, r.json
            assert r.headers["RateLimit-Limit"] == "2"
        r = client.post(f"{path}/reviews", json={"time_ms": 12})
        assert r.status_code == 429 and r.json["route_class"] == "reviews"
        assert int(r.headers["Retry-After"]) > 0
    finally:
        for key in redis_client.scan_iter(f"{tag}:*"):
            redis_client.delete(key)
        for key in redis_client.scan_iter(f"rq:*{tag}*"):
            redis_client.delete(key)
        for key in redis_client.scan_iter("rq:job:*"):
            if redis_client.hget(key, "origin") == tag.encode():
                redis_client.delete(key)
        redis_client.srem("rq:queues", f"rq:queue:{tag}")
