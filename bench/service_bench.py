"""Benchmark of the Boxfish service over real HTTP.

Starts ``boxfish serve`` itself (embedded Redis, 2 workers) unless ``--url`` is given, then
measures:

* appends: POST /v1/games/{id}/moves at 1, 8 and 32 concurrent clients (each a thread with
  its own keep-alive connection, appending to its own 20x20 game): appends/s, p50, p99;
* analysis round trip: POST /v1/analyses?wait=5 on a trivial position (each request a new job:
  the time limit varies so the result cache does not answer), p50 and p99, and the same for a
  cached answer;
* replay: events/s rebuilt into a state, by the engine alone and from the Redis log.

Targets (issue 4): >= 800 appends/s with p99 <= 50 ms at 8 clients; analysis p50 <= 100 ms.

    python bench/service_bench.py [--url http://127.0.0.1:8000] [--appends 3000]

With ``--url``, give that server ``BOXFISH_RATE_LIMIT_ANALYSES`` above 2 x --analysis-rounds
a minute (the default is 60), or the analysis figures include 429s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from urllib.parse import urlparse

from boxfish import engine
from boxfish.service.embedded_redis import free_port

SIZE = 20


class Client:
    def __init__(self, base: str) -> None:
        u = urlparse(base)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)

    def call(self, method: str, path: str, body=None, headers=None):
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        self.conn.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers=hdrs)
        resp = self.conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")


def tree_cpu_s(root: int | None) -> float:
    """CPU seconds (user + system) used so far by ``root`` and every process below it (from
    /proc; 0 when unknown). Load-independent, unlike throughput on a shared machine."""
    if root is None:
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, frontier = 0.0, [root]
    while frontier:
        pid = frontier.pop()
        total += cpu.get(pid, 0.0)
        frontier += [p for p, pp in parents.items() if pp == pid]
    return total


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def create_games(base: str, count: int, size: int) -> list[tuple[str, dict]]:
    """``count`` new size x size Dots-and-Boxes games: ``(id, auth headers)`` each."""
    setup = Client(base)
    games = []
    for _ in range(count):
        status, body = setup.call("POST", "/v1/games",
                                  {"game": "dots-and-boxes", "width": size, "height": size})
        assert status == 201, body
        games.append((body["id"], {"Authorization": f"Bearer {body['write_token']}"}))
    return games


def bench_appends(base: str, clients: int, total: int, server_pid: int | None) -> dict:
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    order = game.new_state().legal_moves()
    per_client = max(1, min(len(order), total // clients))
    games = create_games(base, clients, SIZE)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = []
    barrier = threading.Barrier(clients + 1)

    def run(i: int) -> None:
        gid, auth = games[i]
        client = Client(base)
        client.call("GET", "/healthz")  # open the keep-alive connection first
        barrier.wait()
        for k in range(per_client):
            t0 = time.perf_counter()
            status, body = client.call("POST", f"/v1/games/{gid}/moves",
                                       {"move": list(order[k]), "serial": k + 1}, auth)
            latencies[i].append(time.perf_counter() - t0)
            if status != 201:
                errors.append((status, body))
                return

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0, cpu0, client0 = time.perf_counter(), tree_cpu_s(server_pid), time.process_time()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    server_cpu = tree_cpu_s(server_pid) - cpu0
    client_cpu = time.process_time() - client0
    flat = [x for lat in latencies for x in lat]
    if errors:
        print(f"  errors: {len(errors)}, first: {errors[0]}", file=sys.stderr)
    return {"clients": clients, "appends": len(flat), "per_s": len(flat) / elapsed,
            "p50_ms": pct(flat, 50) * 1000, "p99_ms": pct(flat, 99) * 1000,
            "server_cpu_ms": server_cpu * 1000 / max(1, len(flat)),
            "client_cpu_ms": client_cpu * 1000 / max(1, len(flat))}


def bench_analysis(base: str, rounds: int) -> dict:
    client = Client(base)
    body = {"game": "dots-and-boxes", "width": 2, "height": 1,
            "moves": [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]}
    # A time limit no earlier run used, so each request is a new job (not a cached one).
    salt = int(time.time() * 1000)
    fresh, cached = [], []
    for i in range(rounds):
        t0 = time.perf_counter()
        status, job = client.call("POST", "/v1/analyses?wait=5",
                                  {**body, "time_ms": 1000 + (salt + i) % 8000})
        fresh.append(time.perf_counter() - t0)
        if status != 200 or job["status"] != "finished":
            print(f"  analysis not finished: {status} {job}", file=sys.stderr)
    for _ in range(rounds):
        t0 = time.perf_counter()
        client.call("POST", "/v1/analyses?wait=5", {**body, "time_ms": 1000 + salt % 8000})
        cached.append(time.perf_counter() - t0)
    return {"new_p50_ms": pct(fresh, 50) * 1000, "new_p99_ms": pct(fresh, 99) * 1000,
            "cached_p50_ms": pct(cached, 50) * 1000, "cached_p99_ms": pct(cached, 99) * 1000}


def bench_replay(redis_url: str | None) -> dict:
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    moves = game.new_state().legal_moves()
    events = list(enumerate(moves, start=1))
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 1.5:
        engine.replay(game, events)
        n += len(events)
    out = {"engine_events_per_s": n / (time.perf_counter() - t0)}
    if redis_url:
        import redis

        from boxfish.service.games import GameService
        from boxfish.service.keys import KeySpace
        from boxfish.service.redis_recorder import RedisRecorder
        from boxfish.service.state_cache import StateCache
        client = redis.Redis.from_url(redis_url)
        recorder = RedisRecorder(client, KeySpace(os.environ.get("BOXFISH_KEY_PREFIX",
                                                                 "boxfish")))
        writer = GameService(recorder, StateCache(4))
        meta, _ = writer.create(game)
        state = game.new_state()
        from boxfish.service.games import move_event
        for move in moves:
            played = state.play(move)
            recorder.append(meta.game_id, played.serial, move_event(state, played, 0))
        meta = recorder.get_meta(meta.game_id)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 1.5:
            GameService(recorder, StateCache(4)).state_at(meta)  # cold cache: whole log
            n += len(moves)
        out["redis_events_per_s"] = n / (time.perf_counter() - t0)
    return out


def start_serve(port: int, redis_port: int, workers: int, threads: int, http_workers: int):
    data = tempfile.mkdtemp(prefix="boxfish-bench-")
    env = dict(os.environ, BOXFISH_DATA_DIR=data)
    # Rate limits stay on (their cost is part of every figure), but the analysis round trip
    # sends 2 x --analysis-rounds analyses from one address, more than the default 60/minute.
    env.setdefault("BOXFISH_RATE_LIMIT_ANALYSES", "100000/minute")
    env.pop("REDIS_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.cli", "serve",
                             "--port", str(port),
                             "--redis-port", str(redis_port), "--workers", str(workers),
                             "--threads", str(threads), "--http-workers", str(http_workers)],
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("boxfish serve did not become ready") from None
            time.sleep(0.2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="benchmark a running service instead of starting one")
    p.add_argument("--redis-url", help="with --url: its Redis, for the replay figure")
    p.add_argument("--appends", type=int, default=3000, help="appends per concurrency level")
    p.add_argument("--levels", default="1,8,32")
    p.add_argument("--analysis-rounds", type=int, default=40)
    p.add_argument("--workers", type=int, default=2, help="RQ workers (self-started serve)")
    p.add_argument("--threads", type=int, default=16, help="gunicorn threads (self-started)")
    p.add_argument("--http-workers", type=int, default=2, help="gunicorn processes")
    args = p.parse_args()

    proc = None
    base, redis_url = args.url, args.redis_url
    if base is None:
        port, redis_port = free_port(), free_port()
        proc = start_serve(port, redis_port, args.workers, args.threads, args.http_workers)
        base, redis_url = f"http://127.0.0.1:{port}", f"redis://127.0.0.1:{redis_port}/0"
    try:
        print(f"Boxfish service benchmark against {base} ({os.cpu_count()} CPUs)")
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"\n{'clients':>8} {'appends':>8} {'appends/s':>10} {'p50 ms':>8} {'p99 ms':>8}"
              f" {'server CPU ms/append':>21} {'client CPU ms/append':>21}")
        for level in (int(x) for x in args.levels.split(",")):
            r = bench_appends(base, level, args.appends, proc.pid if proc else None)
            print(f"{r['clients']:>8} {r['appends']:>8} {r['per_s']:>10.0f} "
                  f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['server_cpu_ms']:>21.3f} "
                  f"{r['client_cpu_ms']:>21.3f}")
        a = bench_analysis(base, args.analysis_rounds)
        print(f"\nanalysis round trip (POST /v1/analyses?wait=5, trivial position, "
              f"{args.analysis_rounds} rounds)")
        print(f"  new job:       p50 {a['new_p50_ms']:7.2f} ms   p99 {a['new_p99_ms']:7.2f} ms")
        print(f"  cached result: p50 {a['cached_p50_ms']:7.2f} ms   "
              f"p99 {a['cached_p99_ms']:7.2f} ms")
        r = bench_replay(redis_url)
        print(f"\nreplay ({SIZE}x{SIZE} game, {2 * SIZE * (SIZE + 1)} events)")
        print(f"  engine.replay:             {r['engine_events_per_s']:>10.0f} events/s")
        if "redis_events_per_s" in r:
            print(f"  rebuild from Redis (cold): {r['redis_events_per_s']:>10.0f} events/s")
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
