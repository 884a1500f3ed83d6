"""Benchmark of what bots use: webhook delivery latency, the engine seat's answer time, and the
Python client's cost per move against plain HTTP, all over real HTTP.

Starts ``boxfish serve`` itself (embedded Redis, ``--workers`` analysis workers, one webhook
worker, private webhook addresses allowed) and a webhook receiver on loopback, then measures:

* webhooks: ``--moves`` appends to one 20x20 game, one at a time, with a webhook on it: the time
  from each append's 201 to the receiver holding its ``move.appended`` (verified with
  ``boxfish.client.verify_webhook``): p50, p95, max, and how many arrived more than once;
* engine seat: a 5x5 game against the engine (seat 1, ``--engine-ms`` per move); this script
  plays seat 0 (a random legal move) and times, from its move's 201, the engine's reply in the
  event stream; the search itself takes up to ``--engine-ms``, the rest is queueing, the
  job and the append;
* client: ``--moves`` appends with ``Client.play`` (an Idempotency-Key on each, typed
  results) and as many bare POSTs with ``httpx`` (the library the client uses, one keep-alive
  connection), alternating, p50 of each and their ratio.

    python bench/bots_bench.py [--moves 300] [--engine-ms 100] [--engine-games 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from service_bench import launch_serve, pct, stop_serve

from boxfish import engine
from boxfish.client import Client, verify_webhook
from boxfish.service.runtime.embedded_redis import free_port


class Receiver:
    """A webhook receiver on loopback: verifies each delivery and notes when each message
    first arrived, and how many times it came."""

    def __init__(self) -> None:
        self.secret: str | None = None
        self.arrived: dict[int, float] = {}
        self.copies: dict[str, int] = {}
        self.bad = 0
        self.cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # the http.server interface
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                now = time.perf_counter()
                try:
                    event = verify_webhook(receiver.secret, dict(self.headers), body)
                except Exception:  # counted, answered 400
                    receiver.bad += 1
                    self.send_response(400)
                    self.end_headers()
                    return
                with receiver.cond:
                    msg = self.headers["webhook-id"]
                    receiver.copies[msg] = receiver.copies.get(msg, 0) + 1
                    if event["type"] == "move.appended":
                        receiver.arrived.setdefault(event["data"]["serial"], now)
                    receiver.cond.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, serial: int, timeout_s: float = 30.0) -> float:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while serial not in self.arrived:
                if not self.cond.wait(max(0.0, deadline - time.monotonic())):
                    raise SystemExit(f"webhook for serial {serial} never arrived")
            return self.arrived[serial]


def random_moves(width: int, height: int, seed: int) -> list[list[int]]:
    """Every line of a width x height board in a random order (all legal, in any order)."""
    game = engine.load_game("dots-and-boxes", width=width, height=height)
    moves = [list(m) for m in game.new_state().legal_moves()]
    random.Random(seed).shuffle(moves)
    return moves


def ms(values: list[float]) -> str:
    return (f"{pct(values, 50) * 1000:.1f} | {pct(values, 95) * 1000:.1f} | "
            f"{max(values) * 1000:.1f}")


def bench_webhooks(base: str, moves: int) -> None:
    receiver = Receiver()
    with Client(base) as api:
        game = api.create_game(width=20, height=20)
        hook = api.add_webhook(game.id, game.token, receiver.url, events=["move.appended"])
        receiver.secret = hook.secret
        latencies = []
        for serial, move in enumerate(random_moves(20, 20, 1)[:moves], start=1):
            api.play(game.id, move, serial=serial, token=game.token)
            acked = time.perf_counter()
            latencies.append(receiver.wait_for(serial) - acked)
    time.sleep(1.0)  # let any second copy arrive before counting
    doubled = sum(1 for n in receiver.copies.values() if n > 1)
    print("| webhooks: 201 -> receiver | p50 ms | p95 ms | max ms | delivered | doubled | bad |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {moves} moves, one at a time | {ms(latencies)} | {len(receiver.arrived)} | "
          f"{doubled} | {receiver.bad} |")
    receiver.server.shutdown()


def bench_engine(base: str, engine_ms: int, games: int) -> None:
    replies = []
    searched = []
    with Client(base) as api:
        for g in range(games):
            game = api.create_game(width=5, height=5,
                                   engine={"seat": 1, "time_ms": engine_ms})
            state = engine.load_game("dots-and-boxes", width=5, height=5).new_state()
            rng = random.Random(g)
            serial, sent = 0, None
            events = api.events(game.id)  # every move, ours too, in order
            while not state.is_terminal():
                if state.to_move == 0:
                    move = rng.choice([list(m) for m in state.legal_moves()])
                    api.play(game.id, move, serial=serial + 1, token=game.token)
                    sent = time.perf_counter()
                event = next(events)
                if event.serial != serial + 1:
                    raise SystemExit(f"expected serial {serial + 1}, got {event.serial}")
                if event.player == 1:
                    searched.append(event)
                    if sent is not None:  # the engine's first reply to our last move
                        replies.append(time.perf_counter() - sent)
                        sent = None
                state.play(tuple(event.move))
                serial = event.serial
            events.close()
    print(f"| engine seat, 5x5, {engine_ms} ms per move | p50 ms | p95 ms | max ms | "
          "replies | engine moves |")
    print("|---|---|---|---|---|---|")
    print(f"| 201 of a move -> the engine's reply in the stream | {ms(replies)} | "
          f"{len(replies)} | {len(searched)} |")


def bench_client(base: str, moves: int) -> None:
    """The two kinds of append alternate, move by move, so that both see the same server."""
    lines = random_moves(20, 20, 2)[:moves]
    typed, bare = [], []
    with Client(base) as api, httpx.Client(base_url=base, timeout=30) as raw:
        g1 = api.create_game(width=20, height=20)
        g2 = api.create_game(width=20, height=20)
        for serial, move in enumerate(lines, start=1):
            t = time.perf_counter()
            api.play(g1.id, move, serial=serial, token=g1.token)
            typed.append(time.perf_counter() - t)
            t = time.perf_counter()
            resp = raw.post(f"/v1/games/{g2.id}/moves", json={"move": move, "serial": serial},
                            headers={"Authorization": f"Bearer {g2.token}"})
            if resp.status_code != 201:
                raise SystemExit(f"bare append answered {resp.status_code}")
            bare.append(time.perf_counter() - t)
    print("| appends, one client, alternating | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    print(f"| httpx, bare POST | {ms(bare)} |")
    print(f"| boxfish.client `play` (Idempotency-Key, typed result) | {ms(typed)} |")
    print(f"\nclient / bare, p50: {pct(typed, 50) / pct(bare, 50):.2f}x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--moves", type=int, default=300)
    p.add_argument("--engine-ms", type=int, default=100)
    p.add_argument("--engine-games", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    port = free_port()
    proc = launch_serve(port, args.workers, 16, 2,
                        env_extra={"BOXFISH_WEBHOOK_ALLOW_PRIVATE": "true"})
    base = f"http://127.0.0.1:{port}"
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
        bench_webhooks(base, args.moves)
        print()
        bench_engine(base, args.engine_ms, args.engine_games)
        print()
        bench_client(base, args.moves)
    finally:
        stop_serve(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
