"""Timed analyses of 5x5 mid-game positions against the reference solver's exact values.

``--positions`` 5x5 positions with 38-42 undrawn lines (seeded by ``--seed``), half from
``safe_play``, half from ``biased_play`` with ``p_safe`` drawn from 0.7-0.9
(:mod:`boxfish.engine.dots.positions`), are each solved exactly by the reference solver
(tests/engine/dots/reference; a position it gives up on within ``--ref-cap`` seconds is
reported and left out), then analysed by ``analyse_position(5, 5, drawn, Limit(time_ms=T))``
(a fresh table each call) for each ``T`` of ``--times``. Per time limit it prints:

* the share of answers that come back exact, and the median ``time_ms`` of those;
* of the inexact answers: how far the value is from the exact one (0, 1, 2, 3+ boxes) and
  how often the best move is value-optimal (its exact value, by ``reference_move_values``,
  equals the position's);

and each position's untimed solve (``Limit()``; ``--skip-untimed`` leaves it out,
``--untimed-cap`` caps it) with the headline: of the positions solved in under 3 s untimed,
how many came back exact at the largest time limit.

``--baseline REV`` runs the same measurements on the engine as it was at git revision REV
(``git archive REV engine`` unpacked into a temporary directory as the package
``baseline_engine``, its compiled core built there with gcc) and prints both side by side.
No time is asserted: the script only prints figures.

    python bench/dots_timed_bench.py --positions 6 --times 1000,3000 --baseline HEAD
"""

from __future__ import annotations

import argparse
import importlib
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the reference solver lives in the tests

from boxfish.engine.analysis import Limit  # noqa: E402
from boxfish.engine.dots import search as current_search  # noqa: E402
from boxfish.engine.dots.geometry import geometry  # noqa: E402
from boxfish.engine.dots.positions import biased_play, safe_play  # noqa: E402
from tests.engine.dots.reference import (  # noqa: E402
    ReferenceGaveUp,
    reference_move_values,
    reference_value,
)

W = H = 5


def say(*args) -> None:
    print(*args, flush=True)


def table(head, rows) -> None:
    say("| " + " | ".join(head) + " |")
    say("|" + "---|" * len(head))
    for r in rows:
        say("| " + " | ".join(str(x) for x in r) + " |")
    say()


# ---------------------------------------------------------------------------- the baseline

def load_baseline(rev: str, tmp: Path):
    """The ``search`` module of the engine at git revision ``rev``, imported as the package
    ``baseline_engine`` from ``tmp`` with its compiled core built in place."""
    pkg = tmp / "baseline_engine"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "engine"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    (tmp / "engine").rename(pkg)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("--baseline needs gcc to build the baseline's compiled core")
    # the flags of setup.py's extension, for this interpreter
    out = pkg / "dots" / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = [gcc, "-O3", "-std=gnu11", "-shared", "-fPIC",
           f"-I{sysconfig.get_paths()['include']}", str(pkg / "dots" / "_core.c"), "-o",
           str(out)]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, str(tmp))
    mod = importlib.import_module("baseline_engine.dots.search")
    compiled = importlib.import_module("baseline_engine.dots.compiled")
    if not compiled.available():
        raise SystemExit(f"the baseline's compiled core did not import ({out})")
    return mod


# ---------------------------------------------------------------------------- measurements

def make_positions(n: int, seed: int):
    """``n`` positions: (label, drawn); even indices from safe_play, odd from biased_play."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        undrawn = rng.randint(38, 42)
        if i % 2 == 0:
            p = safe_play(rng, W, H, undrawn)
            label = f"safe {undrawn}"
        else:
            p_safe = rng.uniform(0.7, 0.9)
            p = biased_play(rng, W, H, undrawn, p_safe)
            label = f"biased({p_safe:.2f}) {undrawn}"
        out.append((label, p.drawn))
    return out


def line_of(move) -> int | None:
    return None if move is None else geometry(W, H).line_id(*move)


class Engine:
    """One engine's answers: ``timed[T][i]`` = (exact, time_ms, value, best line) and
    ``untimed[i]`` = (seconds, exact) for position ``i``."""

    def __init__(self, name: str, search_module) -> None:
        self.name = name
        self.search = search_module
        self.timed: dict[int, dict[int, tuple]] = {}
        self.untimed: dict[int, tuple[float, bool]] = {}

    def analyse(self, drawn: int, limit: Limit, solve: bool | None = None):
        # the baseline's own Limit class (a frozen dataclass of the same fields)
        lim = self.search.Limit(time_ms=limit.time_ms)
        return self.search.analyse_position(W, H, drawn, lim, solve=solve)


REF_CAP = 600.0  # seconds; set from --ref-cap


def move_value(drawn: int, line: int, cache: dict) -> int | None:
    """The exact value of drawing ``line`` (None when the reference gives up on it)."""
    key = (drawn, line)
    if key not in cache:
        try:
            cache[key] = reference_move_values(W, H, drawn, lines=[line],
                                               max_seconds=REF_CAP)[line]
        except ReferenceGaveUp:
            say(f"  (the reference gave up on line {line} of {drawn:#x}: counted as unknown)")
            cache[key] = None
    return cache[key]


def summary(e: Engine, T: int, positions, exact_values, move_cache) -> list[str]:
    """One engine's column of the table of time limit ``T``."""
    res = e.timed[T]
    n = len(res)
    exact = [r for r in res.values() if r[0]]
    inexact = [(i, r) for i, r in res.items() if not r[0]]
    off = [0, 0, 0, 0]
    optimal = 0
    for i, r in inexact:
        off[min(abs(r[2] - exact_values[i]), 3)] += 1
        if r[3] is not None and move_value(positions[i][1], r[3], move_cache) == exact_values[i]:
            optimal += 1
    median = f"{statistics.median(r[1] for r in exact):.0f}" if exact else "-"
    return [f"{len(exact)}/{n} ({100 * len(exact) / n:.0f}%)", median,
            *(str(k) for k in off), f"{optimal}/{len(inexact)}"]


