"""A Redis failover lost the last move of a game and another move took its serial: an API
process whose state cache still holds the lost move must not answer from it, nor judge the
next move against it. Each log position has an identity, the head (``recorder.next_head``), kept
in the meta hash with the serial, carried by every cached state and checked by the append.
"""

from __future__ import annotations

import itertools
import uuid

import pytest

from boxfish import engine
from boxfish.service.http.app import create_app
from boxfish.service.store.events import MoveEvent
from boxfish.service.store.game_meta import GameMeta
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import (
    InMemoryRecorder,
    SerialConflict,
    StaleHead,
    next_head,
    replay_head,
)
from boxfish.service.store.redis_recorder import RedisRecorder

# -- the recorder contract of the head, on every backend --------------------------------------


@pytest.fixture(scope="module")
def cluster_client(redis_cluster):
    client = redis_cluster.client(socket_timeout=5.0)
    yield client
    client.close()


@pytest.fixture(params=["memory", "redis", "cluster"])
def recorder(request, settings):
    if request.param == "memory":
        return InMemoryRecorder()
    keys = KeySpace(settings.key_prefix)
    if request.param == "redis":
        return RedisRecorder(request.getfixturevalue("redis_client"), keys)
    request.getfixturevalue("redis_cluster").ensure_healthy()
    return RedisRecorder(request.getfixturevalue("cluster_client"), keys)


def ev(serial: int, move=None) -> MoveEvent:
    return MoveEvent(serial=serial, move=move or (serial, 1, 1), player=serial % 2, completed=0,
                     scores=(0, 0), to_move=1 - serial % 2, status="in_progress", at=serial)


def make_game(recorder) -> str:
    gid = uuid.uuid4().hex[:12]
    recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                  params={"width": 2, "height": 2}, token_sha256="t",
                                  created_at=1))
    return gid


def test_the_head_names_the_log_position(recorder):
    gid = make_game(recorder)
    assert recorder.get_meta(gid).head == ""
    heads = [""]
    for s in (1, 2, 3):
        recorder.append(gid, s, ev(s), expected_head=heads[-1] if s != 2 else None)
        heads.append(next_head(heads[-1], ev(s)))
        assert recorder.get_meta(gid).head == heads[-1]  # the same on every backend
    assert replay_head("", recorder.read(gid)) == heads[-1]
    assert len(set(heads)) == 4 and all(len(h) == 16 for h in heads[1:])


def test_an_append_to_another_history_is_refused(recorder):
    gid = make_game(recorder)
    recorder.append(gid, 1, ev(1), expected_head="")
    other = next_head("", ev(1, (9, 9, 9)))  # the head of a serial 1 this log does not have
    with pytest.raises(StaleHead) as info:
        recorder.append(gid, 2, ev(2), expected_head=other)
    assert isinstance(info.value, SerialConflict) and info.value.current_serial == 1
    with pytest.raises(SerialConflict) as conflict:  # a wrong serial is a plain conflict
        recorder.append(gid, 3, ev(3), expected_head=other)
    assert type(conflict.value) is SerialConflict
    assert recorder.read(gid) == [ev(1)] and recorder.get_meta(gid).serial == 1
    recorder.append(gid, 2, ev(2), expected_head=next_head("", ev(1)))
    # An idempotent retry is answered before the head is looked at.
    recorder.append(gid, 3, ev(3), "k", "fp", expected_head=recorder.get_meta(gid).head)
    assert recorder.append(gid, 4, ev(4), "k", "fp", expected_head="x").replayed


# -- the API processes ---------------------------------------------------------------------------


def lose_last_move(redis_client, settings, gid: str) -> None:
    """What a failover to a replica that lacked the last move leaves: the log and the meta one
    move shorter (serial, status and head as they were then)."""
    keys = KeySpace(settings.key_prefix)
    meta_key, log = keys.game_meta(gid), keys.game_log(gid)
    entries = redis_client.xrange(log)[:-1]
    events = [MoveEvent.from_json(fields[b"e"]) for _, fields in entries]
    pipe = redis_client.pipeline(transaction=True)
    pipe.delete(log)
    for entry_id, fields in entries:
        pipe.xadd(log, fields, id=entry_id)
    pipe.hset(meta_key, mapping={"serial": len(events),
                                 "status": events[-1].status if events else "in_progress",
                                 "head": replay_head("", events)})
    pipe.execute()


def scenario():
    """A prefix, the move that will be lost (``lost``) and the one that takes its serial
    (``taken``), with ``lost`` completing a box after ``prefix + taken``: the next move
    ``lost`` is legal only in the true position (and scores), ``taken`` only in the stale."""
    game = engine.load_game("dots-and-boxes", width=2, height=2)
    lines = sorted(game.new_state().legal_moves())
    for prefix in itertools.permutations(lines, 2):
        state = game.new_state()
        for m in prefix:
            state.play(m)
        for taken in sorted(state.legal_moves()):
            after = state.copy()
            after.play(taken)
            for lost in sorted(after.legal_moves()):
                final = after.copy()
                if final.play(lost).completed:
                    return game, list(prefix), lost, taken, final
    raise AssertionError("no scenario")


