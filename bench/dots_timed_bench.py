"""Timed analyses of 5x5 mid-game positions against exact values (issue 21).

``--positions`` 5x5 positions with 38-42 undrawn lines (seeded by ``--seed``), half from
``safe_play``, half from ``biased_play`` with ``p_safe`` drawn from 0.7-0.9
(:mod:`boxfish.engine.dots.positions`). For each: its exact value (the reference solver's,
tests/engine/dots/reference, within ``--ref-cap`` seconds; else the current engine's untimed
solve's, said so in the report; else unknown), the answers of
``analyse_position(5, 5, drawn, Limit(time_ms=T))`` (a fresh table each call) for each ``T``
of ``--times``, by each engine, and the current engine's untimed solve (``Limit()``, capped by
``--untimed-cap``; it is the same search in the baseline). Per time limit and engine it
prints:

* the share of answers that come back exact, and the median ``time_ms`` of those;
* of the inexact answers: how far the value is from the exact one (0, 1, 2, 3+ boxes) and,
  at the largest time limit, how often the best move is value-optimal (by
  ``reference_move_values`` within ``--check-cap``, where the reference solved the position);
* exact answers that disagree with the exact value (must be 0), and the worst overrun of
  the time limit (wall time around the call);

and the headline: of the positions solved untimed in under 3 s, how many came back exact at
the largest time limit.

``--baseline REV`` runs the same measurements on the engine as it was at git revision REV
(``git archive REV engine`` unpacked into a temporary directory as the package
``baseline_engine``, its compiled core built there with gcc) and prints both side by side.
``--out FILE`` appends each position's measurements to a JSON-lines file and skips those it
already holds (a stopped run resumes where it was); ``--shard I/N`` measures every N-th
position from the I-th (N runs at once, one per core); ``--report FILE...`` prints the tables
of such files merged; ``--early N`` only measures the depth the engines reach on N early
positions (50-60 undrawn lines), where no proof fits, and ``--match GAMES [--match-ms MS]``
only plays the current engine against the baseline. No time is asserted: the script only
prints figures.

    python bench/dots_timed_bench.py --positions 6 --times 1000,3000 --baseline HEAD
    python bench/dots_timed_bench.py --baseline REV --ref-cap 20 --untimed-cap 20 \\
        --out a.jsonl --shard 0/2 &   # and --out b.jsonl --shard 1/2
    python bench/dots_timed_bench.py --report a.jsonl b.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
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

from dots_solve_bench import say, table  # noqa: E402  (this folder: the script's own)

from boxfish.engine.dots.geometry import geometry  # noqa: E402
from boxfish.engine.dots.positions import biased_play, safe_play  # noqa: E402
from boxfish.engine.dots.search import driver as current_search  # noqa: E402
from tests.engine.dots.reference import (  # noqa: E402
    ReferenceGaveUp,
    reference_move_values,
    reference_value,
)

W = H = 5


# ---------------------------------------------------------------------------- the baseline

def load_baseline(rev: str | None, tmp: Path, name: str = "baseline_engine"):
    """The ``search`` driver module of the engine at git revision ``rev`` (None: this working
    tree's), imported as the package ``name`` from ``tmp`` with its compiled core built in
    place by gcc, with the flags setup.py's build uses on this interpreter. Every layout the
    core has had builds: ``engine/dots/_core.c``, ``engine/dots/search/_core.c``, and the units
    of ``engine/dots/search/core/`` (one translation unit, ``module.c``)."""
    pkg = tmp / name
    if rev is None:
        shutil.copytree(ROOT / "engine", pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "engine"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        (tmp / "engine").rename(pkg)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("--baseline needs gcc to build the baseline's compiled core")
    # the search is a package (dots/search/) since the house was given its layers
    search = "dots.search" if (pkg / "dots" / "search").is_dir() else "dots"
    core_dir = pkg.joinpath(*search.split("."))
    source = core_dir / "core" / "module.c"
    if not source.exists():
        source = core_dir / "_core.c"
    out = core_dir / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
    cflags = sysconfig.get_config_var("CFLAGS") or ""
    cmd = [gcc, *cflags.split(), "-fPIC", f"-I{sysconfig.get_paths()['include']}",
           "-O3", "-std=gnu11", "-pthread", "-shared", str(source), "-o", str(out)]
    subprocess.run(cmd, check=True)
    if str(tmp) not in sys.path:
        sys.path.insert(0, str(tmp))
    driver = "dots.search.driver" if search == "dots.search" else "dots.search"
    mod = importlib.import_module(f"{name}.{driver}")
    compiled = importlib.import_module(f"{name}.{search}.compiled")
    if not compiled.available():
        raise SystemExit(f"the compiled core of {rev or 'this tree'} did not import ({out})")
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
    """One engine (the current one or the baseline's ``search`` module)."""

    def __init__(self, name: str, search_module) -> None:
        self.name = name
        self.search = search_module

    def analyse(self, drawn: int, time_ms: int | None, solve: bool | None = None):
        # the baseline's own Limit class (a frozen dataclass of the same fields)
        lim = self.search.Limit(time_ms=time_ms)
        return self.search.analyse_position(W, H, drawn, lim, solve=solve)


def measure(engines, times, label, drawn, args) -> dict:
    """Everything about one position: the exact value (the reference solver's, else the
    current engine's untimed solve's, else unknown), each engine's timed answers and untimed
    solve, and whether each inexact answer's best move is value-optimal."""
    row: dict = {"label": label, "drawn": drawn, "engines": {}}
    t0 = time.perf_counter()
    try:
        row["exact"] = reference_value(W, H, drawn, max_seconds=args.ref_cap)
        row["truth"] = "reference"
    except ReferenceGaveUp:
        row["exact"], row["truth"] = None, None
    row["reference_s"] = round(time.perf_counter() - t0, 2)
    for e in engines:
        out: dict = {"timed": {}}
        for T in times:
            t1 = time.perf_counter()
            a = e.analyse(drawn, T)
            wall = (time.perf_counter() - t1) * 1000
            out["timed"][str(T)] = {"exact": a.exact, "time_ms": round(a.time_ms, 1),
                                    "wall_ms": round(wall, 1),
                                    "value": a.value, "bound": str(a.bound), "depth": a.depth,
                                    "best": line_of(a.best_move)}
        if not args.skip_untimed and e is engines[0]:
            # the untimed solve is the same search in both engines: measured once
            cap = None if args.untimed_cap is None else int(args.untimed_cap * 1000)
            t1 = time.perf_counter()
            # (capped: still the untimed mode, a proof from the third iteration on)
            a = e.analyse(drawn, cap, solve=True if cap else None)
            out["untimed"] = {"s": round(time.perf_counter() - t1, 2), "exact": a.exact,
                              "value": a.value}
            if a.exact and row["truth"] is None and e is engines[0]:
                row["exact"], row["truth"] = a.value, "current engine, untimed"
        row["engines"][e.name] = out
    for e in engines:
        for T, r in row["engines"][e.name]["timed"].items():
            r["optimal"] = None
            if (not r["exact"] and row["truth"] == "reference" and r["best"] is not None
                    and int(T) == max(times)):
                try:
                    r["optimal"] = reference_move_values(
                        W, H, drawn, lines=[r["best"]],
                        max_seconds=args.check_cap)[r["best"]] == row["exact"]
                except ReferenceGaveUp:
                    pass
    return row


ROWS = ("exact", "median time to proof (ms)", "inexact, value off by 0",
        "inexact, value off by 1", "inexact, value off by 2", "inexact, value off by 3+",
        "inexact, value off: unknown", "inexact, best move value-optimal",
        "exact but wrong", "worst overrun of the limit (ms, wall)")


def column(rows, name: str, T: int) -> list[str]:
    """One engine's column of the table of time limit ``T``."""
    res = [(r, r["engines"][name]["timed"][str(T)]) for r in rows]
    n = len(res)
    exact = [a for _r, a in res if a["exact"]]
    inexact = [(r, a) for r, a in res if not a["exact"]]
    off = [0, 0, 0, 0]
    unknown = 0
    for r, a in inexact:
        if r["exact"] is None:
            unknown += 1
        else:
            off[min(abs(a["value"] - r["exact"]), 3)] += 1
    optimal = sum(1 for _r, a in inexact if a["optimal"])
    checked = sum(1 for _r, a in inexact if a["optimal"] is not None)
    wrong = sum(1 for r, a in res if a["exact"] and r["exact"] is not None
                and a["value"] != r["exact"])
    median = f"{statistics.median(a['time_ms'] for a in exact):.0f}" if exact else "-"
    return [f"{len(exact)}/{n} ({100 * len(exact) / n:.0f}%)" if n else "-", median,
            *(str(k) for k in off), str(unknown), f"{optimal}/{checked}", str(wrong)]


def report(rows: list[dict]) -> None:
    names = list(rows[0]["engines"])
    times = sorted(int(T) for T in rows[0]["engines"][names[0]]["timed"])
    truths = {}
    for r in rows:
        truths[r["truth"]] = truths.get(r["truth"], 0) + 1
    say(f"# {len(rows)} positions; exact values from: "
        + ", ".join(f"{k or 'unknown'} {v}" for k, v in truths.items()))
    for T in times:
        cols = [column(rows, name, T) for name in names]
        for c, name in zip(cols, names, strict=True):
            walls = [r["engines"][name]["timed"][str(T)].get("wall_ms") for r in rows]
            walls = [w for w in walls if w is not None]
            c.append(f"{max(walls) - T:+.1f}" if walls else "-")
        say(f"## time_ms = {T}")
        table([f"time_ms = {T}"] + names,
              [[label] + [c[k] for c in cols] for k, label in enumerate(ROWS)])
    if len(names) > 1:
        say("## Paired: the positions that no engine proves, value known")
        out = []
        for T in times:
            both = [r for r in rows if r["exact"] is not None and not any(
                r["engines"][name]["timed"][str(T)]["exact"] for name in names)]
            row = [f"{T} ms", str(len(both))]
            for name in names:
                errs = [abs(r["engines"][name]["timed"][str(T)]["value"] - r["exact"])
                        for r in both]
                row.append(f"mean {statistics.mean(errs):.2f}, off by 0: {errs.count(0)}"
                           if errs else "-")
            out.append(row)
        table(["time limit", "positions"] + [f"{name}: error (boxes)" for name in names], out)
    if "untimed" not in rows[0]["engines"][names[0]]:
        return
    big = max(times)
    say("## Untimed solves")
    out = []
    un = [r["engines"][names[0]]["untimed"] for r in rows]
    secs = [u["s"] for u in un]
    say(f"the current engine's untimed solve (the same search in both): median "
        f"{statistics.median(secs):.2f} s, max {max(secs):.2f} s, "
        f"{sum(1 for u in un if not u['exact'])} not solved within the cap")
    easy = [r for r in rows if r["engines"][names[0]]["untimed"]["exact"]
            and r["engines"][names[0]]["untimed"]["s"] < 3.0]
    for name in names:
        got = sum(1 for r in easy if r["engines"][name]["timed"][str(big)]["exact"])
        out.append((name, f"{got}/{len(easy)}"))
    table(("engine", f"of those solved untimed in < 3 s: exact at {big} ms"), out)


def early_depths(engines, times, n: int, seed: int) -> None:
    """The depth each engine's timed analysis reaches on ``n`` early 5x5 positions (50-60
    undrawn lines, safe play), where no proof fits: what the proof attempts' share of the
    time costs the heuristic deepening. Also the largest overrun of the time limit."""
    rng = random.Random(seed + 1)
    positions = [safe_play(rng, W, H, rng.randint(50, 60)).drawn for _ in range(n)]
    say(f"## Early positions: {n} of 50-60 undrawn lines (safe play), depth reached")
    rows = []
    for T in times:
        row = [f"{T} ms"]
        for e in engines:
            depths, over = [], 0.0
            for drawn in positions:
                t1 = time.perf_counter()
                a = e.analyse(drawn, T)
                over = max(over, (time.perf_counter() - t1) * 1000 - T)
                depths.append(a.depth)
            row.append(f"median {statistics.median(depths):g} (min {min(depths)}, max "
                       f"{max(depths)}); worst overrun {over:+.1f} ms")
        rows.append(row)
    table(["time limit"] + [e.name for e in engines], rows)


def match(engines, games: int, ms: int, seed: int) -> None:
    """``games`` 5x5 games between the first two engines at ``ms`` a move, alternating who
    starts, each from a different opening of 4 random safe lines: wins, draws, losses and the
    mean box margin of the first engine. Where the proof attempts cost the deepening depth,
    this is what it costs in play."""
    geo = geometry(W, H)
    rng = random.Random(seed + 2)
    full = (1 << geo.num_lines) - 1
    a, b = engines[0], engines[1]
    w = d = lo = 0
    margins = []
    for g in range(games):
        opening = safe_play(rng, W, H, geo.num_lines - 4)
        drawn, to_move = opening.drawn, opening.to_move
        first = g % 2  # the seat engine ``a`` plays
        scores = [0, 0]
        while drawn != full:
            e = a if to_move == first else b
            best = line_of(e.analyse(drawn, ms).best_move)
            done = sum(1 for bx in geo.line_boxes[best]
                       if (drawn | 1 << best) & geo.box_mask[bx] == geo.box_mask[bx])
            drawn |= 1 << best
            if done:
                scores[to_move] += done
            else:
                to_move ^= 1
        margin = scores[first] - scores[1 - first]
        margins.append(margin)
        w, d, lo = w + (margin > 0), d + (margin == 0), lo + (margin < 0)
        say(f"  game {g + 1}: {a.name} {'first' if first == 0 else 'second'}, margin "
            f"{margin:+d}")
    say(f"## Match at {ms} ms a move, {games} games: {a.name} against {b.name}: "
        f"{w} won, {d} drawn, {lo} lost, mean margin {statistics.mean(margins):+.2f}")


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
    p.add_argument("--check-cap", type=float, default=10.0, metavar="SECONDS",
                   help="the reference's check of an inexact best move (at the largest time "
                        "limit only) gives up after this long")
    p.add_argument("--out", metavar="FILE",
                   help="append each position's measurements to this JSON-lines file and "
                        "skip the positions it already holds (a stopped run resumes)")
    p.add_argument("--shard", default="0/1", metavar="I/N",
                   help="measure only the positions i, i+N, i+2N, ... (run N at once)")
    p.add_argument("--report", nargs="+", metavar="FILE",
                   help="only print the tables of these JSON-lines files (merged)")
    p.add_argument("--early", type=int, default=0, metavar="N",
                   help="only measure the depth reached on N early positions (50-60 lines)")
    p.add_argument("--match", type=int, default=0, metavar="GAMES",
                   help="only play GAMES 5x5 games, current against the baseline")
    p.add_argument("--match-ms", type=int, default=200, metavar="MS",
                   help="time a move in the match")
    args = p.parse_args(argv)
    if args.report:
        rows = [json.loads(line) for f in args.report for line in Path(f).read_text()
                .splitlines() if line.strip()]
        report(rows)
        return 0
    times = [int(t) for t in args.times.split(",") if t]
    shard, nshards = (int(x) for x in args.shard.split("/"))
    t_start = time.perf_counter()
    engines = [Engine("current", current_search)]
    tmp = None
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="boxfish-baseline-"))
        engines.append(Engine(f"baseline {args.baseline}", load_baseline(args.baseline, tmp)))
    if args.match and len(engines) < 2:
        raise SystemExit("--match needs --baseline")
    if args.early or args.match:
        if args.early:
            early_depths(engines, times, args.early, args.seed)
        if args.match:
            match(engines, args.match, args.match_ms, args.seed)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    done: dict[int, dict] = {}
    if args.out and Path(args.out).exists():
        for line in Path(args.out).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["index"]] = r
    say(f"# 5x5 timed analyses: {args.positions} positions of 38-42 undrawn lines (seed "
        f"{args.seed}, shard {shard}/{nshards}), time limits {times} ms, engines: "
        f"{', '.join(e.name for e in engines)}; {len(done)} already measured")
    rows = []
    for i, (label, drawn) in enumerate(make_positions(args.positions, args.seed)):
        if i % nshards != shard:
            continue
        if i in done:
            rows.append(done[i])
            continue
        row = measure(engines, times, label, drawn, args)
        row["index"] = i
        rows.append(row)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        say(f"  #{i + 1} {label}: exact {row['exact']} ({row['truth']}); "
            + "; ".join(f"{name}: " + " ".join(
                f"{T}ms {'=' if a['exact'] else '~'}{a['value']:+d}"
                for T, a in d["timed"].items())
                + (f" untimed {d['untimed']['s']:.2f}s" if "untimed" in d else "")
                for name, d in row["engines"].items()))
    say()
    if rows:
        report(rows)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"(all done in {time.perf_counter() - t_start:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
