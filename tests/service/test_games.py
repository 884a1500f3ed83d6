"""Games and moves through the Flask test client (every response checked against
openapi.yaml by the ``client`` fixture)."""

from __future__ import annotations

import re

from boxfish import engine


def test_create_dots_game(client):
    resp = client.post("/v1/games", json={"game": "dots-and-boxes", "width": 3, "height": 2})
    assert resp.status_code == 201
    body = resp.json
    assert resp.headers["Location"] == f"/v1/games/{body['id']}"
    assert body["game"] == "dots-and-boxes" and (body["width"], body["height"]) == (3, 2)
    assert (body["serial"], body["to_move"], body["scores"], body["status"]) == (
        0, 0, [0, 0], "in_progress")
    assert len(body["write_token"]) >= 24
    got = client.get(body["Location"] if "Location" in body else resp.headers["Location"])
    assert got.status_code == 200 and "write_token" not in got.json
    assert got.json["lines"] == "0" * 17 and got.headers["ETag"] == '"0"'
    for field in ("opportunities", "pitfalls", "chains"):
        assert field in got.json


def test_create_xttt_game_through_the_same_code(client, new_game):
    gid, auth, body = new_game("extreme-tictactoe")
    assert body["game"] == "extreme-tictactoe" and body["serial"] == 0
    resp = client.post(f"/v1/games/{gid}/moves", json={"move": [0, 0], "serial": 1},
                       headers=auth)
    assert resp.status_code == 201 and resp.json["serial"] == 1 and resp.json["player"] == 0
    state = client.get(f"/v1/games/{gid}").json
    expected = engine.load_game("extreme-tictactoe").new_state()
    expected.play((0, 0))
    assert state["board"] == expected.to_dict()["board"]
    bad = client.post(f"/v1/games/{gid}/moves", json={"move": [0, 0, 1]}, headers=auth)
    assert bad.status_code == 422 and bad.json["reason"] == "malformed"
    assert client.get(f"/v1/games/{gid}/index").status_code == 404


def test_create_game_errors(client):
    cases = [
        ({"game": "chess"}, "unknown_game"),
        ({"game": "dots-and-boxes", "width": 3}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": 3, "height": "2"}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": 3, "height": 2.0}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": True, "height": 2}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": 0, "height": 2}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": 21, "height": 2}, "invalid_request"),
        ({"game": "dots-and-boxes", "width": 13, "height": 2}, "limit_exceeded"),
        ({"game": "dots-and-boxes", "width": 2, "height": 2, "colour": "red"},
         "invalid_request"),
        ({"game": "extreme-tictactoe", "width": 2}, "invalid_request"),
        ({}, "invalid_request"),
        ({"game": 5}, "invalid_request"),
    ]
    for body, reason in cases:
        resp = client.post("/v1/games", json=body)
        assert resp.status_code == 422, body
        assert resp.mimetype == "application/problem+json"
        assert resp.json["reason"] == reason, (body, resp.json)
        assert resp.json["detail"]
    assert client.post("/v1/games", json=[1, 2]).status_code == 422


def test_http_errors_are_problems(client):
    resp = client.post("/v1/games", data="{not json", content_type="application/json")
    assert resp.status_code == 400 and resp.json["type"].endswith("malformed-json")
    resp = client.post("/v1/games", data="game=x", content_type="text/plain")
    assert resp.status_code == 415
    resp = client.post("/v1/games", data="[" + "1," * 70000 + "1]",
                       content_type="application/json")
    assert resp.status_code == 413 and resp.mimetype == "application/problem+json"
    resp = client.get("/v1/nothing-here", validate_spec=False)
    assert resp.status_code == 404 and resp.json["type"] == "about:blank"
    resp = client.open("/v1/games", method="DELETE", validate_spec=False)
    assert resp.status_code == 405 and "POST" in resp.headers["Allow"]
    assert resp.mimetype == "application/problem+json"
    resp = client.get("/v1/games/nope")
    assert resp.status_code == 404 and resp.json["status"] == 404
    resp = client.get("/v1/games/" + "x" * 100)
    assert resp.status_code == 404


