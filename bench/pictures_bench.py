"""Benchmark of the board pictures: render times per board and the HTTP round trip.

* render: SVG and PNG (480 px) of a Dots-and-Boxes position half played on 3x3, 5x5 and
  10x10 boards and of an Extreme Tic-Tac-Toe game 40 moves in, in process (best of the
  median of ``--rounds`` renders), and an analysis picture of the 5x5 position;
* http: GET /v1/games/{id}/board.png and .svg through ``boxfish serve`` (started here, with
  an embedded Redis): p50 and p99 of a full answer and of a 304 (``If-None-Match``);
* gif: the animated GIF of a 60-move 5x5 game (``animation.gif``): its size at 480 and 320
  pixels and its render time in process, with and without a review's judgements (a review
  made up here from an analysis of each position, as the served review's fields), and GET
  ``animation.gif`` through ``boxfish serve``.

Target: a PNG of a 5x5 board well under 50 ms; the GIF of a 60-move 5x5 game within 512 KB.

    python bench/pictures_bench.py [--rounds 50] [--requests 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time

from boxfish import engine
from boxfish.service.pictures import render
from boxfish.service.runtime.embedded_redis import free_port

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_bench import launch_serve, pct, stop_serve


def position(name: str, moves: int, seed: int = 1, **params):
    game = engine.load_game(name, **params)
    state = game.new_state()
    rng = random.Random(seed)
    for _ in range(moves):
        state.play(rng.choice(state.legal_moves()))
    return state


def timed_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def section_render(rounds: int) -> None:
    boards = [("dots 3x3", position("dots-and-boxes", 12, width=3, height=3)),
              ("dots 5x5", position("dots-and-boxes", 30, width=5, height=5)),
              ("dots 10x10", position("dots-and-boxes", 110, width=10, height=10)),
              ("xttt", position("extreme-tictactoe", 40))]
    print("| board | SVG ms | PNG 480 px ms | PNG 1200 px ms | txt ms |")
    print("|---|---|---|---|---|")
    for label, state in boards:
        row = [timed_ms(lambda s=state, f=f, w=w: render(f, s, width=w), rounds)
               for f, w in (("svg", 480), ("png", 480), ("png", 1200), ("txt", 480))]
        print(f"| {label} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    state = boards[1][1]
    result = engine.analyse(state, time_ms=300).to_dict()
    row = [timed_ms(lambda f=f: render(f, state, result, width=480), rounds)
           for f in ("svg", "png")]
    print(f"| dots 5x5 analysis | {row[0]:.2f} | {row[1]:.2f} | | |")


def _caller(conn: http.client.HTTPConnection):
    """call(method, path, body=None, headers=None) -> (status, ETag, body) over ``conn``."""
    def call(method, path, body=None, headers=None):
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("ETag"), resp.read()
    return call


def _timed_gets(call, path: str, requests: int) -> tuple[list, list, bytes]:
    """``requests`` timed GETs of ``path`` (ms), each followed by a timed conditional GET
    (a 304), and the body."""
    full, cached = [], []
    status, etag, body = call("GET", path)
    assert status == 200, status
    for _ in range(requests):
        t0 = time.perf_counter()
        status, _, _ = call("GET", path)
        full.append((time.perf_counter() - t0) * 1000)
        assert status == 200, status
        t0 = time.perf_counter()
        status, _, _ = call("GET", path, headers={"If-None-Match": etag})
        cached.append((time.perf_counter() - t0) * 1000)
        assert status == 304, status
    return full, cached, body


def section_http(requests: int) -> None:
    port = free_port()
    proc = launch_serve(port, workers=0, threads=8, http_workers=1)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        call = _caller(conn)

        status, _, data = call("POST", "/v1/games",
                               {"game": "dots-and-boxes", "width": 5, "height": 5})
        game = json.loads(data)
        auth = {"Authorization": f"Bearer {game['write_token']}"}
        state = engine.load_game("dots-and-boxes", width=5, height=5).new_state()
        rng = random.Random(2)
        for _ in range(30):
            mv = rng.choice(state.legal_moves())
            state.play(mv)
            call("POST", f"/v1/games/{game['id']}/moves", {"move": list(mv)}, auth)
        print("| GET (5x5, 30 moves) | p50 ms | p99 ms | 304 p50 ms | 304 p99 ms |")
        print("|---|---|---|---|---|")
        for fmt in ("png", "svg", "txt"):
            path = f"/v1/games/{game['id']}/board.{fmt}"
            full, cached, _ = _timed_gets(call, path, requests)
            print(f"| {fmt} | {pct(full, 50):.2f} | {pct(full, 99):.2f} | "
                  f"{pct(cached, 50):.2f} | {pct(cached, 99):.2f} |")
    finally:
        stop_serve(proc)


def _game_events(moves: int, seed: int = 60):
    """A 5x5 game of ``moves`` random moves: the engine Game and its events (serial, move,
    player), as the GIF renders them."""
    from types import SimpleNamespace

    game = engine.load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    rng = random.Random(seed)
    events = []
    for i in range(moves):
        mv = rng.choice(state.legal_moves())
        events.append(SimpleNamespace(serial=i + 1, move=mv, player=state.to_move))
        state.play(mv)
    return game, events


def _fake_review(events) -> dict:
    """Review moves by serial, shaped as a served review's (values made up, one judgement of
    each kind in turn), so the GIF draws a judgement line and a better move on every frame."""
    kinds = ["best", "inaccuracy", "mistake", "blunder"]
    out = {}
    for i, ev in enumerate(events):
        loss = [0, 1, 2, 4][i % 4]
        other = events[(i + 1) % len(events)].move
        out[ev.serial] = {"serial": ev.serial, "move": list(ev.move), "player": ev.player,
                          "value_before": 3, "value_played": 3 - loss, "loss": loss,
                          "exact": i % 2 == 0, "judgement": kinds[i % 4],
                          "best_moves": [list(other)]}
    return out


def section_gif(rounds: int) -> None:
    from boxfish.service.pictures.animation import SIZE_BUDGET, render_gif

    game, events = _game_events(60)
    review = _fake_review(events)
    print(f"| 5x5 game, 60 moves (61 frames) | width px | GIF bytes | GIF KiB | render ms "
          f"(median of {rounds}) |")
    print("|---|---|---|---|---|")
    for label, rv in (("moves only", None), ("with a review", review)):
        for width in (480, 320):
            data = render_gif(game, events, width, rv)
            ms = timed_ms(lambda w=width, r=rv: render_gif(game, events, w, r), rounds)
            print(f"| {label} | {width} | {len(data)} | {len(data) / 1024:.1f} | {ms:.1f} |")
    print(f"(budget: {SIZE_BUDGET} bytes at 480 px, asserted by the tests)")


def section_gif_http(requests: int) -> None:
    port = free_port()
    proc = launch_serve(port, workers=0, threads=8, http_workers=1)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        call = _caller(conn)

        _, _, data = call("POST", "/v1/games", {"game": "dots-and-boxes", "width": 5,
                                                "height": 5})
        game = json.loads(data)
        auth = {"Authorization": f"Bearer {game['write_token']}"}
        for ev in _game_events(60)[1]:
            call("POST", f"/v1/games/{game['id']}/moves", {"move": list(ev.move)}, auth)
        path = f"/v1/games/{game['id']}/animation.gif"
        full, cached, body = _timed_gets(call, path, requests)
        print(f"| GET animation.gif (5x5, 60 moves, {len(body)} bytes) | p50 ms | p99 ms | "
              f"304 p50 ms | 304 p99 ms |")
        print("|---|---|---|---|---|")
        print(f"| gif | {pct(full, 50):.1f} | {pct(full, 99):.1f} | {pct(cached, 50):.2f} | "
              f"{pct(cached, 99):.2f} |")
    finally:
        stop_serve(proc)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=50, help="renders per figure")
    p.add_argument("--requests", type=int, default=200, help="HTTP requests per figure")
    p.add_argument("--gif-requests", type=int, default=20,
                   help="HTTP requests of the GIF (each renders 61 frames)")
    p.add_argument("--skip", default="", help="comma-separated: render, http, gif, gif-http")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "render" not in skip:
        section_render(args.rounds)
    if "http" not in skip:
        section_http(args.requests)
    if "gif" not in skip:
        section_gif(max(1, args.rounds // 10))
    if "gif-http" not in skip:
        section_gif_http(args.gif_requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
