"""Exact solves of the compiled core on one thread and on several (issue 23, item 2).

Sections (``--skip`` takes a comma list of their names; both run by default):

* ``4x4``: the exact solve of 4x4 from the empty board (40 lines, value 0) with a table of
  ``--table-gb`` GiB, capped by ``--cap`` seconds, on each thread count of ``--threads``:
  seconds and nodes, and the speed-up over the first count.
* ``5x5``: ``--positions`` 5x5 positions with 40-44 undrawn lines (``--undrawn``), from
  :mod:`boxfish.engine.dots.positions` with fixed seeds (half ``safe_play``, half
  ``biased_play``), each solved from a fresh ``--table-mb`` MiB table on each thread count:
  the median and largest time, the nodes, and the speed-up (total time of the first count
  over each other's, and the median of the positions' own speed-ups). The values must agree
  (the run fails otherwise).

A solve is ``analyse_position(..., solve=True, multipv=1, threads=n)``, as the engine runs
``analyse(time_ms=None, multipv=1)``. Besides the wall time, each line shows the process's
CPU time and the calling thread's (the main search thread's): on a host where other work
takes cores, the wall time of several threads says little, and the main thread's CPU time
(it searches for the whole solve) is what the wall time would be with a core per thread. The
load average before and after is printed for the same reason. No time is asserted: the
script only prints figures.

    python bench/dots_threads_bench.py                       # both sections, 1 and 2 threads
    python bench/dots_threads_bench.py --skip 4x4 --positions 4
    python bench/dots_threads_bench.py --skip 5x5 --cap 900 --threads 1,2
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

from boxfish.engine.analysis import Limit, usable_cores
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_solve_bench import say, table  # this folder: the script's own

MiB = 1 << 20
GiB = 1 << 30
SECTIONS = ("4x4", "5x5")


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "?"


def solve(w: int, h: int, drawn: int, threads: int, table_bytes: int, cap_s: float):
    """One exact solve from a fresh table: (Analysis, wall s, process CPU s, main thread CPU
    s)."""
    caches = DotsCaches(tables(w, h), table_bytes=table_bytes)
    t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap_s * 1000)), multipv=1,
                         solve=True, caches=caches, core="c", threads=threads)
    out = (a, time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0)
    caches.clear()  # gives the table's memory back
    return out


def positions(n: int, undrawn: tuple[int, ...], seed: int) -> list[int]:
    """5x5 positions without a box to take, half from each generator."""
    rng = random.Random(seed)
    t = tables(5, 5)
    out: list[int] = []
    while len(out) < n:
        u = undrawn[len(out) % len(undrawn)]
        p = (safe_play(rng, 5, 5, u) if len(out) % 2 == 0
             else biased_play(rng, 5, 5, u, rng.uniform(0.7, 0.9)))
        if 3 not in t.valences(p.drawn):
            out.append(p.drawn)
    return out


def bench_4x4(counts: list[int], cap: float, table_bytes: int) -> None:
    say(f"## 4x4 from the empty board (table {table_bytes / GiB:g} GiB, cap {cap:.0f}s)")
    rows, base = [], None
    for n in counts:
        a, secs, cpu, main = solve(4, 4, 0, n, table_bytes, cap)
        say(f"  {n} thread(s): value {a.value:+d} exact {a.exact}  {secs:.1f}s  "
            f"cpu {cpu:.1f}s (main thread {main:.1f}s)  {a.nodes:,} nodes  load {load()}")
        status = f"{a.value:+d} exact" if a.exact else f"not solved in {cap:.0f}s"
        if base is None:
            base = (secs, main, a.exact)
        speed = (f"{base[0] / secs:.2f}x" if a.exact and base[2] else "-")
        speed_cpu = (f"{base[1] / main:.2f}x" if a.exact and base[2] else "-")
        rows.append((n, status, f"{secs:.1f}", f"{cpu:.1f}", f"{main:.1f}", f"{a.nodes:,}",
                     speed, speed_cpu))
    say()
    table(("threads", "result", "wall s", "CPU s", "main thread CPU s", "nodes",
           "speed-up (wall)", "speed-up (main thread CPU)"), rows)


def bench_5x5(counts: list[int], n: int, undrawn: tuple[int, ...], seed: int, cap: float,
              table_bytes: int) -> bool:
    say(f"## 5x5 positions of {'/'.join(map(str, undrawn))} undrawn lines ({n} positions, "
        f"seed {seed}, a fresh {table_bytes // MiB} MiB table each, cap {cap:.0f}s)")
    ok = True
    runs: dict[int, list[tuple[float, float, int, bool]]] = {c: [] for c in counts}
    for i, drawn in enumerate(positions(n, undrawn, seed)):
        free = (tables(5, 5).full & ~drawn).bit_count()
        values = set()
        parts = []
        for c in counts:
            a, secs, _cpu, main = solve(5, 5, drawn, c, table_bytes, cap)
            runs[c].append((secs, main, a.nodes, a.exact))
            if a.exact:
                values.add(a.value)
            parts.append(f"{c}t {secs:6.2f}s (main {main:6.2f}s) {a.nodes:>12,}"
                         f"{'' if a.exact else ' UNSOLVED'}")
        if len(values) > 1:
            ok = False
        say(f"  #{i + 1:<2} {free} undrawn {drawn:#x}: value "
            f"{'/'.join(f'{v:+d}' for v in sorted(values)) or '?'}  " + " | ".join(parts))
    say(f"  load {load()}")
    say()
    base = runs[counts[0]]
    rows = []
    for c in counts:
        r = runs[c]
        secs = [x[0] for x in r]
        mains = [x[1] for x in r]
        ratios = [b[0] / x[0] for b, x in zip(base, r, strict=True) if x[0] > 0]
        cpu_ratios = [b[1] / x[1] for b, x in zip(base, r, strict=True) if x[1] > 0]
        rows.append((c, f"{sum(x[3] for x in r)}/{len(r)}", f"{statistics.median(secs):.2f}",
                     f"{max(secs):.2f}", f"{sum(secs):.1f}",
                     f"{statistics.median(mains):.2f}", f"{sum(x[2] for x in r):,}",
                     f"{sum(x[0] for x in base) / sum(secs):.2f}x",
                     f"{statistics.median(ratios):.2f}x",
                     f"{sum(x[1] for x in base) / sum(mains):.2f}x",
                     f"{statistics.median(cpu_ratios):.2f}x"))
    table(("threads", "solved", "median s", "max s", "total s", "median main-thread CPU s",
           "nodes", "speed-up (total wall)", "median speed-up (wall)",
           "speed-up (total main CPU)", "median speed-up (main CPU)"), rows)
    if not ok:
        say("!! the thread counts disagree on a value")
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--skip", default="", help=f"sections to skip, of {', '.join(SECTIONS)}")
    p.add_argument("--threads", default="1,2",
                   help="thread counts, the first the base of the speed-ups (default 1,2)")
    p.add_argument("--cap", type=float, default=900.0, help="seconds per 4x4 solve")
    p.add_argument("--table-gb", type=float, default=8.0, help="GiB of the 4x4 table")
    p.add_argument("--positions", type=int, default=10)
    p.add_argument("--undrawn", default="40,42,44")
    p.add_argument("--seed", type=int, default=23)
    p.add_argument("--position-cap", type=float, default=300.0,
                   help="seconds per 5x5 solve")
    p.add_argument("--table-mb", type=int, default=512, help="MiB of each 5x5 table")
    args = p.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    bad = skip - set(SECTIONS)
    if bad:
        p.error(f"unknown sections: {sorted(bad)}")
    counts = [int(x) for x in args.threads.split(",")]
    say(f"# Threads: {usable_cores()} usable cores, load {load()}, thread counts {counts}")
    say()
    ok = True
    t0 = time.perf_counter()
    if "4x4" not in skip:
        bench_4x4(counts, args.cap, int(args.table_gb * GiB))
    if "5x5" not in skip:
        ok = bench_5x5(counts, args.positions, tuple(int(x) for x in args.undrawn.split(",")),
                       args.seed, args.position_cap, args.table_mb * MiB)
    say(f"(all done in {time.perf_counter() - t0:.0f}s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
