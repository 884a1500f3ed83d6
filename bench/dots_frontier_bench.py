"""The exact frontier (issue 23): untimed solves of the issue's position sets with the compiled
core, each capped at ``--cap`` seconds, at each of ``--threads`` (a comma list).

Sets (``--sets``, a comma list): ``5x5-44`` (5x5, 44 undrawn lines), ``4x5-42`` and
``5x5-48``, ``--positions`` positions each, half from each generator of
:mod:`boxfish.engine.dots.positions` (safe play, and play biased 70-90% to safe moves), with
no box to take at the root, from ``--seed``. Every solve starts from an empty table of
``--table-gb`` GiB. A position that is not solved within the cap counts as the cap (its row
says so), so a median or maximum with a ``>`` is a lower bound.

    python bench/dots_frontier_bench.py --sets 5x5-44,4x5-42 --positions 8 --cap 60

``--compare NAME`` measures one of the search's techniques instead (``loony_bound``, the
pruning of loony sacrifices; ``sized_proofs``, proofs stored with their subtree's size class
so that a full table replaces the cheapest first): every position is solved with it off (the
baseline) and on, in the same run, on ``--threads``' first count (1 gives node counts that do
not vary), and the nodes, times, table hit rates (hits per node) and evictions are set side
by side. A small ``--table-gb`` puts the table under the pressure of a bigger solve.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_solve_bench import say, table

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search import compiled
from boxfish.engine.dots.search.node import SearchSession
from boxfish.engine.dots.search.phases import PHASES

#: the techniques ``--compare`` can turn off: name -> the SearchSession attribute of its default
TECHNIQUES = {"loony_bound": "default_loony_bound", "sized_proofs": "default_sized_proofs"}

GiB = 1 << 30

#: the compiled cores made since the last solve() began (to read their phases' counts)
_cores: list = []
_make_core = compiled.core


def _recording_core(*args, **kw):
    core = _make_core(*args, **kw)
    _cores.append(core)
    return core


compiled.core = _recording_core


def positions(w: int, h: int, undrawn: int, n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    t = tables(w, h)
    out: list[int] = []
    while len(out) < n:
        p = (safe_play(rng, w, h, undrawn) if len(out) % 2 == 0
             else biased_play(rng, w, h, undrawn, rng.uniform(0.7, 0.9)))
        if 3 not in t.valences(p.drawn):
            out.append(p.drawn)
    return out


def solve(w: int, h: int, drawn: int, cap: float, threads: int, table_gb: float,
          cap_nodes: int | None = None):
    caches = DotsCaches(tables(w, h), table_bytes=int(table_gb * GiB))
    _cores.clear()
    start = time.perf_counter()
    # an untimed solve (solve=True: straight to the end after two iterations), capped
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap * 1000), nodes=cap_nodes),
                         multipv=1, solve=True, start=start, caches=caches, core="c",
                         threads=threads)
    settled = [sum(c.settled[p] for c in _cores) for p in range(len(PHASES))]
    return (a.exact, time.perf_counter() - start, a.nodes, a.value, a.tt_hits,
            caches.compiled_table().evictions, settled)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="5x5-44,4x5-42")
    ap.add_argument("--positions", type=int, default=8)
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--table-gb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=2023)
    ap.add_argument("--cap-nodes", type=int, default=None,
                    help="a node cap as well (the same on a busy host, unlike the time)")
    ap.add_argument("--compare", choices=sorted(TECHNIQUES),
                    help="solve every position without this technique and with it")
    args = ap.parse_args()
    if args.compare:
        return compare(args)
    summary = []
    for name in args.sets.split(","):
        size, undrawn = name.split("-")
        w, h = (int(x) for x in size.split("x"))
        pos = positions(w, h, int(undrawn), args.positions, args.seed)
        for threads in (int(x) for x in args.threads.split(",")):
            rows, times, nodes = [], [], []
            for i, drawn in enumerate(pos):
                exact, secs, n, value, _, _, _ = solve(w, h, drawn, args.cap, threads, args.table_gb,
                                             args.cap_nodes)
                times.append(secs if exact else float("inf"))
                nodes.append(n)
                rows.append([i, "safe" if i % 2 == 0 else "biased",
                             f"{value:+d}" if exact else "unsolved",
                             f"{secs:.1f}" if exact else f"> {args.cap:.0f}", f"{n:,}"])
                say(f"  {name} threads {threads} #{i}: {rows[-1][2]} {rows[-1][3]} s "
                    f"{n:,} nodes")
            say(f"\n{name}, {threads} thread(s), cap {args.cap:.0f} s:")
            table(["#", "generator", "value", "s", "nodes"], rows)
            med = statistics.median(times)
            summary.append([name, threads, f"{sum(t < float('inf') for t in times)}/{len(pos)}",
                            f"{med:.1f}" if med < float("inf") else f"> {args.cap:.0f}",
                            f"{max(times):.1f}" if max(times) < float("inf")
                            else f"> {args.cap:.0f}",
                            f"{statistics.median(nodes):,.0f}"])
    say("Summary:")
    table(["set", "threads", "solved", "median s", "max s", "median nodes"], summary)
    return 0


def compare(args) -> int:
    attr = TECHNIQUES[args.compare]
    threads = int(args.threads.split(",")[0])
    rows, tot = [], {False: [0.0, 0], True: [0.0, 0]}
    phases = {False: [0] * len(PHASES), True: [0] * len(PHASES)}
    for name in args.sets.split(","):
        size, undrawn = name.split("-")
        w, h = (int(x) for x in size.split("x"))
        for i, drawn in enumerate(positions(w, h, int(undrawn), args.positions, args.seed)):
            got = {}
            for on in (False, True):
                setattr(SearchSession, attr, on)
                try:
                    got[on] = solve(w, h, drawn, args.cap, threads, args.table_gb,
                                    args.cap_nodes)
                finally:
                    setattr(SearchSession, attr, True)
            (ex0, s0, n0, v0, h0, e0, p0), (ex1, s1, n1, v1, h1, e1, p1) = (got[False],
                                                                            got[True])
            for p in range(len(PHASES)):
                phases[False][p] += p0[p]
                phases[True][p] += p1[p]
            if ex0 and ex1 and v0 != v1:
                raise SystemExit(f"{name} #{i}: the values differ ({v0} without, {v1} with)")
            for on in (False, True):
                tot[on][0] += got[on][1]
                tot[on][1] += got[on][2]
            rows.append([name, i, f"{v1:+d}" if ex1 else "unsolved",
                         f"{s0:.1f}" + ("" if ex0 else " (cap)"), f"{n0:,}",
                         f"{s1:.1f}" + ("" if ex1 else " (cap)"), f"{n1:,}", f"{n1 / n0:.3f}",
                         f"{h0 / n0:.3f}", f"{h1 / n1:.3f}", f"{e0:,}", f"{e1:,}"])
            say(f"  {' '.join(str(x) for x in rows[-1])}")
    say(f"\n{args.compare} off, then on; {threads} thread(s), cap {args.cap:.0f} s, "
        f"seed {args.seed}:")
    table(["set", "#", "value", "off s", "off nodes", "on s", "on nodes", "nodes on/off",
           "off hits/node", "on hits/node", "off evictions", "on evictions"], rows)
    say("Nodes settled by each phase (node_store: searched to the end), all positions:")
    table(["phase", "off", "on", "on/off"],
          [[name, f"{phases[False][p]:,}", f"{phases[True][p]:,}",
            f"{phases[True][p] / phases[False][p]:.3f}" if phases[False][p] else "-"]
           for p, name in enumerate(PHASES)])
    (t0, n0), (t1, n1) = tot[False], tot[True]
    say(f"Total: off {t0:.1f} s, {n0:,} nodes; on {t1:.1f} s, {n1:,} nodes; "
        f"nodes x{n1 / n0:.3f}, time x{t1 / t0:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
