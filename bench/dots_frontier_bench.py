"""The exact frontier (issue 23): untimed solves of the issue's position sets with the compiled
core, each capped at ``--cap`` seconds, at each of ``--threads`` (a comma list).

Sets (``--sets``, a comma list): ``5x5-44`` (5x5, 44 undrawn lines), ``4x5-42`` and
``5x5-48``, ``--positions`` positions each, half from each generator of
:mod:`boxfish.engine.dots.positions` (safe play, and play biased 70-90% to safe moves), with
no box to take at the root, from ``--seed``. Every solve starts from an empty table of
``--table-gb`` GiB. A position that is not solved within the cap counts as the cap (its row
says so), so a median or maximum with a ``>`` is a lower bound.

    python bench/dots_frontier_bench.py --sets 5x5-44,4x5-42 --positions 8 --cap 60

``--compare loony_bound`` (or ``chain_graph``, or ``sized_proofs``: proofs stored with their
subtree's size class, so that a full table replaces the cheapest first; a small
``--table-gb`` puts the table under the pressure of a bigger solve) measures one of the
search's techniques instead:
every position is solved with it off (the baseline) and on, in the same run, on
``--threads``' first count (1 gives node counts that do not vary), and the nodes and times
(wall and CPU: the CPU time is the steadier on a shared host) are set side by side, with, per
set, the nodes by what settled them (the core's ``settled``) and, for ``chain_graph``, how
often the chain graph settled a node and how often its memo held the graph already, and the
table's hits per node and evictions.

    python bench/dots_frontier_bench.py --compare chain_graph --sets 4x5-40 --threads 1 \
        --positions 8 --cap 600 --cap-nodes 30000000 --table-gb 0.5
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
from boxfish.engine.dots.search import driver
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.node import CompiledSearcher, SearchSession

#: the techniques ``--compare`` can turn off: name -> the SearchSession attribute of its default
TECHNIQUES = {"loony_bound": "default_loony_bound", "chain_graph": "default_chain_graph",
              "sized_proofs": "default_sized_proofs"}
#: solve_counted's counters that are not what settled a node
NOT_SETTLED = ("calls", "hits", "solved", "table_hits", "evictions")

GiB = 1 << 30


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


class _Recorded(CompiledSearcher):
    """The driver's searcher, remembered (``last``) for its core's counters."""

    last = None

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        _Recorded.last = self


def solve(w: int, h: int, drawn: int, cap: float, threads: int, table_gb: float,
          cap_nodes: int | None = None):
    caches = DotsCaches(tables(w, h), table_bytes=int(table_gb * GiB))
    start = time.perf_counter()
    # an untimed solve (solve=True: straight to the end after two iterations), capped
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap * 1000), nodes=cap_nodes),
                         multipv=1, solve=True, start=start, caches=caches, core="c",
                         threads=threads)
    return a.exact, time.perf_counter() - start, a.nodes, a.value


def solve_counted(w: int, h: int, drawn: int, cap: float, threads: int, table_gb: float,
                  cap_nodes: int | None = None):
    """:func:`solve`, and the CPU seconds and the main thread's core counters: ``settled``
    and the chain graph's ``calls``, ``hits``, ``solved``."""
    driver.CompiledSearcher = _Recorded
    cpu = time.process_time()
    try:
        out = solve(w, h, drawn, cap, threads, table_gb, cap_nodes)
    finally:
        driver.CompiledSearcher = CompiledSearcher
    core = _Recorded.last.core
    counts = dict(core.settled, calls=core.graph_calls, hits=core.graph_hits,
                  solved=core.graph_solved, table_hits=core.tt_hits,
                  evictions=_Recorded.last.tt.evictions)
    return (*out, time.process_time() - cpu, counts)


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
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --compare: solve each position this many times each way and "
                         "keep the least times (the nodes are the same)")
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
                exact, secs, n, value = solve(w, h, drawn, args.cap, threads, args.table_gb,
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
    default = getattr(SearchSession, attr)
    threads = int(args.threads.split(",")[0])
    rows, tot = [], {False: [0.0, 0, 0.0], True: [0.0, 0, 0.0]}
    for name in args.sets.split(","):
        size, undrawn = name.split("-")
        w, h = (int(x) for x in size.split("x"))
        counts = {False: {}, True: {}}
        for i, drawn in enumerate(positions(w, h, int(undrawn), args.positions, args.seed)):
            got = {}
            for _ in range(args.repeat):
                for on in (False, True):
                    setattr(SearchSession, attr, on)
                    try:
                        r = solve_counted(w, h, drawn, args.cap, threads, args.table_gb,
                                          args.cap_nodes)
                    finally:
                        setattr(SearchSession, attr, default)
                    if on in got:  # the least wall and CPU times of the repeats
                        r = (*r[:1], min(r[1], got[on][1]), *r[2:4], min(r[4], got[on][4]),
                             r[5])
                    got[on] = r
            for on in (False, True):
                for k, v in got[on][5].items():
                    counts[on][k] = counts[on].get(k, 0) + v
            (ex0, s0, n0, v0, c0, _), (ex1, s1, n1, v1, c1, _) = got[False], got[True]
            if ex0 and ex1 and v0 != v1:
                raise SystemExit(f"{name} #{i}: the values differ ({v0} without, {v1} with)")
            for on in (False, True):
                tot[on][0] += got[on][1]
                tot[on][1] += got[on][2]
                tot[on][2] += got[on][4]
            rows.append([name, i, f"{v1:+d}" if ex1 else "unsolved",
                         f"{s0:.1f}" + ("" if ex0 else " (cap)"), f"{c0:.1f}", f"{n0:,}",
                         f"{s1:.1f}" + ("" if ex1 else " (cap)"), f"{c1:.1f}", f"{n1:,}",
                         f"{n1 / n0:.3f}", f"{c1 / c0:.3f}"])
            say(f"  {' '.join(str(x) for x in rows[-1])}")
        settled_table(name, args.compare, counts)
    say(f"\n{args.compare} off, then on; {threads} thread(s), cap {args.cap:.0f} s"
        f"{'' if args.cap_nodes is None else f' / {args.cap_nodes:,} nodes'}, "
        f"seed {args.seed}:")
    table(["set", "#", "value", "off s", "off cpu s", "off nodes", "on s", "on cpu s",
           "on nodes", "nodes on/off", "cpu on/off"], rows)
    (t0, n0, c0), (t1, n1, c1) = tot[False], tot[True]
    say(f"Total: off {t0:.1f} s ({c0:.1f} s CPU), {n0:,} nodes; on {t1:.1f} s ({c1:.1f} s "
        f"CPU), {n1:,} nodes; nodes x{n1 / n0:.3f}, time x{t1 / t0:.3f}, CPU x{c1 / c0:.3f}")
    return 0


def settled_table(name: str, what: str, counts: dict) -> None:
    """The nodes of a set by what settled them, off and on; the chain graph's rates."""
    keys = [k for k in counts[False] if k not in NOT_SETTLED]
    rows = [[k, f"{counts[False][k]:,}", f"{counts[True][k]:,}"] for k in keys]
    say(f"\n{name}: nodes by what settled them, {what} off and on")
    table(["settled by", "off", "on"], rows)
    off, on = counts[False], counts[True]
    nodes = {o: sum(counts[o][k] for k in keys) for o in (False, True)}
    say(f"{name}: table hits per node {off['table_hits'] / max(1, nodes[False]):.3f} off, "
        f"{on['table_hits'] / max(1, nodes[True]):.3f} on; evictions {off['evictions']:,} off, "
        f"{on['evictions']:,} on")
    leaves = sum(on[k] for k in keys) - on["node_children"]
    if on["calls"]:
        say(f"{name}: the chain graph settled {on['chain_graph']:,} nodes, "
            f"{on['chain_graph'] / max(1, leaves):.1%} of the leaves (nodes settled without "
            f"children), {on['chain_graph'] / max(1, leaves + on['node_children']):.1%} of "
            f"all; its memo held {on['hits'] / on['calls']:.1%} of their graphs; "
            f"{on['solved']:,} graphs solved\n")


if __name__ == "__main__":
    sys.exit(main())
