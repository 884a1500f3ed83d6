"""The feed of every game (docs/feed.md): what writing it costs the appends, and how fast it
reads.

* appends/s with the feed on against the same appends without it, in one run: the recorder's
  append script as it is, and the same script with its feed write taken out, alternating
  ``--rounds`` times on one redis-server (``appendonly no``, like the cluster's nodes) at
  ``--clients`` threads, each appending to its own games; medians and the ratio;
* the Redis server's CPU per append (its process only: load-independent), both ways;
* reading: entries/s of a reader paging through the whole feed (``Recorder.read_feed``), and
  the lag from an append to a reader following the feed (``Recorder.follow_feed``), p50/p99.

    python bench/feed_bench.py [--rounds 5] [--appends 4000] [--clients 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from service_bench import RedisServer, pct  # noqa: E402

from boxfish.service.store import redis_recorder  # noqa: E402
from boxfish.service.store.events import MoveEvent  # noqa: E402
from boxfish.service.store.feed import FEED_PARTITIONS, FeedPosition  # noqa: E402
from boxfish.service.store.game_meta import GameMeta  # noqa: E402
from boxfish.service.store.keys import KeySpace  # noqa: E402
from boxfish.service.store.redis_recorder import RedisRecorder  # noqa: E402

FEED_CALL = "feed_add(feed_key, game_id, 'move', event_json, new)"


class WithoutFeed(RedisRecorder):
    """The recorder with the move's feed write taken out of its append script (the baseline:
    what an append cost before the feed)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        assert FEED_CALL in redis_recorder.APPEND_LUA
        self._append = self.redis.register_script(
            redis_recorder.APPEND_LUA.replace(FEED_CALL, ""))


def _event(serial: int) -> MoveEvent:
    return MoveEvent(serial=serial, move=(serial % 40, serial // 40 % 40, serial % 2), player=0,
                     completed=0, scores=(0, 0), to_move=1, status="in_progress",
                     at=int(time.time() * 1000))


def appends(recorder: RedisRecorder, clients: int, total: int) -> tuple[float, list[float]]:
    """``total`` appends from ``clients`` threads, each to games of its own (a new game every
    200 moves); returns appends/s and the latencies in ms."""
    per = total // clients
    lat: list[list[float]] = [[] for _ in range(clients)]

    def run(i: int) -> None:
        serial, gid = 0, None
        for _ in range(per):
            if gid is None or serial == 200:
                gid, serial = uuid.uuid4().hex[:12], 0
                recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                              params={"width": 20, "height": 20},
                                              token_sha256="t", created_at=1))
            serial += 1
            t = time.perf_counter()
            recorder.append(gid, serial, _event(serial), idempotency_key=uuid.uuid4().hex,
                            fingerprint="f")
            lat[i].append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    flat = [x for xs in lat for x in xs]
    return len(flat) / took, flat


def read_rate(recorder: RedisRecorder) -> tuple[int, float]:
    """Entries read paging through the whole feed (pages of 1000), and entries/s."""
    n, start = 0, time.perf_counter()
    for p in range(FEED_PARTITIONS):
        after = None
        while True:
            page = recorder.read_feed(p, after, 1000)
            if not page:
                break
            n += len(page)
            after = page[-1].position
    return n, n / (time.perf_counter() - start)


def follow_lag(recorder: RedisRecorder, count: int) -> list[float]:
    """Milliseconds from an append's return to a follower's :meth:`follow_feed` returning it,
    for ``count`` appends a few ms apart."""
    heads = recorder.feed_heads()
    position = FeedPosition(tuple(sorted((p, s, h) for p, (s, h) in heads.items())))
    sent: dict[tuple[str, int], float] = {}
    lags: list[float] = []
    done = threading.Event()

    def follow() -> None:
        nonlocal position
        while not done.is_set() or len(lags) < count:
            for entry in recorder.follow_feed(position, 0.5):
                position = position.after(entry)
                if entry.kind == "move":
                    at = sent.get((entry.game_id, entry.event.serial))
                    if at is not None:
                        lags.append((time.perf_counter() - at) * 1000)
            if done.is_set() and len(lags) >= count:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    gid = uuid.uuid4().hex[:12]
    recorder.create_game(GameMeta(game_id=gid, game="dots-and-boxes",
                                  params={"width": 20, "height": 20}, token_sha256="t",
                                  created_at=1))
    for serial in range(1, count + 1):
        recorder.append(gid, serial, _event(serial))
        sent[(gid, serial)] = time.perf_counter()
        time.sleep(0.005)
    done.set()
    reader.join(30)
    return lags


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--appends", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--lag-appends", type=int, default=300)
    args = ap.parse_args()
    import redis

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(tmp)
        proc = psutil.Process(server.process.pid)
        client = redis.Redis.from_url(server.url, socket_timeout=10,
                                      max_connections=args.clients + 4)
        try:
            with_feed = RedisRecorder(client, KeySpace(f"on-{uuid.uuid4().hex[:6]}"))
            without = WithoutFeed(client, KeySpace(f"off-{uuid.uuid4().hex[:6]}"))
            appends(with_feed, args.clients, 400)  # warm up both scripts
            appends(without, args.clients, 400)
            rows: dict[str, list[tuple[float, float, float, float]]] = {"on": [], "off": []}
            for _ in range(args.rounds):
                for name, rec in (("on", with_feed), ("off", without)):
                    cpu = sum(proc.cpu_times()[:2])
                    rate, lat = appends(rec, args.clients, args.appends)
                    cpu = sum(proc.cpu_times()[:2]) - cpu
                    rows[name].append((rate, pct(lat, 50), pct(lat, 99),
                                       cpu / len(lat) * 1e6))
            print(f"\n### Appends with and without the feed: {args.rounds} alternating rounds "
                  f"of {args.appends} appends at {args.clients} threads, one redis-server\n")
            print("| feed | appends/s | p50 ms | p99 ms | Redis CPU us/append |")
            print("|---|---|---|---|---|")
            med = {}
            for name in ("off", "on"):
                med[name] = [statistics.median(r[i] for r in rows[name]) for i in range(4)]
                a, b, c, d = med[name]
                print(f"| {name} | {a:.0f} | {b:.2f} | {c:.2f} | {d:.1f} |")
            per_round = ", ".join(f"{on[0] / off[0]:.3f}"
                                  for on, off in zip(rows["on"], rows["off"], strict=True))
            print(f"\nappends/s, feed on / off: **{med['on'][0] / med['off'][0]:.3f}x** "
                  f"(per round: {per_round}); Redis CPU per append on / off: "
                  f"{med['on'][3] / med['off'][3]:.2f}x")
            n, rate = read_rate(with_feed)
            print(f"\nreading the whole feed ({n} entries, pages of 1000): {rate:.0f} entries/s")
            lags = follow_lag(with_feed, args.lag_appends)
            print(f"append to follower ({len(lags)} appends, follow_feed polling): p50 "
                  f"{pct(lags, 50):.1f} ms, p99 {pct(lags, 99):.1f} ms, max {max(lags):.1f} ms")
        finally:
            client.close()
            server.stop()


if __name__ == "__main__":
    main()