@pytest.fixture
def processes(app, client, settings, redis_client):
    """Two API processes on one Redis, each with its own state cache."""
    services = app.extensions["boxfish"]
    other = create_app(services.settings, connection=services.redis).test_client()
    return client, other


def play_then_lose(processes, new_game, settings, redis_client):
    a, b = processes
    gid, auth, _ = new_game()
    game, prefix, lost, taken, final = scenario()
    for i, m in enumerate([*prefix, lost], start=1):
        resp = a.post(f"/v1/games/{gid}/moves", json={"move": list(m), "serial": i},
                      headers=auth)
        assert resp.status_code == 201, resp.json
    assert a.get(f"/v1/games/{gid}").json["serial"] == 3  # cached in a, with the lost move
    lose_last_move(redis_client, settings, gid)
    resp = b.post(f"/v1/games/{gid}/moves", json={"move": list(taken), "serial": 3},
                  headers=auth)
    assert resp.status_code == 201, resp.json
    return gid, auth, game, prefix, lost, taken, final


def true_view(game, moves):
    state = game.new_state()
    for m in moves:
        state.play(m)
    return state.to_dict()


def test_reads_after_a_lost_move_show_the_log(processes, new_game, settings, redis_client):
    gid, auth, game, prefix, lost, taken, final = play_then_lose(processes, new_game, settings,
                                                                 redis_client)
    a, _ = processes
    view = a.get(f"/v1/games/{gid}").json
    want = true_view(game, [*prefix, taken])
    assert view["serial"] == 3
    assert (view["lines"], view["scores"], view["to_move"]) == (
        want["lines"], want["scores"], want["to_move"])
    moves = a.get(f"/v1/games/{gid}/moves").json["moves"]
    assert [tuple(m["move"]) for m in moves] == [*prefix, taken]
    index = a.get(f"/v1/games/{gid}/index")
    assert index.status_code in (200, 404)


@pytest.mark.parametrize("with_serial", [True, False])
@pytest.mark.parametrize("read_first", [True, False])
def test_the_next_append_is_judged_on_the_true_position(processes, new_game, settings,
                                                        redis_client, with_serial, read_first):
    gid, auth, game, prefix, lost, taken, final = play_then_lose(processes, new_game, settings,
                                                                 redis_client)
    a, _ = processes
    if read_first:
        assert a.get(f"/v1/games/{gid}").json["serial"] == 3
    body = {"serial": 4} if with_serial else {}
    # Legal only in the stale position (its line is drawn in the true one): refused.
    resp = a.post(f"/v1/games/{gid}/moves", json={"move": list(taken), **body}, headers=auth)
    assert resp.status_code == 422, resp.json
    # Legal only in the true position: accepted, with what it did there.
    resp = a.post(f"/v1/games/{gid}/moves", json={"move": list(lost), **body}, headers=auth)
    assert resp.status_code == 201, resp.json
    assert resp.json["serial"] == 4 and resp.json["completed"] >= 1
    assert resp.json["scores"] == final.to_dict()["scores"]
    assert resp.json["to_move"] == final.to_dict()["to_move"]
    view = a.get(f"/v1/games/{gid}").json
    assert view["lines"] == final.to_dict()["lines"] and view["serial"] == 4
    # Both processes agree with the log.
    _, b = processes
    assert b.get(f"/v1/games/{gid}").json == view


def test_the_first_append_judged_on_a_stale_state_is_retried(processes, new_game, settings,
                                                             redis_client):
    """No read first, a move legal in both positions: the append script refuses the stale
    head, the process rebuilds and the event carries the true scores."""
    gid, auth, game, prefix, lost, taken, final = play_then_lose(processes, new_game, settings,
                                                                 redis_client)
    a, _ = processes
    true_state = game.new_state()
    for m in [*prefix, taken]:
        true_state.play(m)
    move = next(m for m in sorted(true_state.legal_moves()) if m != lost)
    resp = a.post(f"/v1/games/{gid}/moves", json={"move": list(move), "serial": 4},
                  headers=auth)
    assert resp.status_code == 201, resp.json
    true_state.play(move)
    assert resp.json["scores"] == true_state.to_dict()["scores"]
    assert resp.json["to_move"] == true_state.to_dict()["to_move"]
    assert a.get(f"/v1/games/{gid}").json["lines"] == true_state.to_dict()["lines"]


def test_a_lost_move_not_yet_replaced(processes, new_game, settings, redis_client):
    """The log is one move shorter than this process's newest state: reads show the log, an
    append without a serial goes at the log's next serial."""
    a, _ = processes
    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1]):
        assert a.post(f"/v1/games/{gid}/moves", json={"move": m},
                      headers=auth).status_code == 201
    lose_last_move(redis_client, settings, gid)
    view = a.get(f"/v1/games/{gid}").json
    assert view["serial"] == 1 and view["lines"].count("1") == 1
    resp = a.post(f"/v1/games/{gid}/moves", json={"move": [1, 3, 1]}, headers=auth)
    assert resp.status_code == 201, resp.json
    assert resp.json["serial"] == 2
    moves = a.get(f"/v1/games/{gid}/moves").json["moves"]
    assert [m["move"] for m in moves] == [[1, 1, 1], [1, 3, 1]]


