"""Mixed load on the service over real HTTP: reads and appends racing on the same games.

16 client threads (each with its own keep-alive connection) work on 16 10x10 games for a fixed
time; each request picks a random game and is a ``GET`` of its state (twice as often), of its
moves, of its move index, or an append with the serial of the state the thread last saw (a
stale one answers 409). Prints appends/s (201s), append p50/p99, read p99, and how many
answers were 5xx or not what a legal request may get.

It starts ``boxfish serve`` itself (embedded Redis, one idle analysis worker). With ``--old-src``
(a checkout of an earlier version, e.g. made with ``git worktree add``) it runs that version
too, alternating with this one, so the two are compared in the same run:

    python bench/mixed_load_bench.py [--seconds 10] [--rounds 2] [--old-src DIR]

With ``--without-projectors`` this version runs a second time with ``boxfish serve
--no-projectors`` (the feed written, no projector reading it), so the feed's cost and the
projector's are told apart.

With ``--explorer-lag`` (this version only: ``boxfish serve`` runs the projector), one more
thread finishes 1x1 games (4 moves each) during the load, and after each game's last move
polls ``GET /v1/explorer`` of the 1x1 board until it counts the game: the projection lag,
from the move's 201 to the explorer answering with it, p50/p99/max (issue 35's figure).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time

from service_bench import Client, create_games, old_pythonpath, pct, start_serve

from boxfish import engine
from boxfish.service.runtime.embedded_redis import free_port

SIZE = 10
GAMES = 16
THREADS = 16


PROBE_MOVES = ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2])  # the 4 lines of a 1x1 board
EXPLORER_ROOT = "/v1/explorer?game=dots-and-boxes&width=1&height=1&moves=[]"


def probe_explorer(base: str, stop: list[float], lags: list[float]) -> None:
    """Finish 1x1 games until ``stop``; after each, poll the explorer (every 5 ms) until it
    counts one game more; append each lag in seconds."""
    client = Client(base)
    while time.perf_counter() < stop[0]:
        status, root = client.call("GET", EXPLORER_ROOT)
        assert status == 200, root
        status, game = client.call("POST", "/v1/games",
                                   {"game": "dots-and-boxes", "width": 1, "height": 1})
        auth = {"Authorization": f"Bearer {game['write_token']}"}
        for move in PROBE_MOVES:
            status, body = client.call("POST", f"/v1/games/{game['id']}/moves",
                                       {"move": move}, auth)
            assert status == 201, body
        t0 = time.perf_counter()
        while client.call("GET", EXPLORER_ROOT)[1]["games"] == root["games"]:
            assert time.perf_counter() - t0 < 30, "the explorer never counted the game"
            time.sleep(0.005)
        lags.append(time.perf_counter() - t0)


def run_load(base: str, seconds: float, seed: int, explorer_lag: bool = False) -> dict:
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    games = create_games(base, GAMES, SIZE)
    appends: list[float] = []
    reads: list[float] = []
    bad: list[tuple] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS + 1)
    stop = [0.0]

    def work(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        client = Client(base)
        seen: dict[str, dict] = {}
        my_appends, my_reads, my_bad = [], [], []
        client.call("GET", "/healthz")
        barrier.wait()
        while time.perf_counter() < stop[0]:
            gid, auth = rng.choice(games)
            kind = rng.choice(("state", "state", "moves", "index", "append"))
            t0 = time.perf_counter()
            if kind == "append":
                view = seen.get(gid)
                if view is None or "0" not in view["lines"]:
                    continue
                free = [k for k, c in enumerate(view["lines"]) if c == "0"]
                move = list(game.action_to_move(rng.choice(free)))
                status, body = client.call("POST", f"/v1/games/{gid}/moves",
                                           {"move": move, "serial": view["serial"] + 1}, auth)
                dt = time.perf_counter() - t0
                if status == 201:
                    my_appends.append(dt)
                elif status != 409:
                    my_bad.append((kind, status, body))
                continue
            path = {"state": f"/v1/games/{gid}", "moves": f"/v1/games/{gid}/moves?after=0",
                    "index": f"/v1/games/{gid}/index"}[kind]
            status, body = client.call("GET", path)
            my_reads.append(time.perf_counter() - t0)
            if status != 200:
                my_bad.append((kind, status, body))
            elif kind == "state":
                seen[gid] = body
        with lock:
            appends.extend(my_appends)
            reads.extend(my_reads)
            bad.extend(my_bad)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    stop[0] = time.perf_counter() + seconds
    barrier.wait()
    lags: list[float] = []
    if explorer_lag:
        prober = threading.Thread(target=probe_explorer, args=(base, stop, lags))
        prober.start()
        threads.append(prober)
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return {"appends_per_s": len(appends) / elapsed,
            "append_p50_ms": pct(appends, 50) * 1000 if appends else float("nan"),
            "append_p99_ms": pct(appends, 99) * 1000 if appends else float("nan"),
            "read_p99_ms": pct(reads, 99) * 1000 if reads else float("nan"),
            "reads_per_s": len(reads) / elapsed,
            **({"explorer_lag_p50_ms": pct(lags, 50) * 1000,
                "explorer_lag_p99_ms": pct(lags, 99) * 1000,
                "explorer_lag_max_ms": max(lags) * 1000, "explorer_games": len(lags)}
               if lags else {}),
            "5xx": sum(1 for b in bad if b[1] >= 500),
            "other_bad": sum(1 for b in bad if b[1] < 500),
            "first_bad": bad[0] if bad else None}


def serve_and_load(seconds: float, seed: int, pythonpath: str | None,
                   explorer_lag: bool = False, serve_args: tuple[str, ...] = ()) -> dict:
    env_before = os.environ.get("PYTHONPATH")
    if pythonpath:
        os.environ["PYTHONPATH"] = pythonpath
    # the load itself is what is measured here, not the rate limiter
    os.environ.setdefault("BOXFISH_RATE_LIMIT_ENABLED", "false")
    try:
        port, redis_port = free_port(), free_port()
        proc = start_serve(port, redis_port, workers=1, threads=16, http_workers=2,
                           extra_args=serve_args)
    finally:
        if env_before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_before
    try:
        return run_load(f"http://127.0.0.1:{port}", seconds, seed, explorer_lag)
    finally:
        import signal
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--old-src", help="an earlier checkout to compare with, alternating")
    p.add_argument("--old-hide", default="", help="comma-separated modules the old version "
                   "runs without (e.g. hiredis, which redis-py uses whenever it can)")
    p.add_argument("--explorer-lag", action="store_true",
                   help="this version: measure the explorer's projection lag during the load")
    p.add_argument("--without-projectors", action="store_true",
                   help="also run this version with 'boxfish serve --no-projectors' (the "
                        "feed written, nobody reading it), alternating with the others")
    args = p.parse_args()
    versions = [("this version", None)]
    if args.without_projectors:
        versions.append(("no projector", None))
    if args.old_src:
        versions.insert(0, ("old version", old_pythonpath(args.old_src, args.old_hide)))
    results: dict[str, list[dict]] = {name: [] for name, _ in versions}
    for r in range(args.rounds):
        for name, path in versions:
            res = serve_and_load(args.seconds, r, path,
                                 args.explorer_lag and name == "this version",
                                 ("--no-projectors",) if name == "no projector" else ())
            results[name].append(res)
            print(f"round {r + 1} {name}: " + json.dumps(
                {k: (round(v, 1) if isinstance(v, float) else v) for k, v in res.items()}),
                flush=True)
    print(f"\n{THREADS} threads, {GAMES} {SIZE}x{SIZE} games, {args.seconds:g} s x "
          f"{args.rounds} rounds (medians)")
    print(f"{'version':<14} {'appends/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'reads/s':>8} "
          f"{'read p99':>9} {'5xx':>5} {'bad':>5}")
    for name, rs in results.items():
        def med(key, rs=rs):
            return statistics.median(r[key] for r in rs)
        print(f"{name:<14} {med('appends_per_s'):>10.0f} {med('append_p50_ms'):>8.1f} "
              f"{med('append_p99_ms'):>8.1f} {med('reads_per_s'):>8.0f} "
              f"{med('read_p99_ms'):>9.1f} {sum(r['5xx'] for r in rs):>5} "
              f"{sum(r['other_bad'] for r in rs):>5}")
    lag = [r for r in results["this version"] if "explorer_lag_p99_ms" in r]
    if lag:
        print(f"\nexplorer lag, 201 of a game's last move to GET /v1/explorer counting it, "
              f"during the load: p50 {statistics.median(r['explorer_lag_p50_ms'] for r in lag):.0f}"
              f" ms, p99 {max(r['explorer_lag_p99_ms'] for r in lag):.0f} ms (the worst "
              f"round's), max {max(r['explorer_lag_max_ms'] for r in lag):.0f} ms, over "
              f"{sum(r['explorer_games'] for r in lag)} games")
    return 0


if __name__ == "__main__":
    sys.exit(main())
