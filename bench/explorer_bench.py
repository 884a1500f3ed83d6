"""Figures of the opening explorer (issue 35): the build and the rebuild over N stored 5x5
games, the lag from a game's last move to the explorer counting it (a projector thread while
games are finished one after another; under load: ``bench/mixed_load_bench.py
--explorer-lag``), and ``GET /v1/explorer`` from 8 clients against gunicorn (2 processes, as
``boxfish serve`` runs it). Prints the figures, asserts nothing.

The games are stored once in an embedded Redis whose data folder is kept in
``~/.cache/boxfish/bench/explorer-<W>x<H>-<N>`` (``--data-dir``; storing 10,000 5x5 games
takes minutes) and read again by later runs; the measurements run with ``appendfsync
always``, as ``boxfish serve``'s own Redis.

    python bench/explorer_bench.py --games 10000
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from boxfish.engine import load_game
from boxfish.service.application.explorer import NAME
from boxfish.service.application.wiring import build, projection_runner
from boxfish.service.config import Settings
from boxfish.service.runtime.embedded_redis import EmbeddedRedis, free_port
from boxfish.service.store.events import MoveEvent
from boxfish.service.store.game_meta import GameMeta


def store_games(recorder, n: int, size: int, rng: random.Random) -> list[str]:
    """``n`` random finished games written straight to the recorder (as the API would)."""
    game = load_game("dots-and-boxes", width=size, height=size)
    ids = []
    for i in range(n):
        gid = f"bench{i:06d}{rng.randrange(1 << 30):x}"
        recorder.create_game(GameMeta(game_id=gid, game=game.name, params=game.params(),
                                      token_sha256="x", created_at=int(time.time() * 1000)))
        state = game.new_state()
        head = ""
        while not state.is_terminal():
            move = rng.choice(state.legal_moves())
            played = state.play(move)
            event = MoveEvent(serial=played.serial, move=played.move, player=played.player,
                              completed=played.completed, scores=state.scores,
                              to_move=None if state.is_terminal() else state.to_move,
                              status=state.status(), at=int(time.time() * 1000))
            head = recorder.append(gid, played.serial, event, expected_head=head).event.head
        ids.append(gid)
    return ids


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def start_gunicorn(settings: Settings, processes: int, threads: int) -> tuple:
    """gunicorn serving the app on ``settings``'s Redis; returns (process, port)."""
    port = free_port()
    env = {**os.environ, "BOXFISH_REDIS_URL": settings.redis_url,
           "BOXFISH_KEY_PREFIX": settings.key_prefix, "BOXFISH_REDIS_CLUSTER": "no",
           "BOXFISH_RATE_LIMIT_ENABLED": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config",
         "python:boxfish.service.http.gunicorn_conf", "--workers", str(processes),
         "--threads", str(threads), "--bind", f"127.0.0.1:{port}",
         "boxfish.service.http.wsgi:app"], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("gunicorn did not start") from None
            time.sleep(0.1)


