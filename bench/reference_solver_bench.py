"""The reference solver's speed (tests/engine/dots/reference), and the exact values it gives
the recorded positions of tests/engine/dots/test_search_regression.py.

Speed: 5x5 positions from ``safe_play`` (``--undrawn`` lines left, ``--per-count`` each,
seeded by ``--seed``), each solved ``--repeats`` times from an empty table; per position the
value, the nodes, and the least wall and CPU (thread) time over the repeats. ``--baseline REV``
solves the same positions with the reference solver as it was at git revision REV (``git
archive REV tests/engine/dots/reference``, imported as ``baseline_reference``, built with gcc
as the reference builds itself), interleaved with the current one, and prints both side by
side: the nodes must be equal, the times show what a change to the solver costs.

``--regression`` instead solves every recorded exact position of test_search_regression.py,
and its recorded best move, with the current reference solver (a fresh
table each, ``--cap`` seconds at most each) and prints the values, the recorded value, the
nodes and the times: the figures behind the values that test takes from this script rather
than solving them itself.

No time is asserted: the script only prints figures.

    python bench/reference_solver_bench.py --baseline HEAD~1
    python bench/reference_solver_bench.py --regression --cap 3600
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the reference solver lives in the tests

# the solves are timed: none of them may come from the record of slow solves
os.environ["BOXFISH_REFERENCE_RECORDED"] = "0"
from boxfish.engine.dots.positions import safe_play  # noqa: E402
from tests.engine.dots import reference as current_reference  # noqa: E402


def load_baseline(rev: str, tmp: Path):
    """The reference package at git revision ``rev``, imported as ``baseline_reference``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev,
                              "tests/engine/dots/reference"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    pkg = tmp / "tests" / "engine" / "dots" / "reference"
    spec = importlib.util.spec_from_file_location("baseline_reference", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["baseline_reference"] = mod
    spec.loader.exec_module(mod)
    return mod


def timed_solve(ref, w: int, h: int, drawn: int, cap: float | None = None):
    """(value, nodes, wall seconds, CPU seconds of this thread) of one solve from an empty
    table."""
    ref.clear_table()
    w0, c0 = time.perf_counter(), time.thread_time()
    value = ref.reference_value(w, h, drawn, max_seconds=cap)
    return value, ref.last_nodes(), time.perf_counter() - w0, time.thread_time() - c0


def speed(args) -> None:
    solvers = [("current", current_reference)]
    tmp = None
    if args.baseline:
        tmp = tempfile.TemporaryDirectory()
        solvers.append((f"at {args.baseline}", load_baseline(args.baseline, Path(tmp.name))))
    rng = random.Random(args.seed)
    positions = [(u, safe_play(rng, 5, 5, u).drawn)
                 for u in args.undrawn for _ in range(args.per_count)]
    totals = {name: [0.0, 0.0] for name, _ in solvers}
    print(f"5x5 safe-play positions, least of {args.repeats} solves from an empty table")
    head = "  ".join(f"{name + ' wall':>14} {name + ' CPU':>14}" for name, _ in solvers)
    print(f"{'undrawn':>7} {'value':>5} {'nodes':>12}  {head}  drawn")
    for undrawn, drawn in positions:
        best = {name: [float("inf"), float("inf"), None, None] for name, _ in solvers}
        for _ in range(args.repeats):
            for name, ref in solvers:
                value, nodes, wall, cpu = timed_solve(ref, 5, 5, drawn)
                b = best[name]
                b[0], b[1] = min(b[0], wall), min(b[1], cpu)
                if b[2] is not None and (b[2], b[3]) != (value, nodes):
                    print(f"  {name}: a repeat differs: {(value, nodes)} vs {b[2:]}")
                b[2], b[3] = value, nodes
        values = {(b[2], b[3]) for b in best.values()}
        value, nodes = best["current"][2], best["current"][3]
        cells = "  ".join(f"{best[name][0]:13.2f}s {best[name][1]:13.2f}s"
                          for name, _ in solvers)
        flag = "" if len(values) == 1 else f"  DIFFER: {best}"
        print(f"{undrawn:>7} {value:>+5d} {nodes:>12,}  {cells}  {drawn:#x}{flag}")
        for name, _ in solvers:
            totals[name][0] += best[name][0]
            totals[name][1] += best[name][1]
    cells = "  ".join(f"{totals[name][0]:13.2f}s {totals[name][1]:13.2f}s"
                      for name, _ in solvers)
    print(f"{'total':>7} {'':>5} {'':>12}  {cells}")
    if tmp is not None:
        tmp.cleanup()


def regression(args) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "engine" / "dots"))
    import test_search_regression as rec

    from boxfish.engine.dots.search.board import tables

    ref = current_reference
    print(f"recorded exact values, current reference solver (fresh table, cap {args.cap} s)")
    for (w, h, drawn), (recorded, best) in sorted(rec.EXACT.items()):
        undrawn = (h + 1) * w + h * (w + 1) - drawn.bit_count()
        line = tables(w, h).geo.line_id(*best)
        for what, lines in (("value", None), (f"line {line}'s value", [line])):
            ref.clear_table()
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                if lines is None:
                    value = ref.reference_value(w, h, drawn, max_seconds=args.cap)
                else:
                    value = ref.reference_move_values(w, h, drawn, lines,
                                                      max_seconds=args.cap)[line]
            except ref.ReferenceGaveUp as e:
                print(f"  {w}x{h} {drawn:#x} {what}: gave up: {e}")
                continue
            wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
            mark = "ok" if value == recorded else "MISMATCH"
            print(f"  {w}x{h} {drawn:#x} ({undrawn} undrawn) {what}: {value:+d} (recorded "
                  f"{recorded:+d}, {mark})  {ref.last_nodes():>12,} nodes  {wall:7.1f}s wall"
                  f"  {cpu:7.1f}s CPU", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--undrawn", type=lambda s: [int(x) for x in s.split(",")],
                    default=[34, 36, 38], help="undrawn lines of the 5x5 positions")
    ap.add_argument("--per-count", type=int, default=2, help="positions per undrawn count")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="compare with the solver at REV")
    ap.add_argument("--regression", action="store_true",
                    help="solve the recorded exact values of test_search_regression.py")
    ap.add_argument("--cap", type=float, default=3600.0, help="seconds per regression solve")
    args = ap.parse_args()
    regression(args) if args.regression else speed(args)


if __name__ == "__main__":
    main()
