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

With ``--old-src DIR`` (a checkout of an earlier version, e.g. made with ``git worktree add``)
the appends are measured for that version too, alternating with this one ``--rounds`` times
(each round a fresh ``boxfish serve`` of each), and a table compares the two: the medians of
appends/s, p50, p99 and the API's CPU per append (its gunicorn processes only, read with psutil:
load-independent), with the ratios (this / old).

With ``--url``, give that server ``BOXFISH_RATE_LIMIT_ANALYSES`` above 2 x --analysis-rounds
a minute (the default is 60), or the analysis figures include 429s.

Issue 13's sections (each prints a markdown table; ``--skip basic,store,workers`` leaves any out):

* store: appends/s, p50 and p99 at ``--clients`` (8,32) concurrent clients with the move store
  on ``--store single|cluster|both`` and ``BOXFISH_MIN_REPLICAS_ACK`` in ``--acks`` (0,1). The
  API runs as ``boxfish serve --workers 0`` with ``REDIS_URL`` on the store and
  ``BOXFISH_QUEUE_REDIS_URL`` on a plain Redis of its own. "single" is one redis-server with
  one replica (``--replicaof``), so that ACK=1 can succeed and ACK is the only difference;
  "cluster" is 3 masters + 3 replicas (tests/redis_cluster.py). Every store server runs like
  the cluster's nodes: ``appendonly no``, no snapshots (the replica is the copy).
* workers: analyses/s through the API (POST /v1/analyses?wait=10, ``--analysis-clients``
  concurrent clients for ``--analysis-seconds``) with ``--workers-list`` (1,2,4) RQ worker
  processes, for trivial positions (a nearly finished 2x1 game) and ``--slow-ms`` (200 ms)
  analyses of 6x6 openings (each request a new job).

    python bench/service_bench.py --skip basic --store both --acks 0,1 --clients 8,32 \
        --workers-list 1,2,4
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import psutil

