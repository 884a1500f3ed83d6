"""How late timed Dots-and-Boxes analyses return (issue 38): the overrun of ``time_ms``.

``--calls`` timed calls per cell of (time limit) x (load): at each of ``--times`` (default
200 and 1000 ms), alone and beside a competing CPU load (one busy process per core, started
by this script). Each call is ``analyse_position`` on one thread, a fresh table, on a 5x5
position from both generators (:mod:`boxfish.engine.dots.positions`, alternately
``safe_play`` and ``biased_play``) with ``--undrawn`` lines left (default 20-58), seeded by
``--seed``; the wall time around the call is what a bot on a clock sees. Per cell and engine
it prints the overrun (wall time minus ``time_ms``) at the median, the 99th percentile and
the worst, how many calls broke the goal bound, ``time_ms`` + max(10%, 20 ms), and how many
answers listed a move valued above their best move (one answer, one scale: none should).

``--baseline REV`` also runs the engine at git revision REV (built as in
``dots_timed_bench.py``), call for call on the same positions, interleaved, so both see the
same load. No time is asserted: the script only prints figures.

    python bench/dots_deadline_bench.py --calls 250 --baseline HEAD
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dots_solve_bench import say
from dots_timed_bench import Engine, current_search, load_baseline

from boxfish.engine.dots.positions import biased_play, safe_play

W = H = 5


def positions(n: int, seed: int, lo: int, hi: int) -> list[int]:
    """``n`` 5x5 positions (drawn masks) of ``lo`` to ``hi`` undrawn lines, even ones from
    safe_play, odd ones from biased_play."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        undrawn = rng.randint(lo, hi)
        p = (safe_play(rng, W, H, undrawn) if i % 2 == 0
             else biased_play(rng, W, H, undrawn, rng.uniform(0.6, 0.95)))
        out.append(p.drawn)
    return out


def _spin() -> None:  # pragma: no cover - runs in a child process until terminated
    while True:
        pass


def goal(time_ms: int) -> float:
    """The largest overrun the issue allows at ``time_ms``: max(10%, 20 ms)."""
    return max(0.1 * time_ms, 20.0)


def run_cell(engines, drawn_list, time_ms: int) -> dict[str, tuple[list[float], int]]:
    """By engine: the overrun (ms) of every call, and how many answers listed a move valued
    above their best move."""
    over: dict[str, tuple[list[float], int]] = {e.name: ([], 0) for e in engines}
    for drawn in drawn_list:
        for e in engines:
            t0 = time.perf_counter()
            a = e.search.analyse_position(W, H, drawn, e.search.Limit(time_ms=time_ms),
                                          threads=1)
            late = (time.perf_counter() - t0) * 1000 - time_ms
            above = any(m.value > a.moves[0].value for m in a.moves)
            over[e.name][0].append(late)
            over[e.name] = (over[e.name][0], over[e.name][1] + above)
    return over


def summary(name: str, time_ms: int, load: str, over: list[float], above: int) -> str:
    over = sorted(over)
    p99 = over[min(len(over) - 1, int(0.99 * len(over)))]
    bad = sum(1 for o in over if o > goal(time_ms))
    return (f"| {name} | {time_ms} | {load} | {len(over)} | {statistics.median(over):+.1f} | "
            f"{p99:+.1f} | {over[-1]:+.1f} ({100 * over[-1] / time_ms:+.0f}%) | {bad} | "
            f"{above} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=250, help="calls per time limit and load")
    p.add_argument("--times", default="200,1000", help="time limits in ms, comma-separated")
    p.add_argument("--seed", type=int, default=3801)
    p.add_argument("--undrawn", default="20-58", help="undrawn lines of the positions, LO-HI")
    p.add_argument("--no-load", action="store_true", help="only the cells without a load")
    p.add_argument("--baseline", default=None, metavar="REV")
    args = p.parse_args(argv)
    engines = [Engine("current", current_search)]
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="boxfish-baseline-"))
        engines.append(Engine(f"baseline {args.baseline}", load_baseline(args.baseline, tmp)))
    times = [int(x) for x in args.times.split(",")]
    lo, hi = (int(x) for x in args.undrawn.split("-"))
    drawn_list = positions(args.calls, args.seed, lo, hi)
    for e in engines:  # the first call of a process also builds the board's tables
        e.search.analyse_position(W, H, drawn_list[0], e.search.Limit(time_ms=50), threads=1)
    rows = []
    loads = ["none"] + ([] if args.no_load else [f"{multiprocessing.cpu_count()} busy processes"])
    for load in loads:
        spinners = []
        if load != "none":
            spinners = [multiprocessing.Process(target=_spin, daemon=True)
                        for _ in range(multiprocessing.cpu_count())]
            for s in spinners:
                s.start()
        try:
            for time_ms in times:
                t0 = time.perf_counter()
                over = run_cell(engines, drawn_list, time_ms)
                for e in engines:
                    rows.append(summary(e.name, time_ms, load, *over[e.name]))
                    say(rows[-1])
                say(f"  ({time.perf_counter() - t0:.0f} s)")
        finally:
            for s in spinners:
                s.terminate()
    say("\n| engine | time_ms | competing load | calls | overrun p50 (ms) | p99 | max | "
        "over max(10%, 20 ms) | a move above the best |")
    say("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        say(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
