"""Nodes per second of this tree's compiled core against a git revision's, in one run.

Builds the compiled core of ``--baseline REV`` and this working tree's with the same gcc
command (``dots_timed_bench.load_baseline``), then runs the searches of
``dots_solve_bench.py``'s ``cores`` section (exact solves of 3x3, 2x5 and 3x4 from the empty
board; ``--positions`` searches of ``--nodes`` nodes of 5x5 positions with 40 undrawn lines)
on both cores alternately, ``--reps`` times each, with fresh caches every time. This tree
searches with the fill evaluation (the baseline's, where it has no other), so both must
report the same nodes, value, bound and best move (the run fails otherwise). Then, this
tree alone: the 5x5 searches with the learned evaluation against the fill one (other
searches: nodes/s, not the same nodes). Prints, per
search, each core's best time and nodes/s, and the ratio (this tree / baseline). Times are
the CPU time of the searching thread (one thread: the caller's), which a busy host disturbs
less than the wall time. On a busy host one search's ratio still varies by several percent
from run to run, the 3x4 solve's by up to 10% (each core's memory layout is its process's):
compare the totals of a few runs.

    python bench/dots_core_speed_bench.py                       # against main
    python bench/dots_core_speed_bench.py --baseline e2abb80 --reps 7
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder: the benches' own

from dots_solve_bench import MiB, core_searches, say, table
from dots_timed_bench import load_baseline


def run(driver, w, h, drawn, limit, solve, **more):
    """One search by ``driver``'s compiled core with fresh caches (a 256 MiB table, made before
    the clock starts): (Analysis, CPU seconds of this thread, which runs the search).
    ``more``: further arguments of ``analyse_position`` (``evaluation``: this tree's)."""
    caches = driver.DotsCaches(driver.tables(w, h), 16_000_000 + 3 * (1 << 16),
                               table_bytes=256 * MiB)
    caches.compiled_table()
    lim = driver.Limit(nodes=limit.nodes, time_ms=limit.time_ms)  # the driver's own class
    t0 = time.thread_time()
    a = driver.analyse_position(w, h, drawn, lim, multipv=1, solve=solve, caches=caches,
                                core="c", **more)
    return a, time.thread_time() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="main", metavar="REV")
    p.add_argument("--reps", type=int, default=7, help="runs of each search by each core")
    p.add_argument("--positions", type=int, default=4)
    p.add_argument("--nodes", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--cap", type=float, default=600.0, help="seconds for each solve")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="boxfish-core-speed-"))
    try:
        cores = {"baseline": load_baseline(args.baseline, tmp, "baseline_engine"),
                 "this tree": load_baseline(None, tmp, "tree_engine")}
        for d in cores.values():  # warm up: imports, board tables, the first allocation
            run(d, 3, 3, 0, d.Limit(nodes=2000), None)
        rows, totals = [], {name: [0, 0.0] for name in cores}
        for label, w, h, drawn, limit, solve in core_searches(args.seed, args.positions,
                                                              args.nodes, args.cap):
            best = {}
            for rep in range(args.reps):
                # alternate which core goes first, so neither always runs on a warmer machine
                for name in (list(cores) if rep % 2 == 0 else list(cores)[::-1]):
                    more = {"evaluation": "fill"} if name == "this tree" else {}
                    a, secs = run(cores[name], w, h, drawn, limit, solve, **more)
                    seen = (a.nodes, a.value, a.bound, a.best_move)
                    if name in best and best[name][0] != seen:
                        raise AssertionError(f"{name} changed its answer on {label}")
                    if name not in best or secs < best[name][1]:
                        best[name] = (seen, secs)
            (base, tb), (tree, tt) = best["baseline"], best["this tree"]
            if base != tree:
                raise AssertionError(f"the cores disagree on {label}: baseline {base}, "
                                     f"this tree {tree}")
            for name, (_, secs) in best.items():
                totals[name][0] += base[0]
                totals[name][1] += secs
            say(f"  {label:<36} nodes {base[0]:>10,}  baseline {tb:.3f}s  this tree {tt:.3f}s")
            rows.append((label, f"{base[1]:+d} {base[2]}", f"{base[0]:,}", f"{tb:.3f}",
                         f"{tt:.3f}", f"{base[0] / tb:,.0f}", f"{base[0] / tt:,.0f}",
                         f"{tb / tt:.3f}"))
        (n, tb), (_, tt) = totals["baseline"], totals["this tree"]
        rows.append(("**all**", "", f"{n:,}", f"{tb:.3f}", f"{tt:.3f}", f"{n / tb:,.0f}",
                     f"{n / tt:,.0f}", f"{tb / tt:.3f}"))
        say()
        say(f"## The compiled core: this tree against {args.baseline} (best of {args.reps} "
            "runs each, alternating)")
        table(("search", "value", "nodes", "baseline s", "this tree s", "baseline nodes/s",
               "this tree nodes/s", "ratio"), rows)
        tree, rows = cores["this tree"], []
        for label, w, h, drawn, limit, solve in core_searches(args.seed, args.positions,
                                                              args.nodes, args.cap):
            if (w, h) != (5, 5):
                continue
            rate = {}
            for e in ("fill", "learned"):
                secs = min(run(tree, w, h, drawn, limit, solve, evaluation=e)[1]
                           for _ in range(args.reps))
                rate[e] = limit.nodes / secs
            rows.append((label, f"{rate['fill']:,.0f}", f"{rate['learned']:,.0f}",
                         f"{rate['learned'] / rate['fill']:.3f}"))
        say()
        say("## This tree: the learned evaluation against the fill one (nodes/s)")
        table(("search", "fill nodes/s", "learned nodes/s", "ratio"), rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