def test_state_cache_keeps_heads_and_drops_a_games_states():
    from boxfish.service.application.state_cache import StateCache

    cache = StateCache(max_entries=8)
    for s in (0, 1, 2, 3):
        cache.put("g", s, f"s{s}", f"h{s}")
    cache.put("other", 5, "o5", "x")
    assert cache.entry("g", 2) == ("s2", "h2")
    assert cache.nearest_entry("g", 9) == (3, "s3", "h3")
    cache.drop("g", above=1)
    assert cache.latest("g") == 1 and cache.entry("g", 2) is None
    cache.drop("g")
    assert cache.latest("g") is None and cache.nearest_entry("g", 9) is None
    assert cache.entry("other", 5) == ("o5", "x") and len(cache) == 1


def test_an_open_stream_that_finds_its_moves_lost_sends_the_state_again(
        app, client, new_game, settings, redis_client):
    """An event stream that sent a move the log then lost (a failover) sends a ``game`` event
    with the log's state when it notices (at its next keep-alive): the lost move not yet
    replaced (the log shorter), and replaced by another at its serial (another head)."""
    from .test_events import read_events

    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1]):
        assert client.post(f"/v1/games/{gid}/moves", json={"move": m},
                           headers=auth).status_code == 201
    stream = app.test_client().get(f"/v1/games/{gid}/events", buffered=False)
    events, _ = read_events(stream, 1)
    assert events[0][0] == "game" and events[0][2]["serial"] == 2
    lose_last_move(redis_client, settings, gid)  # not replaced: the log is at serial 1
    shorter = client.get(f"/v1/games/{gid}")
    events, _ = read_events(stream, 1)
    assert events[0] == ("game", shorter.headers["ETag"].strip('"'), shorter.json)
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [1, 3, 1]},
                       headers=auth).status_code == 201
    replaced = client.get(f"/v1/games/{gid}")
    events, _ = read_events(stream, 1)
    assert events[0][0] == "move" and events[0][1] == replaced.headers["ETag"].strip('"')
    # Replaced at the same serial by another move: another head at serial 2.
    lose_last_move(redis_client, settings, gid)
    assert client.post(f"/v1/games/{gid}/moves", json={"move": [2, 1, 2]},
                       headers=auth).status_code == 201
    again = client.get(f"/v1/games/{gid}")
    assert again.json["serial"] == 2 and again.headers["ETag"] != replaced.headers["ETag"]
    kinds = [e for e in read_events(stream, 2)[0] if e[0] != "<comment>"]
    stream.close()
    assert kinds[0] == ("game", again.headers["ETag"].strip('"'), again.json)


def test_an_open_stream_that_reads_a_move_of_another_history_sends_the_state_again(
        app, new_game, settings, redis_client):
    """A stream busy with moves never idles, so it must see a rewritten history in the moves
    themselves: a move that does not chain onto the head the stream sent last (each log entry
    keeps its head) comes after a ``game`` event with the log's state, never as a ``move``
    whose id names a history the log does not have. (The keep-alive is a minute here: the
    idle check cannot be what notices.)"""
    from .test_events import read_events

    services = app.extensions["boxfish"]
    busy = create_app(services.settings.model_copy(update={"sse_keepalive_s": 60.0}),
                      connection=services.redis).test_client()
    gid, auth, _ = new_game()
    for m in ([1, 1, 1], [1, 2, 1]):
        assert busy.post(f"/v1/games/{gid}/moves", json={"move": m},
                         headers=auth).status_code == 201
    stream = busy.get(f"/v1/games/{gid}/events", buffered=False)
    events, _ = read_events(stream, 1)
    assert events[0][0] == "game" and events[0][2]["serial"] == 2
    lose_last_move(redis_client, settings, gid)  # move 2 lost ...
    for m in ([1, 3, 1], [2, 1, 2]):  # ... and replaced, and another after it
        assert busy.post(f"/v1/games/{gid}/moves", json={"move": m},
                         headers=auth).status_code == 201
    now = busy.get(f"/v1/games/{gid}")
    assert now.json["serial"] == 3
    events, _ = read_events(stream, 1)
    assert events[0] == ("game", now.headers["ETag"].strip('"'), now.json)
    # and the stream goes on from the log's state, its ids chained on the log's heads
    assert busy.post(f"/v1/games/{gid}/moves", json={"move": [2, 2, 2]},
                     headers=auth).status_code == 201
    after = busy.get(f"/v1/games/{gid}")
    events, _ = read_events(stream, 1)
    stream.close()
    assert events[0][0] == "move" and events[0][1] == after.headers["ETag"].strip('"')
