"""Honest figures with every estimate (issue 32): the fill and the learned horizon evaluation
against exact values, per band of undrawn lines.

The positions: the held-out exact data (``--seed`` 2 of ``python -m
boxfish.engine.dots.learn.data``, every source, ``--undrawn`` 30-56), kept in
``bench/results/exact`` (made with ``--dir bench/results/exact``; a run there resumes it),
and with ``--generate N`` N fresh positions per band (``safe`` and ``biased`` in turn, data
seed ``--gen-seed``, which no data file uses: they have no exact values). For each position
and each of ``--evaluations``:

* static: the evaluation of the position itself (only where no box can be taken);
* timed: an analysis of each ``--time-ms`` on one thread, with its own fresh caches.

The table joins them with the exact data as it is when printed (positions solved since a
run get their figures then). Per band of ``--band-width`` undrawn counts:

* static ``MAE``: mean |estimate - exact value|; ``sign``: over the positions whose exact
  value is not 0, the share whose estimate has the same sign (an estimate of 0 is wrong);
  ``sign incl. 0``: over all of them, the share with sign(estimate) == sign(exact);
* timed ``MAE``: mean |answer's value - exact value| over every answer, and over the
  answers that are not exact (``MAE est.``, with their number); ``optimal``: the share of
  answers whose move's exact value (the record's ``values``) is the position's; ``loss``:
  the mean of the position's exact value minus the move's, in boxes; ``bounds``: the share
  of answers whose proven ``lower`` / ``upper`` hold the exact value (must be 100%: a miss
  is printed as ``BOUND MISSED``); ``exact``: the share of answers that were exact (over
  every position, solved or not); ``same move``: the share of positions where both
  evaluations chose the same move (over every position).

Bands with positions but no exact values say so. Last, the issue's goals, fill against
learned: static sign agreement at 30-44, the 1 s MAE at 42-46, the 1 s and 200 ms optimal
moves and loss at 44-48.

Every result is appended at once to ``--out`` (JSON lines; a run skips what it holds), so a
run can be stopped and resumed; ``--report`` prints the tables from it without running:

    python bench/dots_estimate_bench.py --time-ms 200,1000
    python bench/dots_estimate_bench.py --generate 4 --undrawn 30-56 --time-ms 200,1000
    python bench/dots_estimate_bench.py --report --time-ms 200,1000
    python bench/dots_estimate_bench.py --undrawn 30-33 --time-ms 50 --evaluations fill

``--control-moves N``: leaves of at most N non-loony moves take control's sign (the engine's
``learned.CONTROL_MAX_MOVES``; 0: never). ``--model PATH``: a learned model file
(``learn/train.py --out``) instead of the shipped one (the results are kept per model, by a
hash of its weights, and per ``--control-moves``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.game import dots_and_boxes
from boxfish.engine.dots.learn import store
from boxfish.engine.dots.learn.data import parse_board, parse_counts
from boxfish.engine.dots.learn.sources import SOURCES, generate
from boxfish.engine.dots.search import compiled, driver, learned
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.errors import SearchAborted

DEFAULT_OUT = "~/.cache/boxfish/bench/estimate.jsonl"
#: The held-out exact data is kept in the repository (small, and hours of solves to make).
HELD_OUT = Path(__file__).resolve().parent / "results" / "exact"
GENERATED = ("safe", "biased")
#: The issue's goals: (title, figure, undrawn range, time_ms or None for static).
GOALS = (("static sign agreement", "sign", (30, 44), None),
         ("1 s estimate MAE", "mae", (42, 46), 1000),
         ("1 s move optimal / loss", "optimal", (44, 48), 1000),
         ("200 ms move optimal / loss", "optimal", (44, 48), 200))


# -- the learned model -----------------------------------------------------------------------

def model_id(m) -> str | None:
    """A short hash of a model's weights and the leaves that take control's sign (``/c`` and
    ``learned.CONTROL_MAX_MOVES``; None: no model)."""
    if m is None:
        return None
    return f"{m.digest()}/c{learned.CONTROL_MAX_MOVES}"


def load_model(w: int, h: int, path: str | None):
    """The learned model the analyses of ``w`` x ``h`` will use: ``path``'s, put on the
    board's tables (where :func:`learned.model_for` finds it), else the shipped one or None."""
    t = tables(w, h)
    if path is None:
        return learned.model_for(t)
    m = learned.Model.load(Path(path).expanduser())
    if (m.w, m.h) != (w, h) or m.features != learned.feature_count(t):
        raise SystemExit(f"{path}: a {m.w}x{m.h} model of {m.features} features, not {w}x{h}")
    t.learned_model = m
    return m