def test_unexpected_exception_is_a_500_problem(app, spec):
    @app.get("/boom")
    def boom():
        raise RuntimeError("secret internals")

    resp = app.test_client().get("/boom")
    assert resp.status_code == 500 and resp.mimetype == "application/problem+json"
    assert "secret" not in resp.get_data(as_text=True)


def test_append_moves_and_list(client, new_game):
    gid, auth, _ = new_game()
    r1 = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert r1.status_code == 201
    first = dict(r1.json)
    assert re.fullmatch(r"1\.[0-9a-f]{16}", first.pop("position"))
    assert first == {"serial": 1, "move": [1, 1, 1], "player": 0, "completed": 0,
                     "scores": [0, 0], "to_move": 1, "status": "in_progress"}
    r2 = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 2, 1], "serial": 2},
                     headers=auth)
    assert r2.status_code == 201 and r2.json["player"] == 1
    moves = client.get(f"/v1/games/{gid}/moves").json["moves"]
    assert moves == [{"serial": 1, "move": [1, 1, 1], "player": 0, "completed": 0,
                      "to_move": 1},
                     {"serial": 2, "move": [1, 2, 1], "player": 1, "completed": 0,
                      "to_move": 0}]
    assert client.get(f"/v1/games/{gid}/moves?after=1").json["moves"] == moves[1:]
    assert client.get(f"/v1/games/{gid}/moves?after=2").json["moves"] == []
    assert client.get(f"/v1/games/{gid}/moves?after=x").status_code == 422
    assert client.get(f"/v1/games/{gid}/moves?after=-1").status_code == 422
    game = client.get(f"/v1/games/{gid}")
    etag = game.headers["ETag"]
    assert game.json["serial"] == 2 and re.fullmatch(r'"2\.[0-9a-f]{16}"', etag)
    assert r2.json["position"] == etag.strip('"')  # the position after the move: the state's
    assert client.get(f"/v1/games/{gid}", headers={"If-None-Match": etag}).status_code == 304
    # An old-style ETag (the bare serial) names no head: the state, with the ETag.
    old = client.get(f"/v1/games/{gid}", headers={"If-None-Match": '"2"'})
    assert old.status_code == 200 and old.headers["ETag"] == etag and old.json == game.json
    index = client.get(f"/v1/games/{gid}/index").json
    assert index == {"1": {"1": {"1": 1}, "2": {"1": 2}}}


def test_completing_a_box_and_finishing(client, new_game):
    gid, auth, _ = new_game(width=1, height=1)
    served = [client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth).json
              for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2])]
    assert [s["player"] for s in served] == [0, 1, 0]
    last = client.post(f"/v1/games/{gid}/moves", json={"move": [2, 1, 2]}, headers=auth)
    assert last.status_code == 201
    assert last.json["completed"] == 1 and last.json["status"] == "finished"
    assert last.json["player"] == 1 and last.json["scores"] == [0, 1]
    assert last.json["to_move"] is None
    over = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert over.status_code == 422 and over.json["reason"] in ("game_over", "already_drawn")
    game = client.get(f"/v1/games/{gid}").json
    assert game["status"] == "finished" and game["result"]["winner"] == 1
    # The state agrees with the last move's answer: no side is to move in a finished game.
    assert game["to_move"] is None


def test_move_entries_say_who_moves_next(client, new_game):
    """Each entry of /moves carries ``to_move``, the side to move after it, as the move's
    answer (and its SSE event) said: null after the move that finished the game."""
    gid, auth, _ = new_game(width=1, height=1)
    played = [client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth).json
              for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2])]
    assert [p["to_move"] for p in played] == [1, 0, 1, None]
    listed = client.get(f"/v1/games/{gid}/moves").json["moves"]
    assert [m["to_move"] for m in listed] == [1, 0, 1, None]
    assert [m["to_move"] for m in client.get(f"/v1/games/{gid}/moves?after=2").json[
        "moves"]] == [1, None]
    gid, auth, _ = new_game(width=2, height=2)
    client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    (entry,) = client.get(f"/v1/games/{gid}/moves").json["moves"]
    assert entry["to_move"] == 1 == client.get(f"/v1/games/{gid}").json["to_move"]


def test_game_over_reason(client, new_game):
    gid, auth, _ = new_game(width=1, height=1)
    for m in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]):
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    # Every line is drawn; the engine reports the game as over before anything else.
    resp = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert resp.json["reason"] in ("game_over", "already_drawn")


