"""Game records over the API: ``GET /v1/games/{id}/record`` and ``POST /v1/games/import``,
against the real server (gunicorn on the session's Redis), the Python client and the
``boxfish export`` / ``boxfish import`` commands as subprocesses.

Export then import gives a game with the same moves and result; a broken record is a 422
problem naming the move and the reason and creates nothing; an import retried with the same
Idempotency-Key makes one game (and finishes one an earlier attempt left half done);
OpenSpiel's action sequences import to the moves pyspiel played."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import uuid

import pyspiel
import pytest
import requests

from boxfish.client import AsyncClient, Client, InvalidRecord
from boxfish.engine import load_game
from boxfish.engine.records import parse_record, write_record
from boxfish.service.application.records import import_game_id
from tests.engine.test_records import random_game

TIMEOUT_S = 10
PROBLEM = "application/problem+json"


def random_moves(game, seed: int, length: int | None = None) -> list:
    """A random legal game's moves (:func:`random_game`) as the API writes them (lists)."""
    return [list(move) for move in random_game(game, seed, length)]


def new_game(base: str, body: dict) -> tuple[str, str]:
    resp = requests.post(f"{base}/v1/games", json=body, timeout=TIMEOUT_S)
    assert resp.status_code == 201, resp.text
    return resp.json()["id"], resp.json()["write_token"]


def play(base: str, game_id: str, token: str, moves) -> None:
    with requests.Session() as http:
        for serial, move in enumerate(moves, 1):
            resp = http.post(f"{base}/v1/games/{game_id}/moves",
                             json={"move": move, "serial": serial},
                             headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S)
            assert resp.status_code == 201, resp.text


def log_of(base: str, game_id: str) -> tuple[list, dict]:
    moves = requests.get(f"{base}/v1/games/{game_id}/moves", timeout=TIMEOUT_S).json()["moves"]
    state = requests.get(f"{base}/v1/games/{game_id}", timeout=TIMEOUT_S).json()
    return [m["move"] for m in moves], state


