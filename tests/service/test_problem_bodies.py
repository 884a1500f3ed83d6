"""The whole problem bodies of the checks the views share (the search time's default and
maximum, "at most" limits, one field's error, the write token): every member as the API has
always written it, so that the helpers that write them once change nothing a client sees."""

from __future__ import annotations

import base64

BASE = {"game": "dots-and-boxes", "width": 2, "height": 2}
PREFIX = "urn:boxfish:problem:"


def invalid(detail, loc, msg, type_, reason):
    return {"type": PREFIX + "invalid-request", "title": "Invalid request", "status": 422,
            "detail": detail, "reason": reason,
            "errors": [{"loc": loc, "msg": msg, "type": type_}]}


def test_the_search_time_of_an_analysis_and_of_an_engine_seat(client):
    resp = client.post("/v1/analyses", json={**BASE, "time_ms": 5001})
    assert resp.status_code == 422
    assert resp.json == invalid("time_ms must be at most 5000 on this server", ["time_ms"],
                                "at most 5000", "less_than_equal", "limit_exceeded")
    resp = client.post("/v1/games", json={**BASE, "engine": {"seat": 1, "time_ms": 5001}})
    assert resp.status_code == 422
    assert resp.json == invalid("engine.time_ms must be at most 5000 on this server",
                                ["engine", "time_ms"], "at most 5000", "less_than_equal",
                                "limit_exceeded")
    # Both over: the time is named first, as before.
    resp = client.post("/v1/analyses", json={**BASE, "time_ms": 5001, "multipv": 65})
    assert resp.json["detail"] == "time_ms must be at most 5000 on this server"
    # Without one, the server's default.
    made = client.post("/v1/games", json={**BASE, "engine": {"seat": 1}})
    assert made.status_code == 201 and made.json["engine"]["time_ms"] == 1000


def test_at_most_limits(client, new_game):
    resp = client.post("/v1/analyses", json={**BASE, "multipv": 65})
    assert resp.json == invalid("multipv must be at most 64", ["multipv"], "at most 64",
                                "less_than_equal", "limit_exceeded")
    resp = client.post("/v1/analyses", json={**BASE, "width": 13, "height": 14})
    assert resp.json == {
        "type": PREFIX + "invalid-request", "title": "Invalid request", "status": 422,
        "detail": "width and height must be at most 12 on this server",
        "reason": "limit_exceeded",
        "errors": [{"loc": ["width"], "msg": "at most 12", "type": "less_than_equal"},
                   {"loc": ["height"], "msg": "at most 12", "type": "less_than_equal"}]}
    gid, _, _ = new_game()
    resp = client.post(f"/v1/games/{gid}/analyses", json={"at": 3})
    assert resp.json == invalid("at must be at most the game's serial 0", ["at"], "at most 0",
                                "less_than_equal", "out_of_range")
    resp = client.get(f"/v1/games/{gid}/board.svg?at=3")
    assert resp.json == invalid("at must be at most the game's serial 0", ["query", "at"],
                                "at most 0", "less_than_equal", "out_of_range")


def test_one_field_errors(client, new_game):
    resp = client.post("/v1/analyses", json={**BASE, "moves": [[1, 1, 1]] * 301})
    assert resp.json == invalid("at most 300 moves per request on this server", ["moves"],
                                "at most 300 items", "too_long", "limit_exceeded")
    resp = client.post("/v1/analyses?wait=11", json=BASE)
    assert resp.json == invalid("wait must be a number of seconds from 0 to 10, got '11'",
                                ["query", "wait"], "0 to 10", "less_than_equal",
                                "invalid_request")
    resp = client.get("/v1/games?limit=x")
    assert resp.json == invalid("query parameter 'limit' must be an integer, got 'x'",
                                ["query", "limit"], "not an integer", "int_parsing",
                                "invalid_request")
    resp = client.get("/v1/games?limit=101")
    assert resp.json == invalid("query parameter 'limit' must be <= 100", ["query", "limit"],
                                "<= 100", "less_than_equal", "invalid_request")
    gid, _, _ = new_game()
    resp = client.get(f"/v1/games/{gid}/board.png?size=63")
    assert resp.json == invalid("size must be from 64 to 2048 pixels, got 63",
                                ["query", "size"], "64 to 2048", "greater_than_equal",
                                "out_of_range")
    secret = "whsec_" + base64.b64encode(bytes(32)).decode()
    resp = client.post("/v1/analyses",
                       json={**BASE, "callback": {"url": "ftp://x.example", "secret": secret}})
    assert resp.status_code == 422 and resp.json["reason"] == "invalid_url"
    assert resp.json["errors"] == [{"loc": ["callback", "url"], "msg": resp.json["detail"],
                                    "type": "invalid_url"}]


def test_the_write_token(client, new_game):
    gid, auth, _ = new_game()
    move = {"move": [1, 1, 1], "serial": 1}
    resp = client.post(f"/v1/games/{gid}/moves", json=move)
    assert resp.status_code == 401
    assert resp.headers["WWW-Authenticate"] == 'Bearer realm="boxfish"'
    assert resp.json == {"type": PREFIX + "unauthorized", "title": "Missing write token",
                         "status": 401, "detail": "send the game's write_token as "
                         "'Authorization: Bearer <token>'"}
    resp = client.post(f"/v1/games/{gid}/moves", json=move,
                       headers={"Authorization": "Basic abc"})
    assert resp.status_code == 401
    assert resp.json["detail"] == "the Authorization header must be 'Bearer <write_token>'"
    resp = client.post(f"/v1/games/{gid}/moves", json=move,
                       headers={"Authorization": "Bearer not-this-games"})
    assert resp.status_code == 403
    assert resp.json == {"type": PREFIX + "forbidden", "title": "Wrong write token",
                         "status": 403, "detail": "the token does not belong to this game"}
    # An unknown game is a 404 before the token is looked at.
    resp = client.get("/v1/games/nope/webhooks")
    assert resp.status_code == 404
    assert resp.json == {"type": PREFIX + "not-found", "title": "Not found", "status": 404,
                         "detail": "no game 'nope'"}
    assert client.post(f"/v1/games/{gid}/moves", json=move, headers=auth).status_code == 201
