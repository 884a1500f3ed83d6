"""Exact-solve speed of the Dots-and-Boxes search (issue 3).

1. Empty boards 3x3, 2x5, 3x4, 4x4 (each capped by --cap seconds; 4x4 reports how far it got):
   our search (``analyse`` with no time limit, multipv=1) against a plain negamax written here
   (alpha-beta, TT keyed by the lines, captures first, no other knowledge), with the speed-up.
2. OpenSpiel's Python ``alpha_beta_search`` on 2x2 (it solves win/draw/loss, not the margin).
3. 5x5 positions with 24 undrawn lines (reached by random play that avoids handing boxes
   over): exact solve time, median and worst.

    python bench/dots_solve_bench.py                      # everything, 600 s cap
    python bench/dots_solve_bench.py --boards 3x3,3x4 --cap 60 --positions 20
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.search import analyse_position
from boxfish.engine.dots.search_board import tables
from boxfish.engine.dots.search_tt import TranspositionTable

INF = 1 << 20


class Timeout(Exception):
    pass


def plain_solve(w: int, h: int, drawn: int, cap_s: float):
    """Baseline: negamax alpha-beta, TT (exact/lower/upper) keyed by the drawn lines,
    captures first; nothing else. Returns (value or None on timeout, nodes)."""
    t = tables(w, h)
    tt: dict[int, tuple[int, int]] = {}
    nodes = 0
    deadline = time.perf_counter() + cap_s
    box_mask = t.box_mask
    line_boxes = t.line_boxes

    def search(d: int, alpha: int, beta: int) -> int:
        nonlocal nodes
        nodes += 1
        if not nodes & 1023 and time.perf_counter() > deadline:
            raise Timeout
        if d == t.full:
            return 0
        e = tt.get(d)
        if e is not None:
            lo, hi = e
            if lo >= beta or lo == hi:
                return lo
            if hi <= alpha:
                return hi
        vals = [(d & m).bit_count() for m in box_mask]
        free = bits(t.full & ~d)
        caps = []
        rest = []
        for ln in free:
            c = 0
            for b in line_boxes[ln]:
                if vals[b] == 3:
                    c += 1
            (caps if c else rest).append((ln, c))
        a0 = alpha
        best = -INF
        for ln, c in caps + rest:
            if c:
                v = c + search(d | 1 << ln, alpha - c, beta - c)
            else:
                v = -search(d | 1 << ln, -beta, -alpha)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if v >= beta:
                        break
        if best <= a0:
            tt[d] = (-INF, best)
        elif best >= beta:
            tt[d] = (best, INF)
        else:
            tt[d] = (best, best)
        return best

    sys.setrecursionlimit(10000)
    try:
        return search(drawn, -INF, INF), nodes
    except Timeout:
        return None, nodes


# transposition-table entries of our solves (None: the engine's default, 2M)
TT_ENTRIES = None
# solves of each empty board: the figures are the fastest and the median (a shared host's
# timings vary by 10% and more from run to run; the node counts do not)
REPEAT = 1


def ours(w, h, drawn, cap_s, progress=False):
    t0 = time.perf_counter()

    def show(p):
        if progress:
            print(f"    depth {p.depth:>2}  best {p.best_move}  value {p.value:+d}"
                  f"{'' if p.exact else ' (estimate)'}  nodes {p.nodes}  "
                  f"{p.time_ms / 1000:.1f}s", flush=True)
    tt = TranspositionTable(TT_ENTRIES) if TT_ENTRIES else None
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap_s * 1000)), multipv=1,
                         on_progress=show, solve=True, tt=tt)
    return a, time.perf_counter() - t0


def bench_empty(boards, cap, plain_cap=None):
    print("## Exact solve from the empty board (ours vs plain negamax + TT + captures first)")
    rows = []
    for w, h in boards:
        print(f"# {w}x{h} ...", flush=True)
        a, secs = ours(w, h, 0, cap, progress=True)
        times = [secs]
        for _ in range(REPEAT - 1):
            # the same solve again from scratch: each analysis makes its own caches (table,
            # evaluation and chain DP memos)
            times.append(ours(w, h, 0, cap)[1])
        if REPEAT > 1:
            secs = min(times)
            print(f"  ours : {REPEAT} solves: fastest {secs:.2f}s, median "
                  f"{statistics.median(times):.2f}s, slowest {max(times):.2f}s", flush=True)
        exact = sum(1 for m in a.moves if m.exact)
        upper = sum(1 for m in a.moves if not m.exact and m.bound == "upper")
        lower = [m for m in a.moves if not m.exact and m.bound == "lower"]
        status = f"{a.value:+d} exact" if a.exact else f"not solved in {cap:.0f}s " \
            f"(depth {a.depth}, best {a.best_move}, {a.value:+d} ({a.bound}); root moves: " \
            f"{exact} exact, {upper} with a proven upper bound" + \
            "".join(f", {m.move} proven >= {m.value:+d}" for m in lower) + \
            f", of {len(a.moves)})"
        print(f"  ours : {status}  {secs:.2f}s  nodes {a.nodes}  nps {a.nps}", flush=True)
        t0 = time.perf_counter()
        pcap = cap if plain_cap is None else plain_cap
        pv, pn = plain_solve(w, h, 0, pcap)
        psecs = time.perf_counter() - t0
        pstat = f"{pv:+d} exact" if pv is not None else f"not solved in {pcap:.0f}s"
        print(f"  plain: {pstat}  {psecs:.2f}s  nodes {pn}", flush=True)
        if a.exact and pv is not None:
            assert a.value == pv, (w, h, a.value, pv)
            ratio = f"{psecs / secs:.1f}x"
        elif a.exact:
            ratio = f">{psecs / secs:.1f}x"
        else:
            ratio = "n/a"
        rows.append((f"{w}x{h}", status, f"{secs:.2f}", a.nodes, pstat, f"{psecs:.2f}", pn,
                     ratio))
    print()
    head = "ours s" if REPEAT == 1 else f"ours s (fastest of {REPEAT})"
    print(f"| board | ours | {head} | ours nodes | plain | plain s | plain nodes | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(flush=True)


def bench_openspiel():
    print("## OpenSpiel alpha_beta_search on 2x2")
    try:
        import pyspiel
        from open_spiel.python.algorithms import minimax
    except ImportError as exc:  # pragma: no cover
        print(f"  open_spiel not available: {exc}")
        return
    game = pyspiel.load_game("dots_and_boxes(num_rows=2,num_cols=2)")
    t0 = time.perf_counter()
    value, action = minimax.alpha_beta_search(game, maximizing_player_id=0)
    os_secs = time.perf_counter() - t0
    a, secs = ours(2, 2, 0, 60)
    print(f"  openspiel: value {value:+.0f} (win/draw/loss for player 0), action {action}, "
          f"{os_secs:.2f}s")
    print(f"  ours     : margin {a.value:+d} exact={a.exact}, best {a.best_move}, {secs:.3f}s "
          f"-> {os_secs / secs:.0f}x faster", flush=True)
    print()


def random_position(rng, w, h, undrawn):
    """Random play that takes boxes offered and avoids handing boxes over while it can."""
    t = tables(w, h)
    for _ in range(1000):
        d = 0
        while (t.full & ~d).bit_count() > undrawn:
            vals = t.valences(d)
            free = bits(t.full & ~d)
            caps = [ln for ln in free if any(vals[b] == 3 for b in t.line_boxes[ln])]
            if caps:
                d |= 1 << rng.choice(caps)
                continue
            safe = [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]
            d |= 1 << rng.choice(safe or free)
        vals = t.valences(d)
        if 3 not in vals:
            return d
    raise RuntimeError("no position found")


def bench_positions(n, undrawn, cap, seed):
    print(f"## Exact solve of 5x5 positions with {undrawn} undrawn lines ({n} positions)")
    rng = random.Random(seed)
    times = []
    unsolved = 0
    for i in range(n):
        d = random_position(rng, 5, 5, undrawn)
        a, secs = ours(5, 5, d, cap)
        if not a.exact:
            unsolved += 1
        times.append(secs)
        print(f"  #{i + 1:>2}  value {a.value:+d}  exact={a.exact}  {secs:.3f}s  "
              f"nodes {a.nodes}", flush=True)
    print(f"  median {statistics.median(times):.3f}s  mean {statistics.mean(times):.3f}s  "
          f"max {max(times):.3f}s  unsolved within {cap}s: {unsolved}", flush=True)
    print()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--boards", default="3x3,2x5,3x4,4x4")
    p.add_argument("--cap", type=float, default=600.0, help="seconds per solve")
    p.add_argument("--plain-cap", type=float, default=None,
                   help="seconds per solve of the plain baseline (default: --cap)")
    p.add_argument("--positions", type=int, default=20)
    p.add_argument("--undrawn", type=int, default=24)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--skip", default="", help="comma list of: empty,openspiel,positions")
    p.add_argument("--repeat", type=int, default=1,
                   help="solves of each empty board by ours; the table shows the fastest")
    p.add_argument("--tt", type=int, default=None,
                   help="transposition-table entries of our solves (default: the engine's "
                        "2,000,000; about 200 bytes each)")
    args = p.parse_args(argv)
    global TT_ENTRIES, REPEAT
    TT_ENTRIES = args.tt
    REPEAT = max(1, args.repeat)
    skip = set(filter(None, args.skip.split(",")))
    boards = [tuple(int(v) for v in b.split("x")) for b in args.boards.split(",") if b]
    if "openspiel" not in skip:
        bench_openspiel()
    if "positions" not in skip:
        bench_positions(args.positions, args.undrawn, min(args.cap, 60.0), args.seed)
    if "empty" not in skip:
        bench_empty(boards, args.cap, args.plain_cap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
