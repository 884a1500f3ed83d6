"""``GET /v1/games``: the most recently created games, through the Flask test client (every
response checked against openapi.yaml by the ``client`` fixture)."""

from __future__ import annotations

import time

import pytest


def test_lists_the_newest_games_first(client, new_game):
    made = []
    for game, params in (("dots-and-boxes", {"width": 3, "height": 2}),
                         ("extreme-tictactoe", {}), ("dots-and-boxes", {})):
        made.append(new_game(game, **params)[0])
        time.sleep(0.005)  # distinct created_at milliseconds: a strict order to check
    gid, auth, _ = new_game()
    made.append(gid)
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1], "serial": 1},
                       headers=auth).status_code == 201
    resp = client.get("/v1/games?limit=4")
    assert resp.status_code == 200
    games = resp.json["games"]
    assert [g["id"] for g in games] == made[::-1]
    assert games[0]["serial"] == 1 and games[0]["status"] == "in_progress"
    assert (games[3]["game"], games[3]["width"], games[3]["height"]) == ("dots-and-boxes", 3, 2)
    assert games[2]["game"] == "extreme-tictactoe" and "width" not in games[2]
    assert all("engine" not in g and "write_token" not in g for g in games)
    assert games[0]["created_at"] >= games[3]["created_at"]
    assert [g["id"] for g in client.get("/v1/games?limit=2").json["games"]] == made[:1:-1]
    default = client.get("/v1/games").json["games"]
    assert len(default) >= 4 and len(default) <= 20 and default[:4] == games


def test_lists_the_engine_seat(client):
    resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 1, "height": 1,
                                          "engine": {"seat": 1, "time_ms": 50}})
    assert resp.status_code == 201
    listed = client.get("/v1/games?limit=1").json["games"]
    assert listed[0]["id"] == resp.json["id"]
    assert listed[0]["engine"] == {"seat": 1, "time_ms": 50}


@pytest.mark.parametrize("bad", ["0", "101", "-1", "x", "1.5", ""])
def test_limit_out_of_bounds_is_422(client, bad):
    resp = client.get(f"/v1/games?limit={bad}")
    assert resp.status_code == 422
    assert resp.mimetype == "application/problem+json"
    assert resp.json["errors"][0]["loc"] == ["query", "limit"]


def test_limit_bounds_are_allowed(client, new_game):
    new_game()
    assert len(client.get("/v1/games?limit=1").json["games"]) == 1
    assert client.get("/v1/games?limit=100").status_code == 200