def test_move_errors_change_nothing(client, new_game):
    gid, auth, _ = new_game()
    url = f"/v1/games/{gid}/moves"
    assert client.post(url, json={"move": [1, 1, 1]}, headers=auth).status_code == 201
    cases = [
        ({"move": [9, 9, 1]}, auth, 422, "out_of_range"),
        ({"move": [1, 1, 1]}, auth, 422, "already_drawn"),
        ({"move": [1, 1]}, auth, 422, "malformed"),
        ({"move": "north"}, auth, 422, "malformed"),
        ({"move": [1, 1, True]}, auth, 422, "malformed"),
        ({"move": [1, 2, 1], "serial": 1}, auth, 409, None),
        ({"move": [1, 2, 1], "serial": 5}, auth, 409, None),
        ({"move": [1, 2, 1], "serial": "2"}, auth, 422, "invalid_request"),
        ({"move": [1, 2, 1], "extra": 1}, auth, 422, "invalid_request"),
        ({}, auth, 422, "invalid_request"),
        ({"move": [1, 2, 1]}, {}, 401, None),
        ({"move": [1, 2, 1]}, {"Authorization": "Basic abc"}, 401, None),
        ({"move": [1, 2, 1]}, {"Authorization": "Bearer wrong"}, 403, None),
    ]
    for body, headers, status, reason in cases:
        resp = client.post(url, json=body, headers=headers)
        assert resp.status_code == status, (body, resp.json)
        assert resp.mimetype == "application/problem+json"
        if reason:
            assert resp.json["reason"] == reason, (body, resp.json)
        if status == 409:
            assert resp.json["current_serial"] == 1
    unknown = client.post("/v1/games/nope/moves", json={"move": [1, 2, 1]}, headers=auth)
    assert unknown.status_code == 404
    other, other_auth, _ = new_game()
    wrong_game = client.post(url, json={"move": [1, 2, 1]}, headers=other_auth)
    assert wrong_game.status_code == 403
    assert client.get(f"/v1/games/{gid}").json["serial"] == 1
    assert len(client.get(url).json["moves"]) == 1


def test_idempotent_retry(client, new_game):
    gid, auth, _ = new_game()
    url = f"/v1/games/{gid}/moves"
    key = {**auth, "Idempotency-Key": "retry-1"}
    first = client.post(url, json={"move": [1, 1, 1], "serial": 1}, headers=key)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    client.post(url, json={"move": [1, 2, 1]}, headers=auth)
    again = client.post(url, json={"serial": 1, "move": [1, 1, 1]}, headers=key)
    assert again.status_code == 201 and again.json == first.json
    assert again.headers["Idempotent-Replayed"] == "true"
    other = client.post(url, json={"move": [2, 1, 1]}, headers=key)
    assert other.status_code == 422 and other.json["reason"] == "idempotency_key_reused"
    assert [m["serial"] for m in client.get(url).json["moves"]] == [1, 2]
    too_long = client.post(url, json={"move": [2, 1, 1]},
                           headers={**auth, "Idempotency-Key": "k" * 201})
    assert too_long.status_code == 422


def test_state_cache_replays_only_new_events(app, client, new_game):
    """A second app (another API process) sees moves appended through the first."""
    gid, auth, _ = new_game()
    client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    from boxfish.service.http.app import create_app
    services = app.extensions["boxfish"]
    other = create_app(services.settings, connection=services.redis).test_client()
    assert other.get(f"/v1/games/{gid}").json["serial"] == 1
    for m in ([1, 2, 1], [1, 3, 1]):
        assert other.post(f"/v1/games/{gid}/moves", json={"move": m},
                          headers=auth).status_code == 201
    view = client.get(f"/v1/games/{gid}").json
    assert view["serial"] == 3 and view["lines"].startswith("101010")


