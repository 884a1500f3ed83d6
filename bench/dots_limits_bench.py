"""How far past its time limit a Dots-and-Boxes analysis returns on boards of any size (the
figures that tests/engine/dots/test_search_limits.py bounds only loosely, so that a loaded
machine cannot fail it; ``dots_deadline_bench.py`` measures 5x5 under load, against a
baseline).

For each board of ``--boards`` (the empty board, and one after ``--plies`` random moves
seeded by ``--seed``) and each limit of ``--times`` (ms), ``--repeats`` calls of
``analyse(state, time_ms=T)`` (one thread: ``threads=1``); per case the worst and the median
wall-time overrun (wall time around the call minus T), and the CPU time of the thread. On an
idle machine the CPU time is the wall time; on a loaded one the wall time stretches and the
CPU time does not. No time is asserted: the script only prints figures.

    python bench/dots_limits_bench.py
    python bench/dots_limits_bench.py --boards 10x10,20x20 --times 50,200,1000 --repeats 10
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from boxfish.engine import analyse, load_game


def state_of(w: int, h: int, plies: int, seed: int):
    st = load_game("dots-and-boxes", width=w, height=h).new_state()
    rng = random.Random(seed)
    for _ in range(plies):
        st.play(rng.choice(st.legal_moves()))
    return st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", default="5x5,10x10,20x20")
    ap.add_argument("--times", default="50,200,1000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--plies", type=int, default=0,
                    help="random moves before the second position (default: a quarter of "
                         "the lines)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    boards = [tuple(int(x) for x in b.split("x")) for b in args.boards.split(",")]
    times = [int(t) for t in args.times.split(",")]
    print(f"{'board':>14} {'limit':>6} {'core':>6}  {'overrun max':>11} {'median':>8}  "
          f"{'CPU max':>8} {'median':>8}  (ms)")
    for w, h in boards:
        lines = (h + 1) * w + h * (w + 1)
        plies = args.plies or lines // 4
        for label, st in (("empty", state_of(w, h, 0, args.seed)),
                          (f"+{plies}", state_of(w, h, plies, args.seed))):
            for t in times:
                over, cpus, core = [], [], "?"
                for _ in range(args.repeats):
                    w0, c0 = time.perf_counter(), time.thread_time()
                    a = analyse(st, time_ms=t, threads=1)
                    cpus.append((time.thread_time() - c0) * 1000)
                    over.append((time.perf_counter() - w0) * 1000 - t)
                    core = a.core
                print(f"{f'{w}x{h} {label}':>14} {t:>6} {core:>6}  {max(over):>11.1f} "
                      f"{statistics.median(over):>8.1f}  {max(cpus):>8.1f} "
                      f"{statistics.median(cpus):>8.1f}", flush=True)


if __name__ == "__main__":
    main()