ROWS = ("exact", "median time to proof (ms)", "inexact, value off by 0",
        "inexact, value off by 1", "inexact, value off by 2", "inexact, value off by 3+",
        "inexact, best move value-optimal")


def report(engines, times, positions, exact_values, move_cache) -> None:
    for T in times:
        cols = [summary(e, T, positions, exact_values, move_cache) for e in engines]
        say(f"## time_ms = {T} ({len(positions)} positions)")
        table([f"time_ms = {T}"] + [e.name for e in engines],
              [[label] + [c[k] for c in cols] for k, label in enumerate(ROWS)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--positions", type=int, default=100)
    p.add_argument("--times", default="1000,3000,10000",
                   help="comma list of time limits in ms")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline", default=None, metavar="REV",
                   help="also measure the engine as it was at this git revision")
    p.add_argument("--skip-untimed", action="store_true",
                   help="leave out the untimed solves (and the headline)")
    p.add_argument("--untimed-cap", type=float, default=None, metavar="SECONDS",
                   help="cap the untimed solves (default: no limit at all)")
    p.add_argument("--ref-cap", type=float, default=600.0, metavar="SECONDS",
                   help="the reference solver gives up on a position after this long")
    args = p.parse_args(argv)
    global REF_CAP
    REF_CAP = args.ref_cap
    times = [int(t) for t in args.times.split(",") if t]
    t_start = time.perf_counter()

    engines = [Engine("current", current_search)]
    tmp = None
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="boxfish-baseline-"))
        engines.append(Engine(f"baseline {args.baseline}", load_baseline(args.baseline, tmp)))

    say(f"# 5x5 timed analyses: {args.positions} positions of 38-42 undrawn lines (seed "
        f"{args.seed}), time limits {times} ms, engines: {', '.join(e.name for e in engines)}")
    positions = []
    exact_values: dict[int, int] = {}
    for k, (label, drawn) in enumerate(make_positions(args.positions, args.seed)):
        i = len(positions)
        t0 = time.perf_counter()
        try:
            v = reference_value(W, H, drawn, max_seconds=args.ref_cap)
        except ReferenceGaveUp:
            say(f"  (generated position {k + 1}, {label}: the reference solver gave up after "
                f"{args.ref_cap:.0f}s (drawn {drawn:#x}): left out)")
            continue
        positions.append((label, drawn))
        exact_values[i] = v
        say(f"  #{i + 1} {label}: exact value {v:+d} (reference {time.perf_counter() - t0:.2f}s)"
            f"  drawn {drawn:#x}")

    for e in engines:
        for T in times:
            e.timed[T] = {}
            for i, (_label, drawn) in enumerate(positions):
                a = e.analyse(drawn, Limit(time_ms=T))
                e.timed[T][i] = (a.exact, a.time_ms, a.value, line_of(a.best_move))
                say(f"  {e.name} {T} ms #{i + 1}: value {a.value:+d} ({a.bound}) "
                    f"{'exact' if a.exact else 'inexact'}  {a.time_ms:.0f} ms  "
                    f"(exact {exact_values[i]:+d})")
        if not args.skip_untimed:
            for i, (_label, drawn) in enumerate(positions):
                t0 = time.perf_counter()
                cap = None if args.untimed_cap is None else int(args.untimed_cap * 1000)
                # (capped: still the untimed mode, a proof from the third iteration on)
                a = e.analyse(drawn, Limit(time_ms=cap), solve=True if cap else None)
                secs = time.perf_counter() - t0
                e.untimed[i] = (secs, a.exact)
                if a.exact and a.value != exact_values[i]:
                    say(f"  !! {e.name} untimed #{i + 1}: value {a.value:+d} marked exact, the "
                        f"reference says {exact_values[i]:+d} (drawn {drawn:#x})")
                say(f"  {e.name} untimed #{i + 1}: {secs:.2f}s "
                    f"{'exact' if a.exact else 'not solved within the cap'}")

    say()
    move_cache: dict = {}
    if positions:
        report(engines, times, positions, exact_values, move_cache)
    wrong = [(e.name, T, i) for e in engines for T in times for i, r in e.timed[T].items()
             if r[0] and r[2] != exact_values[i]]
    if wrong:
        say(f"!! exact answers that disagree with the reference: {wrong}")
    if not args.skip_untimed and positions:
        say("## Untimed solves")
        rows = []
        big = max(times)
        for e in engines:
            secs = [s for s, ok in e.untimed.values()]
            easy = [i for i, (s, ok) in e.untimed.items() if ok and s < 3.0]
            got = sum(1 for i in easy if e.timed[big][i][0])
            rows.append((e.name, f"{statistics.median(secs):.2f}", f"{statistics.mean(secs):.2f}",
                         f"{max(secs):.2f}",
                         sum(1 for s, ok in e.untimed.values() if not ok),
                         f"{got}/{len(easy)}"))
        table(("engine", "median s", "mean s", "max s", "unsolved (cap)",
               f"untimed < 3 s: exact at {big} ms"), rows)
        per = [[f"#{i + 1}", positions[i][0]] + [f"{e.untimed[i][0]:.2f}" for e in engines]
               for i in range(len(positions))]
        table(["position", "kind"] + [f"{e.name} untimed s" for e in engines], per)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"(all done in {time.perf_counter() - t_start:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