def test_ops_endpoints(client, new_game):
    assert client.get("/healthz").json == {"status": "ok"}
    gid, _auth, _body = new_game()
    assert client.get(f"/v1/games/{gid}").status_code == 200
    assert client.get(f"/v1/games/{gid}/moves").status_code == 200
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert b"http_requests_total" in metrics.data
    # every route that names a game is labelled alike, without the converter's name
    text = metrics.data.decode()
    endpoints = set(re.findall(r'^http_requests_total\{[^}]*endpoint="([^"]*)"', text, re.M))
    assert {"/v1/games/<game_id>", "/v1/games/<game_id>/moves"} <= endpoints, endpoints
    assert "game_id:" not in text
    spec = client.get("/openapi.yaml")
    assert spec.status_code == 200 and spec.data.startswith(b"openapi: 3.1")


def test_append_without_serial_is_judged_against_the_current_state(app, client, new_game):
    """Another API process (its own state cache) appended meanwhile: a move that is legal only
    after that append is accepted, not refused against this process's stale state."""
    gid, auth, _ = new_game("extreme-tictactoe")
    game = engine.load_game("extreme-tictactoe")
    s1 = game.new_state()
    s1.play((0, 0))
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [0, 0]},
                       headers=auth).status_code == 201
    legal1 = set(s1.legal_moves())
    pick = None
    for m2 in sorted(legal1):
        s2 = s1.copy()
        s2.play(m2)
        only_now = sorted(set(s2.legal_moves()) - legal1)
        if only_now:
            pick = (m2, only_now[0])
            break
    assert pick is not None
    from boxfish.service.http.app import create_app
    services = app.extensions["boxfish"]
    other = create_app(services.settings, connection=services.redis).test_client()
    assert other.post(f"/v1/games/{gid}/moves", json={"move": list(pick[0])},
                      headers=auth).status_code == 201
    resp = client.post(f"/v1/games/{gid}/moves", json={"move": list(pick[1])}, headers=auth)
    assert resp.status_code == 201 and resp.json["serial"] == 3


def test_problem_details_write_moves_in_their_json_form(client, new_game):
    """An illegal move is written ``[x, y, o]`` in every message, as the API takes it: an
    append's problem and an analysis's (whose moves the engine replays as tuples) alike."""
    gid, auth, _ = new_game()
    append = client.post(f"/v1/games/{gid}/moves", json={"move": [9, 9, 1]}, headers=auth)
    assert append.status_code == 422
    assert "illegal move [9, 9, 1]: out_of_range" in append.json["detail"], append.json
    analysis = client.post("/v1/analyses", json={"game": "dots-and-boxes", "width": 2,
                                                 "height": 2, "moves": [[9, 9, 1]]})
    assert analysis.status_code == 422
    assert "illegal move [9, 9, 1]: out_of_range" in analysis.json["detail"], analysis.json
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]},
                       headers=auth).status_code == 201
    again = client.post(f"/v1/games/{gid}/moves", json={"move": [1, 1, 1]}, headers=auth)
    assert again.json["reason"] == "already_drawn"
    assert "illegal move [1, 1, 1]: already_drawn" in again.json["detail"], again.json
    twice = client.post("/v1/analyses", json={"game": "dots-and-boxes", "width": 2,
                                              "height": 2, "moves": [[1, 1, 1], [1, 1, 1]]})
    assert "illegal move [1, 1, 1]: already_drawn" in twice.json["detail"], twice.json


def test_the_state_lists_the_legal_moves(client, new_game):
    """A Dots-and-Boxes state lists ``legal_moves`` as Extreme Tic-Tac-Toe's does: the undrawn
    lines (the ``0``s of ``lines``, in the same order), none once the game is over."""
    gid, auth, body = new_game(width=1, height=1)
    assert body["legal_moves"] == [[1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]]
    client.post(f"/v1/games/{gid}/moves", json={"move": [1, 2, 1], "serial": 1}, headers=auth)
    state = client.get(f"/v1/games/{gid}").json
    assert state["legal_moves"] == [[1, 1, 1], [1, 1, 2], [2, 1, 2]]
    assert state["lines"] == "0100"
    for serial, move in enumerate(state["legal_moves"], start=2):
        client.post(f"/v1/games/{gid}/moves", json={"move": move, "serial": serial},
                    headers=auth)
    state = client.get(f"/v1/games/{gid}").json
    assert state["status"] == "finished" and state["legal_moves"] == []
    xt = client.get(f"/v1/games/{new_game('extreme-tictactoe')[0]}").json
    assert len(xt["legal_moves"]) == 256