# -- the positions and their measurement ---------------------------------------------------------

def generated(w: int, h: int, seed: int, bands: list[list[int]], per_band: int) -> list[dict]:
    """``per_band`` fresh positions per band (a list of undrawn counts): its counts in turn,
    safe and biased in turn."""
    out = []
    for counts in bands:
        for j in range(per_band):
            u, k = counts[j % len(counts)], j // len(counts)
            source, i = GENERATED[k % 2], k // 2
            p = generate(source, w, h, seed, u, i)
            out.append({"source": source, "seed": seed, "u": u, "i": i, "drawn": hex(p.drawn)})
    return out


def key(r: dict) -> tuple:
    return (r["board"], r["source"], r["seed"], r["u"], r["i"], r["drawn"], r["evaluation"],
            r.get("model"), r["time_ms"], r.get("share"))


class Static:
    """The static evaluations of one board: a compiled core per evaluation."""

    def __init__(self, w: int, h: int, model) -> None:
        self.t = tables(w, h)
        self.cores = {}
        for ev, m in (("fill", None), ("learned", model)):
            core = compiled.core(self.t, compiled.new_table(1 << 24, self.t.nl), True,
                                 SearchAborted, time.perf_counter)
            core.model = None if m is None else compiled.model(m)
            self.cores[ev] = core

    def __call__(self, drawn: int, evaluation: str) -> int | None:
        """The evaluation of ``drawn`` (None where a box can be taken)."""
        if 3 in self.t.valences(drawn):
            return None
        return self.cores[evaluation].evaluate(drawn)


def timed(w: int, h: int, drawn: int, evaluation: str, time_ms: int) -> dict:
    start = time.perf_counter()
    a = analyse_position(w, h, drawn, Limit(time_ms=time_ms), threads=1, evaluation=evaluation)
    return {"move": dots_and_boxes(w, h).move_to_action(a.best_move), "value": int(a.value),
            "exact": a.exact, "lower": a.lower, "upper": a.upper, "nodes": a.nodes,
            "ms": round((time.perf_counter() - start) * 1000)}


