"""The exact frontier's goals (issue 34): each row of the issue's table, measured on the current
engine and, in the same run, on a baseline revision (``--baseline REV``), position by position.

Rows (``--rows``, a comma list):

* ``heldout``: timed analyses (``--heldout-cap`` seconds, ``--threads``) of held-out positions
  this project never trained or tuned on: three 5x5 at 43 undrawn lines and two 4x5 at 40,
  from ``--seed`` (half safe play, half biased play, no box to take at the root). Median
  seconds, unproven ones counted as the cap.
* ``4x4``: 4x4 from the empty board, untimed, ``--threads``, capped at ``--cap-4x4``.
* ``growth``: nodes per extra undrawn line on 4x5: ``--playouts`` safe-play games, each
  position of a game from 34 to 40 undrawn lines solved on one thread (node counts do not
  vary), capped at ``--cap``; the median of nodes(u + 1) / nodes(u) over consecutive solved
  pairs.
* ``4x5-42`` and ``5x5-44``: four positions each, untimed, ``--threads``, capped at ``--cap``:
  how many are solved within the cap, and the median seconds (unsolved: the cap).

Every solve starts from an empty table of ``--table-gb`` GiB. ``--out FILE`` keeps each
measurement as a JSON line and skips those already there, so a stopped run resumes (and
``--baseline-only`` measures the baseline ahead of the current engine). Positions alternate
between the engines, so both see the same load. No time is asserted: the script only prints
figures.

    python bench/dots_frontier_goals_bench.py --baseline 594ee94 --out goals.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dots_frontier_bench import positions  # noqa: E402
from dots_solve_bench import say, table  # noqa: E402
from dots_timed_bench import load_baseline  # noqa: E402

from boxfish.engine.dots.positions import safe_play  # noqa: E402
from boxfish.engine.dots.search import driver as current_driver  # noqa: E402
from boxfish.engine.dots.search.board import tables  # noqa: E402

GiB = 1 << 30


class Engine:
    """An engine's driver module and its package's caches and Limit."""

    def __init__(self, name: str, driver) -> None:
        self.name = name
        self.driver = driver
        pkg = driver.__name__.rsplit(".", 1)[0]
        self.caches = importlib.import_module(f"{pkg}.caches").DotsCaches
        self.tables = importlib.import_module(f"{pkg}.board").tables

    def solve(self, w: int, h: int, drawn: int, cap: float, threads: int, table_gb: float,
              timed: bool = False) -> dict:
        """One analysis from an empty table: untimed (a proof, capped) or ``timed``."""
        caches = self.caches(self.tables(w, h), table_bytes=int(table_gb * GiB))
        start = time.perf_counter()
        a = self.driver.analyse_position(
            w, h, drawn, self.driver.Limit(time_ms=int(cap * 1000)), multipv=1,
            solve=None if timed else True, start=start, caches=caches, core="c",
            threads=threads)
        return {"exact": a.exact, "s": round(time.perf_counter() - start, 2),
                "nodes": a.nodes, "value": a.value}


def playout_positions(w: int, h: int, lo: int, hi: int, n: int, seed: int):
    """``n`` safe-play games' positions at ``hi`` down to ``lo`` undrawn lines."""
    rng = random.Random(seed)
    nl = tables(w, h).nl
    for g in range(n):
        moves = safe_play(rng, w, h, lo).moves
        for u in range(hi, lo - 1, -1):
            drawn = 0
            for ln in moves[:nl - u]:
                drawn |= 1 << ln
            yield g, u, drawn


class Record:
    """Measurements by key, kept in a JSON-lines file when one is given."""

    def __init__(self, path: str | None) -> None:
        self.path, self.data = path, {}
        if path and Path(path).exists():
            for line in Path(path).read_text().splitlines():
                d = json.loads(line)
                self.data[d["key"]] = d["result"]

    def get(self, key: str, compute) -> dict:
        if key not in self.data:
            self.data[key] = compute()
            if self.path:
                with open(self.path, "a") as f:
                    f.write(json.dumps({"key": key, "result": self.data[key]}) + "\n")
        return self.data[key]


def median_s(results: list[dict], cap: float) -> float:
    return statistics.median(r["s"] if r["exact"] else cap for r in results)


