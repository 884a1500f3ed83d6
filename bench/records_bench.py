"""Benchmark of game records (issue 35): importing a 60-move record over HTTP, and parsing and
writing records in-process.

Starts ``boxfish serve`` itself (embedded Redis, no analysis workers) unless ``--url`` is
given, then prints:

* import: ``POST /v1/games/import`` of a finished 5x5 Dots-and-Boxes game (60 moves, each
  appended through the log), ``--runs`` times over one keep-alive connection: median, p99,
  mean (goal: p99 <= 100 ms); and the same with an ``Idempotency-Key``;
* export: ``GET /v1/games/{id}/record`` of that game: median, p99;
* in-process: ``parse_record`` (checked: every move replayed) and ``parse_record(check=False)``
  and ``write_record`` of the same record, in microseconds (median of ``--rounds``).

    python bench/records_bench.py [--url http://127.0.0.1:8000] [--runs 200] [--rounds 2000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_bench import launch_serve, pct, stop_serve

from boxfish.engine import load_game
from boxfish.engine.records import parse_record, write_record
from boxfish.service.runtime.embedded_redis import free_port


def finished_game(seed: int) -> list:
    game = load_game("dots-and-boxes", width=5, height=5)
    rng, state, moves = random.Random(seed), game.new_state(), []
    while not state.is_terminal():
        move = rng.choice(state.legal_moves())
        state.play(move)
        moves.append(move)
    return moves


def timed(fn, runs: int) -> list[float]:
    """Milliseconds of each of ``runs`` calls of ``fn``."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def line(name: str, ms: list[float]) -> str:
    return (f"{name:<34} n={len(ms):<5} median {statistics.median(ms):7.2f} ms  "
            f"p99 {pct(ms, 99):7.2f} ms  mean {statistics.fmean(ms):7.2f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help="a running server (default: start one)")
    p.add_argument("--runs", type=int, default=200, help="imports (and exports) over HTTP")
    p.add_argument("--rounds", type=int, default=2000, help="in-process parses and writes")
    args = p.parse_args()

    game = load_game("dots-and-boxes", width=5, height=5)
    moves = finished_game(1)
    text = write_record(game, moves, headers={"Player0": "alice", "Player1": "bob"})
    assert len(moves) == 60

    print(f"record: 5x5 Dots and Boxes, {len(moves)} moves, {len(text)} characters")
    print(line("parse_record (checked)", timed(lambda: parse_record(text), args.rounds)))
    print(line("parse_record (check=False)",
               timed(lambda: parse_record(text, check=False), args.rounds)))
    print(line("write_record", timed(lambda: write_record(game, moves), args.rounds)))

    proc = None
    base = args.url
    if base is None:
        port = free_port()
        proc = launch_serve(port, workers=0, threads=16, http_workers=2)
        base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=30) as http:
            headers = {"Content-Type": "text/plain; charset=utf-8"}
            ids = []

            def import_once(key: bool = False):
                h = dict(headers, **({"Idempotency-Key": str(uuid.uuid4())} if key else {}))
                resp = http.post("/v1/games/import", content=text.encode(), headers=h)
                assert resp.status_code == 201, resp.text
                ids.append(resp.json()["id"])

            timed(import_once, 5)  # warm the connection and the processes
            print(f"server: {base}")
            print(line("POST /v1/games/import (60 moves)", timed(import_once, args.runs)))
            print(line("  with an Idempotency-Key", timed(lambda: import_once(True),
                                                          args.runs)))
            game_id = ids[0]

            def export_once():
                resp = http.get(f"/v1/games/{game_id}/record")
                assert resp.status_code == 200

            print(line("GET /v1/games/{id}/record", timed(export_once, args.runs)))
    finally:
        stop_serve(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
