"""Control, where it can be decided (issue 32, part 4): Nimstring values against the static
evaluations, on the held-out exact data.

For each held-out position where no box can be taken (``bench/results/exact``, ``--seed`` 2),
per band of undrawn lines:

* ``decided``: the share whose Nimstring value was found within ``--budget`` component values
  (:class:`boxfish.engine.dots.nimstring.Nimstring`, a fresh memo per position), with the
  median and slowest time;
* ``sign``, over the decided positions whose exact value is not 0: how often "the player to
  move has control" (a value other than 0) agrees with "the player to move wins boxes" (the
  exact value > 0), beside the fill and learned evaluations' signs on the same positions;
* over every position: the sign and mean absolute error of the learned evaluation, and of the
  learned evaluation corrected by control where it is decided (``--rule``):
  ``sign``: the estimate's size with control's sign, at least 1 box;
  ``flip``: the estimate where its sign agrees with control, else 1 box with control's sign;
* ``moves``: the median count of non-loony moves (the Nimstring search's width at the root).

Results are appended to ``--out`` (JSON lines, by position and budget) as they come, so a run
resumes; ``--report`` prints the tables only:

    python bench/dots_nimstring_bench.py --undrawn 30-40 --budget 100000
    python bench/dots_nimstring_bench.py --board 4x5 --undrawn 30-39
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from dots_estimate_bench import HELD_OUT, Static, exact_data, load_model, pct, sign

from boxfish.engine.dots.learn.data import parse_board, parse_counts
from boxfish.engine.dots.nimstring import Nimstring, NimstringBudgetExceeded, non_loony_moves

DEFAULT_OUT = "~/.cache/boxfish/bench/nimstring.jsonl"


def corrected(estimate: int, control: bool | None, rule: str) -> int:
    """The learned estimate corrected by control (None: not decided)."""
    if control is None:
        return estimate
    want = 1 if control else -1
    if rule == "sign":
        return want * max(1, abs(estimate))
    return estimate if sign(estimate) == want else want


def measure(w: int, h: int, drawn: int, budget: int, static: Static) -> dict | None:
    ns = Nimstring(w, h)
    start = time.perf_counter()
    try:
        nim = ns.value(drawn, budget)
    except NimstringBudgetExceeded:
        nim = None
    except ValueError:
        return None  # a box can be taken
    return {"nim": nim, "ms": round((time.perf_counter() - start) * 1000, 2),
            "components": len(ns), "moves": len(non_loony_moves(ns.geo, drawn)),
            "fill": static(drawn, "fill"), "learned": static(drawn, "learned")}


def report(rows: list[dict], band_width: int, rules) -> None:
    bands: dict[int, list[dict]] = {}
    for r in rows:
        bands.setdefault(r["u"] - r["u"] % band_width, []).append(r)
    head = ["undrawn", "n", "decided", "median ms", "max ms", "moves", "sign nim", "fill",
            "learned"] + [f"learned: sign / MAE / +{rule}" for rule in rules]
    print(" | ".join(head))
    total: list[dict] = []
    for b in sorted(bands) + [None]:
        rs = total if b is None else bands[b]
        if b is not None:
            total += rs
        dec = [r for r in rs if r["nim"] is not None]
        dec_nz = [r for r in dec if r["truth"] != 0]
        nz = [r for r in rs if r["truth"] != 0]
        ms = [r["ms"] for r in rs]
        cells = ["all" if b is None else f"{b}-{b + band_width - 1}", str(len(rs)),
                 f"{pct([r['nim'] is not None for r in rs])}",
                 f"{statistics.median(ms):.1f}", f"{max(ms):.0f}",
                 f"{statistics.median(r['moves'] for r in rs):.0f}",
                 f"{pct([(r['nim'] != 0) == (r['truth'] > 0) for r in dec_nz])} (n{len(dec_nz)})",
                 pct([sign(r['fill']) == sign(r['truth']) for r in dec_nz]),
                 pct([sign(r['learned']) == sign(r['truth']) for r in dec_nz])]
        for rule in rules:
            est = [(corrected(r["learned"], None if r["nim"] is None else r["nim"] != 0, rule),
                    r) for r in rs]
            cells.append(
                f"{pct([sign(r['learned']) == sign(r['truth']) for r in nz])} / "
                f"{statistics.mean(abs(r['learned'] - r['truth']) for r in rs):.2f} -> "
                f"{pct([sign(e) == sign(r['truth']) for e, r in est if r['truth'] != 0])} / "
                f"{statistics.mean(abs(e - r['truth']) for e, r in est):.2f}")
        print(" | ".join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="5x5")
    ap.add_argument("--seed", type=int, default=2, help="the held-out data seed")
    ap.add_argument("--undrawn", default="30-44")
    ap.add_argument("--band-width", type=int, default=3)
    ap.add_argument("--budget", type=int, default=100_000,
                    help="component values at most per position")
    ap.add_argument("--rules", default="sign,flip")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    w, h = parse_board(args.board)
    counts = set(parse_counts(args.undrawn))
    out = Path(args.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done[(r["board"], r["drawn"], r["budget"])] = r
    data = exact_data(HELD_OUT, w, h, {args.seed})
    static = Static(w, h, load_model(w, h, None))
    rows = []
    with out.open("a") as f:
        for (source, _seed, u, i), rec in sorted(data.items(), key=lambda kv: kv[0][2]):
            if u not in counts or rec.get("value") is None:
                continue
            k = (args.board, rec["drawn"], args.budget)
            r = done.get(k)
            if r is None and not args.report:
                m = measure(w, h, int(rec["drawn"], 16), args.budget, static)
                r = {"board": args.board, "drawn": rec["drawn"], "budget": args.budget,
                     "skip": m is None, **(m or {})}
                f.write(json.dumps(r) + "\n")
                f.flush()
                print(f"{source} u{u} #{i}: exact {rec['value']:+d} nim {r.get('nim')} "
                      f"{r.get('ms')} ms", file=sys.stderr, flush=True)
            if r is not None and not r["skip"]:
                rows.append({**r, "u": u, "truth": rec["value"]})
    if rows:
        report(rows, args.band_width, [x for x in args.rules.split(",") if x])
    return 0


if __name__ == "__main__":
    sys.exit(main())