def import_text(base: str, text: str, key: str | None = None) -> requests.Response:
    headers = {"Content-Type": "text/plain; charset=utf-8"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return requests.post(f"{base}/v1/games/import", data=text.encode(), headers=headers,
                         timeout=TIMEOUT_S)


def store_keys(redis_client, settings) -> set:
    return set(redis_client.scan_iter(f"{settings.key_prefix}:*", count=1000))


def recent(base: str) -> list:
    return requests.get(f"{base}/v1/games?limit=100", timeout=TIMEOUT_S).json()["games"]


GAMES = [
    ({"game": "dots-and-boxes", "width": 3, "height": 3}, None),
    ({"game": "dots-and-boxes", "width": 5, "height": 5}, None),
    ({"game": "dots-and-boxes", "width": 4, "height": 2}, 7),
    ({"game": "extreme-tictactoe"}, None),
    ({"game": "extreme-tictactoe"}, 30),
]


@pytest.mark.parametrize("body, length", GAMES)
def test_export_then_import_gives_the_same_game(server_url, body, length):
    game = load_game(body["game"], **{k: v for k, v in body.items() if k != "game"})
    moves = random_moves(game, seed=len(str(body)) + (length or 0), length=length)
    game_id, token = new_game(server_url, body)
    play(server_url, game_id, token, moves)
    resp = requests.get(f"{server_url}/v1/games/{game_id}/record", timeout=TIMEOUT_S)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    record = parse_record(resp.text)
    state = requests.get(f"{server_url}/v1/games/{game_id}", timeout=TIMEOUT_S)
    assert resp.headers["ETag"] == state.headers["ETag"]
    assert f'[Position "{state.headers["ETag"].strip(chr(34))}"]' in resp.text
    assert record.headers["GameId"] == game_id

    imported = import_text(server_url, resp.text)
    assert imported.status_code == 201, imported.text
    new = imported.json()
    assert new["id"] != game_id and new["write_token"]
    assert imported.headers["Location"] == f"/v1/games/{new['id']}"
    new_moves, new_state = log_of(server_url, new["id"])
    old_moves, old_state = log_of(server_url, game_id)
    assert new_moves == old_moves == moves
    for key in ("scores", "result", "status", "to_move", "serial"):
        assert new_state[key] == old_state[key] == new[key]
    # the imported game takes moves like any other
    if not new["status"] == "finished":
        more = requests.post(f"{server_url}/v1/games/{new['id']}/moves",
                             json={"move": new["legal_moves"][0]},
                             headers={"Authorization": f"Bearer {new['write_token']}"},
                             timeout=TIMEOUT_S)
        assert more.status_code == 201


def test_export_at_a_serial(server_url):
    game_id, token = new_game(server_url, {"game": "dots-and-boxes", "width": 2, "height": 2})
    moves = random_moves(load_game("dots-and-boxes", width=2, height=2), 3)
    play(server_url, game_id, token, moves)
    resp = requests.get(f"{server_url}/v1/games/{game_id}/record?at=4", timeout=TIMEOUT_S)
    assert resp.status_code == 200
    record = parse_record(resp.text)
    assert [list(m) for m in record.moves] == moves[:4]
    assert resp.headers["ETag"].startswith('"4.')
    zero = requests.get(f"{server_url}/v1/games/{game_id}/record?at=0", timeout=TIMEOUT_S)
    assert zero.headers["ETag"] == '"0"' and parse_record(zero.text).moves == []
    beyond = requests.get(f"{server_url}/v1/games/{game_id}/record?at=99", timeout=TIMEOUT_S)
    assert beyond.status_code == 422 and beyond.json()["reason"] == "out_of_range"
    missing = requests.get(f"{server_url}/v1/games/nosuchgame/record", timeout=TIMEOUT_S)
    assert missing.status_code == 404


def _dots(movetext: str, headers: str = '[Size "2x2"]') -> str:
    return f'[Game "dots-and-boxes"]\n{headers}\n\n{movetext}\n'


BROKEN = [
    ("illegal move", _dots("1. 1,1,1 1... 2,1,1 2. 1,1,1"), "illegal_move", 3),
    ("off the board", _dots("1. 1,1,1 1... 7,7,1"), "illegal_move", 2),
    ("bad header", _dots("1. 1,1,1", '[Size "two by two"]'), "header", None),
    ("unknown game", '[Game "go"]\n\n1. 1,1,1\n', "header", None),
    ("unknown notation", _dots("1. 1,1,1 1... a1-b1"), "notation", 2),
    ("turn out of place", _dots("1. 1,1,1 1,2,1"), "turn", 2),
    ("truncated", _dots("1. 1,1,1 1... 2,1,1 2."), "truncated", 3),
    ("truncated header", '[Game "dots-and-boxes"]\n[Size "2', "truncated", None),
    ("wrong result", _dots("1. 1,1,1", '[Size "2x2"]\n[Result "1-0"]'), "result", None),
    ("garbage", "%PDF-1.4 \x01\x02 not a record", "header", None),
    ("empty", "", "header", None),
]


@pytest.mark.parametrize("what, text, reason, move", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_record_is_refused_and_creates_nothing(server_url, settings, redis_client,
                                                        what, text, reason, move):
    key = str(uuid.uuid4())
    before_keys, before_games = store_keys(redis_client, settings), recent(server_url)
    resp = import_text(server_url, text, key)
    assert resp.status_code == 422, resp.text
    assert resp.headers["Content-Type"] == PROBLEM
    problem = resp.json()
    assert problem["type"] == "urn:boxfish:problem:invalid-record"
    assert (problem["reason"], problem["move_number"]) == (reason, move)
    if move is not None:
        assert problem["detail"].startswith(f"move {move}")
    assert store_keys(redis_client, settings) == before_keys
    assert recent(server_url) == before_games
    assert requests.get(f"{server_url}/v1/games/{import_game_id(key)}",
                        timeout=TIMEOUT_S).status_code == 404


def test_an_illegal_move_names_the_engines_reason(server_url):
    resp = import_text(server_url, _dots("1. 1,1,1 1... 2,1,1 2. 1,1,1"))
    assert resp.json()["move_reason"] == "already_drawn" and resp.json()["line"] == 4


def test_too_large_records_are_refused(server_url, settings, redis_client):
    before = store_keys(redis_client, settings)
    # more moves than the server's max_moves (300): a whole 12x12 game has 312
    game = load_game("dots-and-boxes", width=12, height=12)
    text = write_record(game, random_moves(game, 1))
    resp = import_text(server_url, text)
    assert resp.status_code == 422 and resp.json()["reason"] == "limit_exceeded"
    # a board over the server's max_board_size (12)
    resp = import_text(server_url, _dots("1. 1,1,1", '[Size "13x13"]'))
    assert resp.status_code == 422 and resp.json()["reason"] == "limit_exceeded"
    # a body over max_body_bytes
    resp = import_text(server_url, _dots("1. 1,1,1 {" + "x" * settings.max_body_bytes + "}"))
    assert resp.status_code == 413 and resp.headers["Content-Type"] == PROBLEM
    assert store_keys(redis_client, settings) == before


def test_a_retried_import_makes_one_game(server_url):
    game = load_game("dots-and-boxes", width=3, height=3)
    text = write_record(game, random_moves(game, 5))
    key = str(uuid.uuid4())
    first = import_text(server_url, text, key)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = import_text(server_url, text, key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] == import_game_id(key)
    assert again.json()["write_token"] == first.json()["write_token"]
    assert [g["id"] for g in recent(server_url)].count(first.json()["id"]) == 1
    other = write_record(game, random_moves(game, 6))
    reused = import_text(server_url, other, key)
    assert reused.status_code == 422 and reused.json()["reason"] == "idempotency_key_reused"
    short = import_text(server_url, text, "too-short")
    assert short.status_code == 422 and short.json()["reason"] == "invalid_idempotency_key"


def test_a_retry_finishes_an_import_a_failure_left_half_done(app, client):
    """The first attempt dies after three of its appends (a 500); the retry with the same key
    appends the rest and answers the game, once."""
    games = app.extensions["boxfish"].games
    game = load_game("dots-and-boxes", width=2, height=2)
    moves = random_moves(game, 9)
    text = write_record(game, moves)
    key = str(uuid.uuid4())
    real_append, calls = games.append, []

    def failing_append(*args, **kwargs):
        calls.append(args)
        if len(calls) > 3:
            raise RuntimeError("the process died")
        return real_append(*args, **kwargs)

    games.append = failing_append
    try:
        resp = client.post("/v1/games/import", data=text, content_type="text/plain",
                           headers={"Idempotency-Key": key})
        assert resp.status_code == 500
    finally:
        games.append = real_append
    assert client.get(f"/v1/games/{import_game_id(key)}").get_json()["serial"] == 3
    resp = client.post("/v1/games/import", data=text, content_type="text/plain",
                       headers={"Idempotency-Key": key})
    assert resp.status_code == 201 and resp.headers["Idempotent-Replayed"] == "true"
    body = client.get(f"/v1/games/{import_game_id(key)}/moves").get_json()
    assert [m["move"] for m in body["moves"]] == moves


def test_openspiel_games_import_as_pyspiel_played_them(server_url):
    rng = random.Random(7)
    for width, height in ((2, 2), (3, 2), (5, 5)):
        sgame = pyspiel.load_game(f"dots_and_boxes(num_rows={height},num_cols={width})")
        state = sgame.new_initial_state()
        while not state.is_terminal():
            state.apply_action(rng.choice(state.legal_actions()))
        ours = load_game("dots-and-boxes", width=width, height=height)
        want = [list(ours.action_to_move(a)) for a in state.history()]
        for body in ({"format": "openspiel",
                      "record": pyspiel.serialize_game_and_state(sgame, state)},
                     {"format": "openspiel", "record": " ".join(map(str, state.history())),
                      "width": width, "height": height}):
            resp = requests.post(f"{server_url}/v1/games/import", json=body, timeout=TIMEOUT_S)
            assert resp.status_code == 201, resp.text
            moves, view = log_of(server_url, resp.json()["id"])
            assert moves == want
            r0, r1 = state.returns()
            s0, s1 = view["scores"]
            assert view["status"] == "finished" and (s0 > s1) - (s0 < s1) == (r0 > r1) - (r0 < r1)
    resp = requests.post(f"{server_url}/v1/games/import",
                         json={"format": "openspiel", "record": "0 1 1", "width": 2,
                               "height": 2}, timeout=TIMEOUT_S)
    assert resp.status_code == 422
    assert (resp.json()["reason"], resp.json()["move_number"]) == ("illegal_move", 3)
    resp = requests.post(f"{server_url}/v1/games/import",
                         json={"record": "x", "width": 2}, timeout=TIMEOUT_S)
    assert resp.status_code == 422


def test_the_python_clients_export_and_import(server_url):
    game = load_game("extreme-tictactoe")
    moves = random_moves(game, 11, 40)
    game_id, token = new_game(server_url, {"game": "extreme-tictactoe"})
    play(server_url, game_id, token, moves)
    with Client(server_url) as api:
        text = api.export_record(game_id)
        imported = api.import_record(text)
        assert imported.token and imported.serial == 40
        assert [m.move for m in api.moves(imported.id)] == moves
        assert parse_record(api.export_record(game_id, at=10)).moves == [
            tuple(m) for m in moves[:10]]
        with pytest.raises(InvalidRecord) as caught:
            api.import_record(text.replace(",", ";", 1))
        assert caught.value.reason == "notation" and caught.value.move_number == 1

    async def with_async():
        async with AsyncClient(server_url) as api:
            text = await api.export_record(game_id)
            key = str(uuid.uuid4())
            one = await api.import_record(text, idempotency_key=key)
            two = await api.import_record(text, idempotency_key=key)
            return one, two

    one, two = asyncio.run(with_async())
    assert one.id == two.id and one.token == two.token and one.serial == 40


def boxfish(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "boxfish.service.runtime.cli", *args],
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_boxfish_export_and_import_commands(server_url, tmp_path):
    game = load_game("dots-and-boxes", width=3, height=3)
    moves = random_moves(game, 13)
    game_id, token = new_game(server_url, {"game": "dots-and-boxes", "width": 3, "height": 3})
    play(server_url, game_id, token, moves)
    path = tmp_path / "game.txt"
    done = boxfish("export", game_id, "--url", server_url, "-o", str(path))
    assert done.returncode == 0, done.stderr
    done = boxfish("import", str(path), "--url", server_url)
    assert done.returncode == 0, done.stderr
    new_id, new_token = done.stdout.split()
    assert log_of(server_url, new_id)[0] == moves and new_token
    # to standard output, and back in from standard input
    done = boxfish("export", game_id, "--url", server_url)
    assert done.stdout == path.read_text()
    done = boxfish("import", "-", "--url", server_url, stdin=done.stdout)
    assert done.returncode == 0 and log_of(server_url, done.stdout.split()[0])[0] == moves
    # OpenSpiel's actions
    actions = " ".join(str(game.move_to_action(m)) for m in moves)
    done = boxfish("import", "-", "--url", server_url, "--format", "openspiel", "--size", "3x3",
                   stdin=actions)
    assert done.returncode == 0 and log_of(server_url, done.stdout.split()[0])[0] == moves
    # refused: the move and the reason, exit status 2
    path.write_text(_dots("1. 1,1,1 1... 1,1,1"))
    done = boxfish("import", str(path), "--url", server_url)
    assert done.returncode == 2 and done.stdout == ""
    assert "at move 2 (illegal_move)" in done.stderr
    done = boxfish("export", "nosuchgame", "--url", server_url)
    assert done.returncode == 2