def run(args, w: int, h: int, positions: list[dict], done: dict, model, data: dict) -> None:
    board = f"{w}x{h}"
    static = Static(w, h, model)
    mid = model_id(model)
    out = Path(args.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = sorted(positions, key=lambda p: (p["i"], p["u"], p["source"], p["seed"]))
    for n, p in enumerate(todo, 1):
        drawn = int(p["drawn"], 16)
        d = data.get(pos_of(p))
        truth = d["value"] if d and d["drawn"] == p["drawn"] else None
        said = [f"exact {truth:+d}" if truth is not None else "no exact value"]
        for ev in args.evaluations:
            for tm in [None, *args.times]:
                rec = {"board": board, **p, "evaluation": ev,
                       "model": mid if ev == "learned" else None, "time_ms": tm}
                if tm is not None and args.deepening_share is not None:
                    rec["share"] = args.deepening_share
                old = done.get(key(rec))
                if old is None:
                    if tm is None:
                        rec["estimate"] = static(drawn, ev)
                    else:
                        rec.update(timed(w, h, drawn, ev, tm))
                    with open(out, "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    done[key(rec)] = old = rec
                    if tm is not None and truth is not None:
                        check_bounds(rec, truth)
                if tm is None:
                    said.append(f"{ev} static {old['estimate']}")
                else:
                    said.append(f"{tm} ms {old['value']:+d}{' exact' if old['exact'] else ''}")
        print(f"[{n}/{len(todo)}] {board} {p['source']} seed {p['seed']} u={p['u']} "
              f"#{p['i']}: {', '.join(said)}", file=sys.stderr, flush=True)


# -- the report ----------------------------------------------------------------------------------

def load(path: Path, key=key, repair: bool = False) -> dict[tuple, dict]:
    """The results in ``path`` by ``key`` (the last of each wins), without a line torn by a
    crash (no newline at its end), which ``repair`` cuts off (before appending: it is measured
    again; a report leaves the file alone, another run may be writing it)."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    whole = data.rfind(b"\n") + 1
    if repair and whole < len(data):
        os.truncate(path, whole)
    rows = [json.loads(line) for line in data[:whole].splitlines() if line.strip()]
    return {key(r): r for r in rows}


def exact_data(root: Path, w: int, h: int, seeds) -> dict[tuple, dict]:
    """(source, seed, u, i) -> the latest record of every data file of ``seeds``."""
    out = {}
    for seed in seeds:
        for source in SOURCES:
            path = store.data_path(root, w, h, source, seed)
            if path.exists():
                for (u, i), r in store.latest(store.read(path)[1]).items():
                    out[(source, seed, u, i)] = r
    return out


def sign(v: float) -> int:
    return (v > 0) - (v < 0)


def pct(xs) -> str:
    return f"{100 * statistics.mean(xs):.0f}%" if xs else "-"


def mean(xs, fmt=".2f") -> str:
    return format(statistics.mean(xs), fmt) if xs else "-"


def static_figures(rows: list[dict]) -> dict:
    """rows: static records joined with the data (``truth``: the exact value)."""
    ok = [r for r in rows if r["estimate"] is not None]
    return {"n": len(ok), "mae": [abs(r["estimate"] - r["truth"]) for r in ok],
            "sign": [sign(r["estimate"]) == sign(r["truth"]) for r in ok if r["truth"] != 0],
            "sign0": [sign(r["estimate"]) == sign(r["truth"]) for r in ok]}


def timed_figures(rows: list[dict], nl: int) -> dict:
    """rows: timed records joined with the data (``data``: the position's solved record)."""
    f = {"n": len(rows), "mae": [], "mae_est": [], "optimal": [], "loss": [], "bounds": []}
    for r in rows:
        v = r["truth"]
        lost = v - store.move_values(r["data"], nl)[r["move"]]
        f["mae"].append(abs(r["value"] - v))
        if not r["exact"]:
            f["mae_est"].append(abs(r["value"] - v))
        f["optimal"].append(lost == 0)
        f["loss"].append(lost)
        f["bounds"].append(bound_holds(r, v))
    return f


def bound_holds(r: dict, v: int) -> bool:
    return (r["lower"] is None or r["lower"] <= v) and (r["upper"] is None or v <= r["upper"])


def check_bounds(r: dict, v: int) -> None:
    """A loud line when the timed answer ``r``'s proven bounds miss the exact value ``v``."""
    if not bound_holds(r, v):
        print(f"BOUND MISSED: {r['evaluation']} {r['time_ms']} ms on {r['board']} "
              f"{r['source']} seed {r['seed']} u={r['u']} #{r['i']} {r['drawn']}: exact {v}, "
              f"bounds [{r['lower']}, {r['upper']}]", flush=True)


def pos_of(r: dict) -> tuple:
    return (r["source"], r["seed"], r["u"], r["i"])


def band_of(counts, width: int):
    """u -> the first count of its band of ``width`` counts (from the least of ``counts``)."""
    return lambda u: counts[0] + (u - counts[0]) // width * width


def report(args, w: int, h: int, done: dict, mid: str | None) -> None:
    nl = tables(w, h).nl
    evs = args.evaluations
    recs = [dict(r) for r in done.values()
            if r["board"] == f"{w}x{h}" and r["u"] in args.counts and r["evaluation"] in evs
            and (r["evaluation"] == "fill" or r["model"] == mid)
            and (r["seed"] == args.seed and r["source"] in args.sources
                 or r["seed"] == args.gen_seed)]
    data = exact_data(Path(args.dir).expanduser() if args.dir else HELD_OUT, w, h,
                      {args.seed, args.gen_seed})
    for r in recs:  # join with the data as it is now
        d = data.get((r["source"], r["seed"], r["u"], r["i"]))
        r["data"] = d if d and d["drawn"] == r["drawn"] and d["value"] is not None else None
        r["truth"] = r["data"]["value"] if r["data"] else None
    band = band_of(args.counts, args.band_width)
    bands = sorted({band(u) for u in args.counts})

    def label(b: int) -> str:
        return f"{b}-{min(b + args.band_width - 1, args.counts[-1])}"

    for r in recs:
        if r["time_ms"] is not None and r["data"]:
            check_bounds(r, r["truth"])

    print(f"\n{w}x{h}: {len({pos_of(r) for r in recs})} positions measured (held-out seed "
          f"{args.seed}, generated seed {args.gen_seed}); evaluations {', '.join(evs)}"
          f"{f', learned model {mid}' if mid else ''}\n")
    print("Static evaluation (positions with no box to take)")
    rows = []
    for b in bands:
        in_b = [r for r in recs if band(r["u"]) == b and r["time_ms"] is None]
        npos = len({pos_of(r) for r in in_b})
        nex = len({pos_of(r) for r in in_b if r["data"]})
        if not npos:
            rows.append([label(b), 0, 0, "", "no positions measured"])
            continue
        for ev in evs:
            if not nex:
                rows.append([label(b), npos, 0, ev, "no exact values", "", "", ""])
                continue
            f = static_figures([r for r in in_b if r["evaluation"] == ev and r["data"]])
            rows.append([label(b), npos, nex, ev, f["n"], mean(f["mae"]), pct(f["sign"]),
                         pct(f["sign0"])])
    table(["undrawn", "positions", "exact values", "evaluation", "n", "MAE", "sign",
           "sign incl. 0"], rows)

    for tm in args.times:
        print(f"Timed analysis, {tm} ms, one thread")
        rows = []
        for b in bands:
            in_b = [r for r in recs if band(r["u"]) == b and r["time_ms"] == tm]
            moves = {}
            for r in in_b:
                moves.setdefault(pos_of(r), []).append(r["move"])
            same = [m[0] == m[1] for m in moves.values() if len(m) == 2]
            if not in_b:
                rows.append([label(b), "", 0, 0, "no positions measured"])
                continue
            for ev in evs:
                mine = [r for r in in_b if r["evaluation"] == ev]
                solved = [r for r in mine if r["data"]]
                f = timed_figures(solved, nl)
                figs = ([mean(f["mae"]), f"{mean(f['mae_est'])} ({len(f['mae_est'])})",
                         pct(f["optimal"]), mean(f["loss"]), pct(f["bounds"])] if solved
                        else ["no exact values" if mine else "not measured", "", "", "", ""])
                rows.append([label(b), ev, len(mine), len(solved), *figs,
                             pct([r["exact"] for r in mine]), pct(same)])
        table(["undrawn", "evaluation", "answers", "exact values", "MAE", "MAE est. (n)",
               "optimal", "loss", "bounds", "exact", "same move"], rows)

    print("Goals (fill | learned, on the positions with exact values both were measured on)")
    for title, fig, (lo, hi), tm in GOALS:
        if tm is not None and tm not in args.times or not {"fill", "learned"} <= set(evs):
            print(f"  {title} at {lo}-{hi}: not run")
            continue
        side = {ev: {pos_of(r): r for r in recs if r["evaluation"] == ev and r["time_ms"] == tm
                     and lo <= r["u"] <= hi and r["data"]} for ev in ("fill", "learned")}
        both = side["fill"].keys() & side["learned"].keys()
        texts = []
        for ev in ("fill", "learned"):
            mine = [side[ev][p] for p in both]
            if tm is None:
                f = static_figures(mine)
                texts.append(f"{ev} {pct(f['sign'])} (n {len(f['sign'])})")
            else:
                f = timed_figures(mine, nl)
                texts.append(f"{ev} " + (mean(f["mae"]) if fig == "mae" else
                                         f"{pct(f['optimal'])} / {mean(f['loss'])} boxes"))
        n = "" if tm is None else f" (n {len(both)})"
        print(f"  {title} at {lo}-{hi}: {' | '.join(texts)}{n}")


def table(head, rows) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="5x5")
    ap.add_argument("--seed", type=int, default=2, help="the held-out data seed")
    ap.add_argument("--sources", default=",".join(SOURCES))
    ap.add_argument("--undrawn", default="30-56", help="undrawn counts: 30-56, or 30,32,40-42")
    ap.add_argument("--band-width", type=int, default=2)
    ap.add_argument("--per-count", type=int, default=None,
                    help="only data positions of index < N (default: all)")
    ap.add_argument("--evaluations", default="fill,learned")
    ap.add_argument("--time-ms", default="1000", help="analysis times, a comma list")
    ap.add_argument("--generate", type=int, default=0, metavar="N",
                    help="also N fresh positions per band (no exact values)")
    ap.add_argument("--gen-seed", type=int, default=101, help="the data seed they are made of")
    ap.add_argument("--model", default=None, help="a learned model file (default: shipped)")
    ap.add_argument("--dir", default=None,
                    help="the exact data folder (default: bench/results/exact, the held-out "
                         "sets)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the results file (JSON lines)")
    ap.add_argument("--report", action="store_true", help="only print what --out holds")
    ap.add_argument("--control-moves", type=int, default=None,
                    help="learned.CONTROL_MAX_MOVES for this run (0: no control; default: the "
                         "engine's); results are kept per value")
    ap.add_argument("--deepening-share", type=float, default=None,
                    help="the timed analyses' DEEPENING_SHARE (engine/dots/search/driver.py; "
                         "default: the engine's); results are kept per share")
    args = ap.parse_args(argv)
    w, h = parse_board(args.board)
    args.counts = parse_counts(args.undrawn)
    args.sources = [s for s in args.sources.split(",") if s]
    args.evaluations = [e for e in args.evaluations.split(",") if e]
    args.times = [int(x) for x in args.time_ms.split(",") if x]
    if args.control_moves is not None:
        learned.CONTROL_MAX_MOVES = args.control_moves
    model = load_model(w, h, args.model)
    if "learned" in args.evaluations and model is None:
        print(f"no learned model for {w}x{h} (give --model): fill only", file=sys.stderr)
        args.evaluations = [e for e in args.evaluations if e != "learned"]
    out = Path(args.out).expanduser()
    done = {k: r for k, r in load(out, repair=not args.report).items()
            if r["time_ms"] is None or r.get("share") == args.deepening_share}
    if args.deepening_share is not None:
        driver.DEEPENING_SHARE = args.deepening_share
    if not args.report:
        root = Path(args.dir).expanduser() if args.dir else HELD_OUT
        band = band_of(args.counts, args.band_width)
        bands = [[u for u in args.counts if band(u) == b] for b in sorted(set(map(band,
                                                                              args.counts)))]
        data = exact_data(root, w, h, {args.seed, args.gen_seed})
        positions = [{"source": source, "seed": seed, "u": u, "i": i, "drawn": r["drawn"]}
                     for (source, seed, u, i), r in sorted(data.items())
                     if seed == args.seed and source in args.sources and u in args.counts
                     and (args.per_count is None or i < args.per_count)]
        positions += generated(w, h, args.gen_seed, bands, args.generate)
        print(f"{len(positions)} positions, evaluations {', '.join(args.evaluations)}, "
              f"{args.time_ms} ms -> {out}", file=sys.stderr, flush=True)
        run(args, w, h, positions, done, model, data)
    report(args, w, h, done, model_id(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