def fmt_s(v: float, cap: float) -> str:
    return f"> {cap:.0f}" if v >= cap else f"{v:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="heldout,4x4,growth,4x5-42,5x5-44")
    ap.add_argument("--baseline", metavar="REV", help="also measure the engine at REV")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--table-gb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=3401)
    ap.add_argument("--heldout-cap", type=float, default=60.0)
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--cap-4x4", type=float, default=300.0)
    ap.add_argument("--playouts", type=int, default=3)
    ap.add_argument("--out", metavar="FILE")
    ap.add_argument("--baseline-only", action="store_true",
                    help="measure the baseline only (its figures kept in --out for a later run)")
    args = ap.parse_args()
    engines = [] if args.baseline_only else [Engine("current", current_driver)]
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="boxfish-baseline-"))
        engines.insert(0, Engine(f"baseline {args.baseline}", load_baseline(args.baseline, tmp)))
    rec = Record(args.out)
    summary: dict[str, dict[str, str]] = {}

    def measure(row: str, item: str, e: Engine, *solve_args, **kw) -> dict:
        r = rec.get(f"{row}|{item}|{e.name}", lambda: e.solve(*solve_args, **kw))
        say(f"  {row} {item} {e.name}: {'exact' if r['exact'] else 'unproven'} "
            f"{r['value']:+d} {r['s']:.1f} s {r['nodes']:,} nodes")
        return r

    for row in args.rows.split(","):
        got = {e.name: [] for e in engines}
        if row == "heldout":
            items = ([(5, 5, d) for d in positions(5, 5, 43, 3, args.seed)] +
                     [(4, 5, d) for d in positions(4, 5, 40, 2, args.seed)])
            for w, h, d in items:
                for e in engines:
                    got[e.name].append(measure(row, f"{w}x{h}:{d:x}", e, w, h, d,
                                               args.heldout_cap, args.threads, args.table_gb,
                                               timed=True))
            for name, rs in got.items():
                summary.setdefault(row, {})[name] = (
                    f"{sum(r['exact'] for r in rs)}/{len(rs)} exact, median "
                    f"{fmt_s(median_s(rs, args.heldout_cap), args.heldout_cap)} s")
        elif row == "4x4":
            for e in engines:
                r = measure(row, "empty", e, 4, 4, 0, args.cap_4x4, args.threads,
                            args.table_gb)
                summary.setdefault(row, {})[e.name] = (
                    f"{fmt_s(r['s'] if r['exact'] else args.cap_4x4, args.cap_4x4)} s, "
                    f"{r['nodes'] / 1e6:.0f}M nodes, value {r['value']:+d}")
        elif row == "growth":
            nodes = {e.name: {} for e in engines}
            for g, u, d in playout_positions(4, 5, 34, 40, args.playouts, args.seed):
                for e in engines:
                    r = measure(row, f"{g}:{u}:{d:x}", e, 4, 5, d, args.cap, 1, args.table_gb)
                    if r["exact"]:
                        nodes[e.name][g, u] = r["nodes"]
            for name, ns in nodes.items():
                ratios = [ns[g, u + 1] / ns[g, u] for (g, u) in ns if (g, u + 1) in ns]
                summary.setdefault(row, {})[name] = (
                    f"{statistics.median(ratios):.2f}x ({len(ratios)} pairs)" if ratios
                    else "no pair solved")
        else:
            size, undrawn = row.split("-")
            w, h = (int(x) for x in size.split("x"))
            for d in positions(w, h, int(undrawn), 4, args.seed):
                for e in engines:
                    got[e.name].append(measure(row, f"{d:x}", e, w, h, d, args.cap,
                                               args.threads, args.table_gb))
            for name, rs in got.items():
                summary.setdefault(row, {})[name] = (
                    f"{sum(r['exact'] for r in rs)}/{len(rs)} within {args.cap:.0f} s, "
                    f"median {fmt_s(median_s(rs, args.cap), args.cap)} s")
    say(f"\nThe frontier's goals, seed {args.seed}, {args.threads} thread(s):")
    table(["row", *(e.name for e in engines)],
          [[row, *(v.get(e.name, "") for e in engines)] for row, v in summary.items()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