from boxfish import engine
from boxfish.service.runtime.embedded_redis import free_port, redis_server_binary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def _tree(roots: int | list[int]) -> list[psutil.Process]:
    """The processes ``roots`` and every process below them that are still running."""
    out = []
    for root in roots if isinstance(roots, list) else [roots]:
        try:
            top = psutil.Process(root)
            out += [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return out


def tree_cpu_s(root: int | list[int] | None) -> float:
    """CPU seconds (user + system) used so far by ``root`` and every process below it (0
    when unknown). Load-independent, unlike throughput on a shared machine."""
    total = 0.0
    for proc in _tree(root) if root is not None else []:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def children(root: int) -> list[int]:
    """The pids of the processes whose parent is ``root``."""
    try:
        return [proc.pid for proc in psutil.Process(root).children()]
    except psutil.NoSuchProcess:
        return []


def api_pid(root: int) -> int | None:
    """The gunicorn master below ``root`` (``boxfish serve``): its tree is the API alone,
    without Redis and the RQ workers."""
    for proc in sorted(_tree(root)[1:], key=lambda proc: proc.pid):
        try:
            cmdline = proc.cmdline()
        except psutil.Error:
            continue
        if any(part.endswith("gunicorn") for part in cmdline[:3]):
            return proc.pid
    return None


def old_pythonpath(src: str, hide: str = "") -> str:
    """A folder whose ``boxfish/`` links to the old checkout's engine, service and workers
    (its compiled engine core too, which the checkout must hold: copy the ``.so`` in).
    ``hide``: comma-separated modules installed now that the old version did not depend on
    (e.g. ``hiredis``, which redis-py uses whenever it can import it): there, importing them
    raises ImportError, as without them."""
    root = Path(tempfile.mkdtemp(prefix="boxfish-old-")) / "boxfish"
    root.mkdir()
    for name in ("engine", "service", "workers"):
        (root / name).symlink_to(Path(src).resolve() / name)
    for module in filter(None, hide.split(",")):
        (root.parent / f"{module}.py").write_text(
            f"raise ImportError('{module} hidden: the old version did not depend on it')\n")
    return str(root.parent)


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


def bench_appends(base: str, clients: int, total: int, server_pid: int | None,
                  redis_pids: list[int] | None = None, api: int | None = None) -> dict:
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    order = game.new_state().legal_moves()
    per_client = max(1, min(len(order), total // clients))
    games = create_games(base, clients, SIZE)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = []
    statuses: dict[int, int] = {}
    barrier = threading.Barrier(clients + 1)

    def run(i: int) -> None:
        gid, auth = games[i]
        client = Client(base)
        client.call("GET", "/healthz")  # open the keep-alive connection first
        barrier.wait()
        for k in range(per_client):
            t0 = time.perf_counter()
            try:
                status, body = client.call("POST", f"/v1/games/{gid}/moves",
                                           {"move": list(order[k]), "serial": k + 1}, auth)
            except (OSError, http.client.HTTPException) as exc:
                status, body = -1, repr(exc)
            statuses[status] = statuses.get(status, 0) + 1
            if status != 201:
                errors.append((status, body))
                return
            latencies[i].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0, cpu0, client0 = time.perf_counter(), tree_cpu_s(server_pid), time.process_time()
    rcpu0 = tree_cpu_s(redis_pids) if redis_pids else 0.0
    api0 = tree_cpu_s(api)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    api_cpu = tree_cpu_s(api) - api0
    server_cpu = tree_cpu_s(server_pid) - cpu0
    redis_cpu = (tree_cpu_s(redis_pids) - rcpu0) if redis_pids else 0.0
    client_cpu = time.process_time() - client0
    flat = [x for lat in latencies for x in lat] or [float("nan")]
    n = sum(len(lat) for lat in latencies)
    if errors:
        print(f"  errors: {len(errors)}, first: {errors[0]}", file=sys.stderr, flush=True)
    return {"clients": clients, "appends": n, "per_s": n / elapsed,
            "p50_ms": pct(flat, 50) * 1000, "p99_ms": pct(flat, 99) * 1000,
            "server_cpu_ms": server_cpu * 1000 / max(1, n),
            "redis_cpu_ms": redis_cpu * 1000 / max(1, n),
            "api_cpu_ms": api_cpu * 1000 / max(1, n),
            "client_cpu_ms": client_cpu * 1000 / max(1, n),
            "errors": len(errors), "statuses": dict(sorted(statuses.items())),
            "elapsed_s": elapsed}


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

        from boxfish.service.application.games import GameService
        from boxfish.service.application.state_cache import StateCache
        from boxfish.service.store.keys import KeySpace
        from boxfish.service.store.redis_recorder import RedisRecorder
        client = redis.Redis.from_url(redis_url)
        recorder = RedisRecorder(client, KeySpace(os.environ.get("BOXFISH_KEY_PREFIX",
                                                                 "boxfish")))
        writer = GameService(recorder, StateCache(4))
        meta, _ = writer.create(game)
        state = game.new_state()
        from boxfish.service.application.games import move_event
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


def wait_http(port: int, path: str, proc: subprocess.Popen, timeout_s: float = 90,
              check=None) -> None:
    """Until GET ``path`` answers 200 (and ``check(body)`` is true, when given)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
                if check is None or check(json.loads(resp.read() or b"null")):
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"boxfish serve did not become ready ({path})")
        time.sleep(0.2)


def launch_serve(port: int, workers: int, threads: int, http_workers: int,
                 env_extra: dict[str, str] | None = None, redis_port: int | None = None,
                 data: str | None = None, extra_args: tuple[str, ...] = ()) -> subprocess.Popen:
    """``boxfish serve`` (and ``extra_args``) in its own session; ready once /healthz answers
    (with workers: once /readyz counts every worker)."""
    data = data or tempfile.mkdtemp(prefix="boxfish-bench-")
    env = dict(os.environ, BOXFISH_DATA_DIR=data)
    for name in ("REDIS_URL", "BOXFISH_REDIS_URL", "BOXFISH_QUEUE_REDIS_URL",
                 "BOXFISH_REDIS_CLUSTER", "BOXFISH_MIN_REPLICAS_ACK"):
        env.pop(name, None)
    # Rate limits stay on (their cost is part of every figure), but the benchmark sends more
    # from one address than the defaults allow.
    env.setdefault("BOXFISH_RATE_LIMIT_ANALYSES", "100000/minute")
    env.setdefault("BOXFISH_RATE_LIMIT_GAMES", "100000/minute")
    env.setdefault("BOXFISH_RATE_LIMIT_APPENDS", "100000/minute")
    env.setdefault("BOXFISH_RATE_LIMIT_ANIMATIONS", "100000/minute")
    env.update(env_extra or {})
    cmd = [sys.executable, "-m", "boxfish.service.runtime.cli", "serve", "--port", str(port),
           "--workers", str(workers), "--threads", str(threads),
           "--http-workers", str(http_workers)]
    if redis_port:
        cmd += ["--redis-port", str(redis_port)]
    proc = subprocess.Popen([*cmd, *extra_args], env=env, start_new_session=True)
    try:
        if workers:
            wait_http(port, "/readyz", proc, check=lambda b: b.get("workers", 0) >= workers)
        else:
            wait_http(port, "/healthz", proc)
        settle_api(proc, http_workers)
    except BaseException:
        stop_serve(proc)
        raise
    return proc


#: How long every gunicorn process is given to finish booting once all exist, in seconds.
API_SETTLE_S = 2.0


def settle_api(proc: subprocess.Popen, http_workers: int, timeout_s: float = 60) -> None:
    """Until every gunicorn process of ``boxfish serve`` is up, and :data:`API_SETTLE_S`
    more. ``/healthz`` answers as soon as one of them is: keep-alive connections a bench opens
    then all go to that one (it accepts while the others still boot) and stay there, so the
    run uses one core of two; that happened in about half the runs of mixed_load_bench."""
    deadline = time.monotonic() + timeout_s
    while True:
        master = api_pid(proc.pid)
        if master is not None and len(children(master)) >= http_workers:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("boxfish serve's gunicorn processes did not all start")
        time.sleep(0.1)
    time.sleep(API_SETTLE_S)


def stop_serve(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def start_serve(port: int, redis_port: int, workers: int, threads: int, http_workers: int,
                extra_args: tuple[str, ...] = ()):
    return launch_serve(port, workers, threads, http_workers, redis_port=redis_port,
                        extra_args=extra_args)


class RedisServer:
    """A plain redis-server on loopback like the cluster's nodes (``appendonly no``, no
    snapshots), optionally a replica of another (``--replicaof``)."""

    def __init__(self, base_dir: str, replica_of: RedisServer | None = None) -> None:
        self.port = free_port()
        self.dir = os.path.join(base_dir, f"redis-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        cmd = [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", self.dir, "--daemonize", "no", "--appendonly", "no", "--save", "",
               "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
               "--logfile", os.path.join(self.dir, "redis.log"), "--loglevel", "warning"]
        if replica_of is not None:
            cmd += ["--replicaof", "127.0.0.1", str(replica_of.port)]
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                        start_new_session=True)
        import redis
        self.client = redis.Redis(port=self.port, socket_connect_timeout=0.5,
                                  decode_responses=True)
        deadline = time.monotonic() + 15
        while True:
            try:
                self.client.ping()
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"redis-server on {self.port} did not start") from None
                time.sleep(0.05)
        if replica_of is not None:
            while self.client.info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    raise SystemExit(f"replica {self.port} did not link to its master")
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class StoreSetup:
    """The move store the API writes to: ``single`` (one redis-server and its replica) or
    ``cluster`` (3 masters + 3 replicas, tests/redis_cluster.py)."""

    def __init__(self, kind: str, base_dir: str) -> None:
        self.kind = kind
        self.servers: list[RedisServer] = []
        self.cluster = None
        if kind == "single":
            primary = RedisServer(base_dir)
            self.servers.append(primary)
            self.servers.append(RedisServer(base_dir, replica_of=primary))
            self.url = primary.url
        else:
            if ROOT not in sys.path:
                sys.path.insert(0, ROOT)
            from tests.redis_cluster import RedisClusterProcesses
            self.cluster = RedisClusterProcesses(os.path.join(base_dir, "cluster")).start()
            self.url = self.cluster.url

    @property
    def pids(self) -> list[int]:
        if self.cluster is not None:
            return [n.process.pid for n in self.cluster.nodes if n.process is not None]
        return [s.process.pid for s in self.servers]

    def wait_calls(self) -> int:
        """WAIT commands the store's servers have run so far (INFO commandstats)."""
        clients = ([n.client() for n in self.cluster.live_nodes()] if self.cluster is not None
                   else [s.client for s in self.servers])
        total = 0
        for c in clients:
            total += int(c.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
            if self.cluster is not None:
                c.close()
        return total

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        for server in reversed(self.servers):
            server.stop()


def section_store(args) -> None:
    stores = ["single", "cluster"] if args.store == "both" else [args.store]
    acks = [int(x) for x in args.acks.split(",")]
    levels = [int(x) for x in args.clients.split(",")]
    print(f"\n### Appends: one Redis vs Redis Cluster, BOXFISH_MIN_REPLICAS_ACK {args.acks}\n",
          flush=True)
    print(f"{os.cpu_count()} CPUs shared by the bench's client threads, gunicorn "
          f"({args.http_workers} processes x {args.threads} threads) and every redis-server; "
          f"{args.appends} appends per run, each client on its own {SIZE}x{SIZE} game, "
          f"best of {args.repeat} run(s) per row (range of appends/s in brackets; errors "
          f"summed over the runs); "
          f"load average before: {os.getloadavg()[0]:.2f}\n", flush=True)
    print("| store | ACK | clients | appends | appends/s | p50 ms | p99 ms "
          "| errors | API CPU ms/append | Redis CPU ms/append | WAITs | load avg |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    base_dir = tempfile.mkdtemp(prefix="boxfish-bench-store-")
    try:
        for kind in stores:
            store = StoreSetup(kind, base_dir)
            queue = RedisServer(base_dir)
            try:
                for ack in acks:
                    port = free_port()
                    env = {"REDIS_URL": store.url, "BOXFISH_QUEUE_REDIS_URL": queue.url,
                           "BOXFISH_REDIS_CLUSTER": "yes" if kind == "cluster" else "no",
                           "BOXFISH_MIN_REPLICAS_ACK": str(ack)}
                    proc = launch_serve(port, 0, args.threads, args.http_workers, env)
                    try:
                        base = f"http://127.0.0.1:{port}"
                        bench_appends(base, 4, 200, None)  # warm-up: connections, scripts
                        for level in levels:
                            # Best of --repeat runs: on a shared machine, other work only
                            # slows a run down; the range shows how much.
                            runs = []
                            for _ in range(max(1, args.repeat)):
                                waits0 = store.wait_calls()
                                r = bench_appends(base, level, args.appends, proc.pid,
                                                  store.pids)
                                runs.append((r, store.wait_calls() - waits0))
                            r, waits = max(runs, key=lambda rw: rw[0]["per_s"])
                            rates = sorted(x["per_s"] for x, _ in runs)
                            r["errors"] = sum(x["errors"] for x, _ in runs)
                            r["statuses"] = {k: sum(x["statuses"].get(k, 0) for x, _ in runs)
                                             for k in {k for x, _ in runs for k in x["statuses"]}}
                            spread = (f" ({rates[0]:.0f}-{rates[-1]:.0f})" if len(rates) > 1
                                      else "")
                            label = ("one Redis + 1 replica" if kind == "single"
                                     else "cluster 3+3")
                            err = (f"{r['errors']} ({r['statuses']})" if r["errors"] else "0")
                            print(f"| {label} | {ack} | {level} | {r['appends']} "
                                  f"| {r['per_s']:.0f}{spread} | {r['p50_ms']:.2f} "
                                  f"| {r['p99_ms']:.2f} "
                                  f"| {err} | {r['server_cpu_ms']:.2f} "
                                  f"| {r['redis_cpu_ms']:.3f} | {waits} "
                                  f"| {os.getloadavg()[0]:.2f} |",
                                  flush=True)
                    finally:
                        stop_serve(proc)
            finally:
                queue.stop()
                store.stop()
    finally:
        shutil.rmtree(base_dir, ignore_errors=True)


TRIVIAL = {"game": "dots-and-boxes", "width": 2, "height": 1,
           "moves": [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]}


def slow_positions(count: int, seed: int, width: int = 6, height: int = 6,
                   drawn: int = 4) -> list[list[list[int]]]:
    """``count`` distinct openings of ``drawn`` random lines on a width x height board: far
    from solvable in 200 ms, so each analysis runs to its deadline."""
    game = engine.load_game("dots-and-boxes", width=width, height=height)
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < count:
        state = game.new_state()
        for _ in range(drawn):
            state.play(rng.choice(state.legal_moves()))
        moves = tuple(tuple(m) for m in state.history)
        if moves not in seen:
            seen.add(moves)
            out.append([list(m) for m in moves])
    return out


def bench_analysis_rate(base: str, kind: str, clients: int, seconds: float, slow_ms: int,
                        server_pid: int) -> dict:
    """``clients`` threads submit analyses (each a new job) and wait for each result, for
    ``seconds``: analyses finished per second, latency, and what the searches did."""
    salt = int(time.time() * 1000)
    counter = iter(range(10**9))
    lock = threading.Lock()
    positions = slow_positions(20000, salt) if kind != "trivial" else []
    done: list[float] = []
    nodes: list[int] = []
    search_ms: list[float] = []
    statuses: dict[str, int] = {}
    barrier = threading.Barrier(clients + 1)
    end = [0.0]

    def body() -> dict:
        with lock:
            i = next(counter)
        if kind == "trivial":
            # A time limit no earlier request used: a new job each (the search ends at once).
            return {**TRIVIAL, "time_ms": 1000 + (salt + i) % 8000}
        return {"game": "dots-and-boxes", "width": 6, "height": 6,
                "moves": positions[i % len(positions)], "time_ms": slow_ms}

    def note(key: str) -> None:
        with lock:
            statuses[key] = statuses.get(key, 0) + 1

    def run() -> None:
        client = Client(base)
        client.call("GET", "/healthz")
        barrier.wait()
        while time.perf_counter() < end[0]:
            t0 = time.perf_counter()
            try:
                status, job = client.call("POST", "/v1/analyses?wait=10", body())
                while status == 202:
                    time.sleep(0.02)
                    status, job = client.call("GET", f"/v1/analyses/{job['id']}")
                    if status == 200 and job.get("status") not in ("finished", "failed"):
                        status = 202
            except (OSError, http.client.HTTPException) as exc:
                note(type(exc).__name__)
                client = Client(base)
                continue
            if status == 200 and job.get("status") == "finished":
                with lock:
                    done.append(time.perf_counter() - t0)
                    res = job.get("result") or {}
                    nodes.append(int(res.get("nodes", 0)))
                    search_ms.append(float(res.get("time_ms", 0.0)))
                note("finished")
            else:
                note(f"{status} {job.get('status') if isinstance(job, dict) else ''}".strip())
                if status in (429, 503):
                    time.sleep(0.2)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    end[0] = time.perf_counter() + seconds
    barrier.wait()
    t0, cpu0 = time.perf_counter(), tree_cpu_s(server_pid)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    cpu = tree_cpu_s(server_pid) - cpu0
    flat = done or [float("nan")]
    return {"finished": len(done), "per_s": len(done) / elapsed, "elapsed_s": elapsed,
            "p50_ms": pct(flat, 50) * 1000, "p99_ms": pct(flat, 99) * 1000,
            "nodes": sorted(nodes)[len(nodes) // 2] if nodes else 0,
            "search_ms": sorted(search_ms)[len(search_ms) // 2] if search_ms else 0.0,
            "cpu_util": cpu / elapsed, "statuses": statuses}


def section_workers(args) -> None:
    counts = [int(x) for x in args.workers_list.split(",")]
    kinds = [k for k in ("trivial", "slow") if k not in args.skip_kinds.split(",")]
    print("\n### Analyses per second through the API, by RQ worker processes\n", flush=True)
    print(f"{os.cpu_count()} CPUs shared by everything (bench clients, gunicorn "
          f"{args.http_workers}x{args.threads}, Redis, workers); {args.analysis_clients} "
          f"clients each POST /v1/analyses?wait=10 (a new job each) and wait for it, for "
          f"{args.analysis_seconds:g} s; trivial = a nearly finished 2x1 game, slow = "
          f"time_ms {args.slow_ms} on a 6x6 opening (4 lines drawn); load average before: "
          f"{os.getloadavg()[0]:.2f}\n", flush=True)
    print("| workers | kind | finished | analyses/s | p50 ms | p99 ms | median search ms "
          "| median nodes | CPU used (of 2) | other answers | load avg |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in counts:
        port = free_port()
        proc = launch_serve(port, n, args.threads, args.http_workers)
        try:
            base = f"http://127.0.0.1:{port}"
            # Warm-up: every worker imports the engine and runs a first job.
            bench_analysis_rate(base, "trivial", max(2, n * 2), 1.5, args.slow_ms, proc.pid)
            for kind in kinds:
                r = bench_analysis_rate(base, kind, args.analysis_clients,
                                        args.analysis_seconds, args.slow_ms, proc.pid)
                other = {k: v for k, v in r["statuses"].items() if k != "finished"}
                label = "trivial" if kind == "trivial" else f"{args.slow_ms} ms"
                print(f"| {n} | {label} | {r['finished']} | {r['per_s']:.1f} "
                      f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['search_ms']:.1f} "
                      f"| {r['nodes']} | {r['cpu_util']:.2f} | {other or '-'} "
                      f"| {os.getloadavg()[0]:.2f} |", flush=True)
        finally:
            stop_serve(proc)


def with_pythonpath(path: str | None, start):
    """``start()`` with ``PYTHONPATH`` set to ``path`` (None: as it is) while it starts."""
    before = os.environ.get("PYTHONPATH")
    if path:
        os.environ["PYTHONPATH"] = path
    try:
        return start()
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def compare_appends(args) -> None:
    """The appends of ``--old-src`` and of this version, alternating (see the docstring)."""
    import statistics
    versions = [("old version", old_pythonpath(args.old_src, args.old_hide)),
                ("this version", None)]
    levels = [int(x) for x in args.levels.split(",")]
    runs: dict[tuple[str, int], list[dict]] = {}
    print(f"appends, {args.old_src} vs this version, {args.rounds} rounds alternating "
          f"({os.cpu_count()} CPUs); load average before: {os.getloadavg()[0]:.2f}",
          flush=True)
    for r in range(args.rounds):
        for name, path in versions:
            port, redis_port = free_port(), free_port()
            proc = with_pythonpath(path, lambda port=port, redis_port=redis_port: start_serve(
                port, redis_port, args.workers, args.threads, args.http_workers))
            try:
                base = f"http://127.0.0.1:{port}"
                bench_appends(base, 4, 200, None)  # warm-up: connections, scripts
                api = api_pid(proc.pid)
                for level in levels:
                    res = bench_appends(base, level, args.appends, proc.pid, api=api)
                    res["load"] = os.getloadavg()[0]
                    runs.setdefault((name, level), []).append(res)
                    print(f"round {r + 1} {name:<12} {level:>3} clients: "
                          f"{res['per_s']:7.0f}/s p50 {res['p50_ms']:6.2f} "
                          f"p99 {res['p99_ms']:7.2f} ms, API CPU {res['api_cpu_ms']:.3f} "
                          f"ms/append (all of serve {res['server_cpu_ms']:.3f}), errors "
                          f"{res['errors']}, load {res['load']:.2f}", flush=True)
            finally:
                stop_serve(proc)

    def med(name, level, key):
        return statistics.median(x[key] for x in runs[(name, level)])

    print("\n| clients | version | appends/s | p50 ms | p99 ms | API CPU ms/append "
          "| load avg |\n|---|---|---|---|---|---|---|")
    for level in levels:
        for name, _ in versions:
            print(f"| {level} | {name} | {med(name, level, 'per_s'):.0f} "
                  f"| {med(name, level, 'p50_ms'):.2f} | {med(name, level, 'p99_ms'):.2f} "
                  f"| {med(name, level, 'api_cpu_ms'):.3f} | {med(name, level, 'load'):.2f} |")
        ratio = {k: med("this version", level, k) / med("old version", level, k)
                 for k in ("per_s", "p50_ms", "p99_ms", "api_cpu_ms")}
        print(f"| {level} | ratio this/old | {ratio['per_s']:.2f}x | {ratio['p50_ms']:.2f}x "
              f"| {ratio['p99_ms']:.2f}x | {ratio['api_cpu_ms']:.2f}x | |", flush=True)


def section_basic(args) -> None:
    if args.old_src:
        compare_appends(args)
        return
    proc = None
    base, redis_url = args.url, args.redis_url
    if base is None:
        port, redis_port = free_port(), free_port()
        proc = start_serve(port, redis_port, args.workers, args.threads, args.http_workers)
        base, redis_url = f"http://127.0.0.1:{port}", f"redis://127.0.0.1:{redis_port}/0"
    try:
        print(f"Boxfish service benchmark against {base} ({os.cpu_count()} CPUs)", flush=True)
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"\n{'clients':>8} {'appends':>8} {'appends/s':>10} {'p50 ms':>8} {'p99 ms':>8}"
              f" {'server CPU ms/append':>21} {'client CPU ms/append':>21}", flush=True)
        for level in (int(x) for x in args.levels.split(",")):
            r = bench_appends(base, level, args.appends, proc.pid if proc else None)
            print(f"{r['clients']:>8} {r['appends']:>8} {r['per_s']:>10.0f} "
                  f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['server_cpu_ms']:>21.3f} "
                  f"{r['client_cpu_ms']:>21.3f}", flush=True)
        a = bench_analysis(base, args.analysis_rounds)
        print(f"\nanalysis round trip (POST /v1/analyses?wait=5, trivial position, "
              f"{args.analysis_rounds} rounds)")
        print(f"  new job:       p50 {a['new_p50_ms']:7.2f} ms   p99 {a['new_p99_ms']:7.2f} ms")
        print(f"  cached result: p50 {a['cached_p50_ms']:7.2f} ms   "
              f"p99 {a['cached_p99_ms']:7.2f} ms", flush=True)
        r = bench_replay(redis_url)
        print(f"\nreplay ({SIZE}x{SIZE} game, {2 * SIZE * (SIZE + 1)} events)")
        print(f"  engine.replay:             {r['engine_events_per_s']:>10.0f} events/s")
        if "redis_events_per_s" in r:
            print(f"  rebuild from Redis (cold): {r['redis_events_per_s']:>10.0f} events/s",
                  flush=True)
    finally:
        stop_serve(proc)


SECTIONS = {"basic": section_basic, "store": section_store, "workers": section_workers}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--skip", default="", help="comma-separated sections to leave out: "
                   + ",".join(SECTIONS))
    p.add_argument("--only", default="", help="comma-separated sections to run (default all)")
    p.add_argument("--url", help="basic section: benchmark a running service instead")
    p.add_argument("--redis-url", help="with --url: its Redis, for the replay figure")
    p.add_argument("--appends", type=int, default=3000, help="appends per concurrency level")
    p.add_argument("--old-src", help="basic section: an earlier checkout whose appends are "
                   "measured too, alternating with this version's")
    p.add_argument("--rounds", type=int, default=2, help="with --old-src: rounds per version")
    p.add_argument("--old-hide", default="", help="with --old-src: comma-separated modules "
                   "the old version runs without (e.g. hiredis)")
    p.add_argument("--levels", default="1,8,32", help="basic section: client counts")
    p.add_argument("--analysis-rounds", type=int, default=40)
    p.add_argument("--workers", type=int, default=2, help="basic section: RQ workers")
    p.add_argument("--threads", type=int, default=16, help="gunicorn threads (self-started)")
    p.add_argument("--http-workers", type=int, default=2, help="gunicorn processes")
    p.add_argument("--store", choices=("single", "cluster", "both"), default="both",
                   help="store section: the move store's Redis")
    p.add_argument("--acks", default="0,1", help="store section: BOXFISH_MIN_REPLICAS_ACK")
    p.add_argument("--clients", default="8,32", help="store section: concurrent clients")
    p.add_argument("--repeat", type=int, default=1,
                   help="store section: runs per row; the fastest is shown, with the range")
    p.add_argument("--workers-list", default="1,2,4",
                   help="workers section: RQ worker processes")
    p.add_argument("--analysis-clients", type=int, default=8,
                   help="workers section: concurrent clients")
    p.add_argument("--analysis-seconds", type=float, default=8.0,
                   help="workers section: seconds per row")
    p.add_argument("--slow-ms", type=int, default=200, help="workers section: time_ms")
    p.add_argument("--skip-kinds", default="", help="workers section: trivial,slow")
    args = p.parse_args()

    wanted = [x for x in (args.only.split(",") if args.only else SECTIONS) if x]
    skip = {x for x in args.skip.split(",") if x}
    for name in list(wanted) + list(skip):
        if name not in SECTIONS:
            p.error(f"no section {name!r} (sections: {', '.join(SECTIONS)})")
    for name in wanted:
        if name not in skip:
            SECTIONS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