def bench_get(port: int, size: int, requests: int, clients: int, rng: random.Random) -> None:
    game = load_game("dots-and-boxes", width=size, height=size)
    queries = []
    for _ in range(64):
        state, moves = game.new_state(), []
        for _ in range(rng.randrange(0, 4)):
            m = rng.choice(state.legal_moves())
            state.play(m)
            moves.append(list(m))
        queries.append(str(moves).replace(" ", ""))
    times: list[float] = []
    lock = threading.Lock()
    counted = [0]

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        for i in range(n):
            t = time.perf_counter()
            conn.request("GET", f"/v1/explorer?game=dots-and-boxes&width={size}&height={size}"
                                f"&moves={queries[i % len(queries)]}")
            resp = conn.getresponse()
            body = resp.read()
            mine.append(time.perf_counter() - t)
            assert resp.status == 200, body
        with lock:
            times.extend(mine)
            counted[0] += body.count(b'"move"')

    for n in (clients * 8, requests // clients):  # a warm-up round, then the measured one
        times.clear()
        threads = [threading.Thread(target=client, args=(n,)) for _ in range(clients)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t
    print(f"GET /v1/explorer, {clients} clients, {len(times)} requests (gunicorn, 2 processes "
          f"x 8 threads): p50 {statistics.median(times) * 1000:.1f} ms, p99 "
          f"{pct(times, 0.99) * 1000:.1f} ms, {len(times) / wall:.0f}/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=10000)
    ap.add_argument("--size", type=int, default=5)
    ap.add_argument("--lag-games", type=int, default=200)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--data-dir", default=None, help="where the stored games are kept "
                    "(default ~/.cache/boxfish/bench/explorer-<W>x<H>-<N>)")
    args = ap.parse_args()
    rng = random.Random(35)
    data_dir = args.data_dir or os.path.join(
        os.path.expanduser("~/.cache/boxfish/bench"),
        f"explorer-{args.size}x{args.size}-{args.games}")
    server = EmbeddedRedis(data_dir, appendfsync="everysec")
    server.start()
    gunicorn = None
    try:
        settings = Settings(redis_url=server.url, redis_cluster="no", rate_limit_enabled=False,
                            key_prefix="explorer-bench")
        backend = build(settings)
        stored = int(backend.redis.get("explorer-bench:stored-games") or 0)
        if stored < args.games:
            t = time.perf_counter()
            store_games(backend.recorder, args.games - stored, args.size, rng)
            backend.redis.set("explorer-bench:stored-games", args.games)
            print(f"stored {args.games - stored} {args.size}x{args.size} games in "
                  f"{time.perf_counter() - t:.1f} s (kept in {data_dir})")
        backend.redis.config_set("appendfsync", "always")
        runner = projection_runner(settings, NAME, backend.redis, backend.recorder)
        runner.store.request_rebuild(NAME, runner.projection.schema)
        t = time.perf_counter()
        runner.catch_up(timeout_s=3600)
        first = time.perf_counter() - t
        runner.store.request_rebuild(NAME, runner.projection.schema)
        t = time.perf_counter()
        runner.catch_up(timeout_s=3600)
        rebuild = time.perf_counter() - t
        print(f"build over {args.games} games: {first:.1f} s; rebuild under a new version "
              f"(the old one live beside it): {rebuild:.1f} s; {dict(runner.stats)}")

        gunicorn, port = start_gunicorn(settings, 2, 8)
        bench_get(port, args.size, args.requests, args.clients, rng)

        # Lag: a projector running; games finished one after another; the time from the last
        # append to the explorer's root count including it. Under a key prefix of its own,
        # deleted afterwards: the cached store keeps only the N games.
        settings = settings.model_copy(update={"key_prefix": "explorer-bench-lag"})
        backend = build(settings)
        runner = projection_runner(settings, NAME, backend.redis, backend.recorder)
        stop = threading.Event()
        runner_thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        runner_thread.start()
        explorer = backend.explorer
        explorer.pointer_ttl_s = 0
        root = load_game("dots-and-boxes", width=3, height=3).new_state()
        lags = []
        for _ in range(args.lag_games):
            before = explorer.query(root)["games"]
            store_games(backend.recorder, 1, 3, rng)
            t = time.perf_counter()
            while explorer.query(root)["games"] == before:
                time.sleep(0.002)
            lags.append(time.perf_counter() - t)
        print(f"lag, last move to counted ({len(lags)} games, projector polling every 50 ms): "
              f"p50 {statistics.median(lags) * 1000:.0f} ms, p99 {pct(lags, 0.99) * 1000:.0f} "
              f"ms, max {max(lags) * 1000:.0f} ms")
        stop.set()
        runner_thread.join()
        for key in backend.redis.scan_iter(match="explorer-bench-lag:*", count=1000):
            backend.redis.unlink(key)
        backend.redis.config_set("appendfsync", "everysec")
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(30)
        server.stop()


if __name__ == "__main__":
    main()
