"""The store of exact values (issue 33), over real HTTP against ``boxfish serve`` (embedded
Redis, ``--workers`` RQ workers, rate limits raised for one client address).

* analyses: ``--positions`` 5x5 positions (``safe`` and ``biased`` sources, ``--undrawn``
  undrawn lines, so each is proven within ``--time-ms``), each POSTed with ``?wait=10`` twice:
  the first time searched, the second answered from the store. Median and p99 of each, their
  ratio, and how many answers said ``source: store``;
* ``GET /v1/positions`` for the stored positions from ``--clients`` threads (keep-alive
  connections), ``--lookups`` requests in all: p50 and p99;
* size: the store's bytes per entry (``boxfish_exact_store_bytes`` / ``_entries`` from
  ``/metrics``: Redis's MEMORY USAGE of the shards) and the entries a 1 GiB budget holds at
  that size, beside the budget's own ``ENTRY_BYTES``; and, with ``--size-entries N``, the
  same for N synthetic 5x5 entries (20-35 moves' values each) written straight to a
  redis-server of the bench's own, where the shards' fixed overhead no longer counts.

    python bench/exact_store_bench.py [--positions 40] [--clients 8] [--lookups 4000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_bench import launch_serve, pct, stop_serve

from boxfish.engine.dots.learn.sources import generate
from boxfish.service.runtime.embedded_redis import free_port
from boxfish.service.store.exact_values import ENTRY_BYTES


def request(conn: http.client.HTTPConnection, method: str, path: str, body=None):
    data = None if body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def positions(n: int, undrawn: list[int]) -> list[dict]:
    """``n`` 5x5 positions of the data generator's ``safe`` and ``biased`` sources (seed 7)."""
    out = []
    for i in range(n):
        p = generate(("safe", "biased")[i % 2], 5, 5, 7, undrawn[i % len(undrawn)], i)
        out.append({"lines": format_lines(p.drawn, 60), "to_move": 0})
    return out


def format_lines(drawn: int, nl: int) -> str:
    return "".join("1" if drawn >> i & 1 else "0" for i in range(nl))


def synthetic_size(n: int) -> None:
    import random
    import subprocess

    import redis

    from boxfish.service.runtime.embedded_redis import redis_server_binary
    from boxfish.service.store.exact_values import ExactValueStore
    from boxfish.service.store.keys import KeySpace

    port = free_port()
    server = subprocess.Popen([redis_server_binary(), "--port", str(port), "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        deadline = time.monotonic() + 30
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        store = ExactValueStore(r, KeySpace("bench"), 1 << 40)
        rng = random.Random(1)
        for _ in range(n):
            moves = [[rng.randrange(60), rng.randint(-15, 15)] for _ in range(rng.randint(20, 35))]
            entry = {"value": rng.randint(-9, 9), "moves": moves, "all": True, "engine": "0.1.0",
                     "proof_s": round(rng.random() * 5, 3), "stored_at": round(time.time(), 3)}
            store.put(f"dots-and-boxes:5x5:{rng.getrandbits(60):x}", entry, entry["proof_s"])
        st = store.stats()
        per = st["bytes"] / st["entries"]
        print(f"synthetic: {st['entries']} 5x5 entries, {per:.0f} bytes an entry; a 1 GiB "
              f"budget holds {(1 << 30) / per:,.0f} at that size, {(1 << 30) // ENTRY_BYTES:,} "
              f"by ENTRY_BYTES ({ENTRY_BYTES})\n")
    finally:
        server.terminate()
        server.wait()


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=40)
    ap.add_argument("--undrawn", default="30,31,32,33")
    ap.add_argument("--time-ms", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=8,
                    help="threads of each of the 2 HTTP processes (boxfish serve --threads)")
    ap.add_argument("--lookups", type=int, default=4000)
    ap.add_argument("--size-entries", type=int, default=20000)
    args = ap.parse_args(argv)
    if args.size_entries:
        synthetic_size(args.size_entries)
    port = free_port()
    proc = launch_serve(port, args.workers, args.threads, 2,
                        env_extra={"BOXFISH_RATE_LIMIT_READS": "1000000/minute"})
    try:
        undrawn = [int(x) for x in args.undrawn.split(",")]
        ps = positions(args.positions, undrawn)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        first, second, stored = [], [], 0
        for p in ps:
            body = {"game": "dots-and-boxes", "width": 5, "height": 5, **p,
                    "time_ms": args.time_ms}
            t = time.perf_counter()
            status, raw = request(conn, "POST", "/v1/analyses?wait=10", body)
            first.append((time.perf_counter() - t) * 1000)
            r1 = json.loads(raw)
            t = time.perf_counter()
            status, raw = request(conn, "POST", "/v1/analyses?wait=10", body)
            second.append((time.perf_counter() - t) * 1000)
            r2 = json.loads(raw)
            if (r2.get("result") or {}).get("source") == "store":
                stored += 1
                assert r2["result"]["value"] == r1["result"]["value"]
        print(f"analyses of {len(ps)} 5x5 positions at {args.undrawn} undrawn, "
              f"{args.workers} workers:")
        print("| pass | median ms | p99 ms |\n|---|---|---|")
        print(f"| first (searched) | {statistics.median(first):.1f} | {pct(first, 99):.1f} |")
        print(f"| again (store) | {statistics.median(second):.1f} | {pct(second, 99):.1f} |")
        print(f"answered from the store: {stored} of {len(ps)}; median ratio first / again "
              f"{statistics.median(first) / statistics.median(second):.1f}x")

        paths = [f"/v1/positions?width=5&height=5&lines={p['lines']}" for p in ps]
        times: list[float] = []
        lock = threading.Lock()
        per = args.lookups // args.clients

        def client(k: int) -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine = []
            for j in range(per):
                t = time.perf_counter()
                status, _ = request(c, "GET", paths[(k + j) % len(paths)])
                mine.append((time.perf_counter() - t) * 1000)
                assert status in (200, 404), status
            with lock:
                times.extend(mine)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
        print(f"\nGET /v1/positions, {args.clients} clients, {len(times)} requests: "
              f"p50 {pct(times, 50):.2f} ms, p99 {pct(times, 99):.2f} ms, "
              f"{len(times) / wall:.0f}/s")

        status, raw = request(conn, "GET", "/metrics")
        text = raw.decode()
        entries = metric(text, "boxfish_exact_store_entries")
        size = metric(text, "boxfish_exact_store_bytes")
        if entries:
            per_entry = size / entries
            print(f"\nstore: {entries:.0f} entries, {size:.0f} bytes (MEMORY USAGE of the "
                  f"shards, with their fixed overhead): {per_entry:.0f} bytes an entry; a "
                  f"1 GiB budget holds {(1 << 30) / per_entry:,.0f} at that size, "
                  f"{(1 << 30) // ENTRY_BYTES:,} by the budget's ENTRY_BYTES ({ENTRY_BYTES})")
            print(f"hits {metric(text, 'boxfish_exact_store_hits'):.0f}, misses "
                  f"{metric(text, 'boxfish_exact_store_misses'):.0f}, writes "
                  f"{metric(text, 'boxfish_exact_store_writes'):.0f}, evictions "
                  f"{metric(text, 'boxfish_exact_store_evictions'):.0f}")
    finally:
        stop_serve(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
