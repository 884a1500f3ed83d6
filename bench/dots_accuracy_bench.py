"""Accuracy where proofs do not fit (issue 23): how good is the 1-second best move on 5x5
positions too big to prove in that second?

For each position (``--positions`` of them, 5x5 by default, undrawn lines spread over
``--undrawn``, half from each generator of :mod:`boxfish.engine.dots.positions`, no box to
take at the root, from ``--seed``):

1. a timed analysis of ``--time-ms`` (the move a user of the API would be given);
2. the position's exact value, by an untimed solve (capped at ``--cap`` seconds);
3. the exact value of the timed analysis' move, by an untimed solve of the position after it
   (on the same table, which the first solve has filled).

The move is optimal when (3) equals (2); the loss is (2) - (3) in boxes. A position whose
solves do not finish within the cap is recorded as unsolved and left out of the figures; a
later run with a larger cap tries it again.

Every finished position is appended at once to ``--out`` (JSON lines), and a run skips the
positions already solved there, so a long run can be stopped (Ctrl-C, SIGTERM) and resumed:

    nohup python bench/dots_accuracy_bench.py --cap 3600 &
    python bench/dots_accuracy_bench.py --report

``--start K`` begins at position #K (then wraps around): positions #0-#4 are the first
generator's, #5-#9 the other's.

The results are kept in the repository (``bench/results/dots_accuracy.jsonl``), so a run
started in one session goes on in the next.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_solve_bench import say, table

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.game import dots_and_boxes
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position

GiB = 1 << 30


def positions(w: int, h: int, undrawn: list[int], n: int, seed: int):
    """``n`` positions as (undrawn, generator, drawn), the undrawn counts in turn."""
    rng = random.Random(seed)
    t = tables(w, h)
    out = []
    while len(out) < n:
        u = undrawn[len(out) % len(undrawn)]
        gen = "safe" if len(out) // len(undrawn) % 2 == 0 else "biased"
        p = (safe_play(rng, w, h, u) if gen == "safe"
             else biased_play(rng, w, h, u, rng.uniform(0.7, 0.9)))
        if 3 not in t.valences(p.drawn):
            out.append((u, gen, p.drawn))
    return out


def exact(w, h, drawn, caches, cap, threads):
    """The exact value of ``drawn`` (None when the cap ran out first) and the seconds."""
    start = time.perf_counter()
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap * 1000)), multipv=1, solve=True,
                         start=start, caches=caches, core="c", threads=threads)
    return (a.value if a.exact else None), time.perf_counter() - start


def measure(w, h, undrawn, gen, drawn, args) -> dict:
    t = tables(w, h)
    timed = analyse_position(w, h, drawn, Limit(time_ms=args.time_ms), multipv=1,
                             core="c", threads=args.threads)
    move = dots_and_boxes(w, h).move_to_action(timed.best_move)
    caches = DotsCaches(t, table_bytes=int(args.table_gb * GiB))
    value, s_root = exact(w, h, drawn, caches, args.cap, args.threads)
    rec = {"w": w, "h": h, "undrawn": undrawn, "generator": gen, "drawn": drawn,
           "move": move, "timed_value": timed.value, "timed_exact": timed.exact,
           "timed_depth": timed.depth, "value": value, "root_s": round(s_root, 1),
           "cap": args.cap}
    if value is None:
        return rec
    child = drawn | 1 << move
    took = t.completes(drawn, move)
    cv, s_move = (0, 0.0) if child == t.full else exact(w, h, child, caches, args.cap,
                                                         args.threads)
    rec["move_s"] = round(s_move, 1)
    if cv is None:
        rec["value"] = None  # the move's value is unknown: unsolved as a whole
        return rec
    rec["move_value"] = took + cv if took else -cv
    return rec


def load(path: str) -> dict[int, dict]:
    done: dict[int, dict] = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    done[r["drawn"]] = r  # the last record of a position wins
    return done


def report(recs: list[dict], total: int) -> None:
    rows = []
    for r in recs:
        solved = r.get("move_value") is not None
        rows.append([r["undrawn"], r["generator"], f"{r['timed_value']:+d}",
                     "yes" if r["timed_exact"] else "no",
                     f"{r['value']:+d}" if solved else f"unsolved in {r['cap']:.0f} s",
                     f"{r['move_value']:+d}" if solved else "",
                     (r["value"] - r["move_value"]) if solved else "",
                     f"{r['root_s'] + r.get('move_s', 0):.0f}"])
    table(["undrawn", "generator", "1 s value", "1 s exact", "exact value", "move's value",
           "loss", "solve s"], rows)
    solved = [r for r in recs if r.get("move_value") is not None]
    if solved:
        losses = [r["value"] - r["move_value"] for r in solved]
        best = sum(x == 0 for x in losses)
        say(f"{len(solved)} of {total} positions solved ({len(recs)} tried): the timed move "
            f"is optimal in "
            f"{best} ({100 * best / len(solved):.0f}%), mean loss "
            f"{statistics.mean(losses):.2f} boxes, max {max(losses)}")
    else:
        say(f"none of {total} positions solved yet ({len(recs)} tried)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="5x5")
    ap.add_argument("--undrawn", default="46,47,48,49,50")
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--time-ms", type=int, default=1000)
    ap.add_argument("--cap", type=float, default=1800.0, help="seconds per exact solve")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--table-gb", type=float, default=4.0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results", "dots_accuracy.jsonl"),
                    help="the results file (default: the one kept in the repository, so that "
                         "a later session resumes)")
    ap.add_argument("--start", type=int, default=0,
                    help="try the positions from #START on, then the ones before it (a session "
                         "short of time can begin with the other generator's)")
    ap.add_argument("--report", action="store_true", help="only print what --out holds")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    pos = positions(w, h, [int(x) for x in args.undrawn.split(",")], args.positions, args.seed)
    done = load(args.out)
    if not args.report:
        order = list(range(len(pos)))
        start = args.start % len(pos)
        for i in order[start:] + order[:start]:
            u, gen, drawn = pos[i]
            old = done.get(drawn)
            if old is not None and (old.get("move_value") is not None
                                    or old["cap"] >= args.cap):
                continue
            rec = measure(w, h, u, gen, drawn, args)
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            done[drawn] = rec
            say(f"  #{i} {u} undrawn ({gen}): 1 s move {rec['move']}, value "
                f"{rec['value']}, move's value {rec.get('move_value')}, "
                f"{rec['root_s'] + rec.get('move_s', 0):.0f} s")
    say(f"\n{w}x{h}, {args.time_ms} ms best move against untimed solves (seed {args.seed}):")
    report([done[d] for _u, _g, d in pos if d in done], len(pos))
    return 0


if __name__ == "__main__":
    sys.exit(main())
