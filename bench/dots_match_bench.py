"""Play (issue 32): the learned horizon evaluation (``--a``) against the fill one (``--b``).

``--games`` games on ``--size`` (5x5) from ``--games / 2`` random openings of 4 lines
(distinct lines completing no box, from ``--seed``), each opening played twice with the seats
swapped; ``--time-ms`` a move, one thread each. A line that completes a box gives the mover
another move. Each side keeps its own caches (``DotsCaches``) from move to move of a game,
fresh each game.

One line per game (opening, who moved first after it, the final boxes), then the summary:
A's wins / draws / losses, win % (wins / games; ``score`` counts a draw as half a win) and
the mean margin (A's boxes minus B's) with a 95% interval (normal approximation over the
openings' mean margins: the two games of an opening are not independent).

Every finished game is appended at once to ``--out`` (JSON lines) and a run skips the games
it holds, so a long run can be stopped and resumed; ``--report`` prints them without playing:

    python bench/dots_match_bench.py                   # learned against fill, 60 games, 200 ms
    python bench/dots_match_bench.py --report
    python bench/dots_match_bench.py --model ~/model.npz --games 20 --time-ms 100
    python bench/dots_match_bench.py --a fill --b fill --games 2 --time-ms 50   # a dry run

``--a-control N`` / ``--b-control N``: a learned side's leaves of at most N non-loony moves
take control's sign (``learned.CONTROL_MAX_MOVES``; 0: never; default: the engine's):

    python bench/dots_match_bench.py --a learned --a-control 16 --b learned --b-control 0

``--model PATH``: a learned model file (``learn/train.py --out``) instead of the shipped one
(games are kept per model, by a hash of its weights).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_estimate_bench import load, load_model, model_id

from boxfish.engine import load_game
from boxfish.engine.analysis import Limit
from boxfish.engine.dots.learn.data import parse_board
from boxfish.engine.dots.search import learned
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.learned import EVALUATIONS

DEFAULT_OUT = "~/.cache/boxfish/bench/match.jsonl"
OPENING_LINES = 4


def openings(w: int, h: int, n: int, seed: int) -> list[list[int]]:
    """``n`` openings of ``OPENING_LINES`` distinct lines that complete no box (the first
    ones are the same whatever ``n``)."""
    t = tables(w, h)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        lines = rng.sample(range(t.nl), OPENING_LINES)
        if 4 not in t.valences(sum(1 << ln for ln in lines)):
            out.append(lines)
    return out


def play(w: int, h: int, opening: list[int], a_first: bool, args) -> dict:
    """One game from ``opening``: A (``args.a``) moves first after it when ``a_first``."""
    game = load_game("dots-and-boxes", width=w, height=h)
    pos = game.new_state()
    for ln in opening:
        pos.play(game.action_to_move(ln))
    a_seat = pos.to_move if a_first else 1 - pos.to_move
    evaluation = {a_seat: args.a, 1 - a_seat: args.b}
    control = {a_seat: args.a_control, 1 - a_seat: args.b_control}
    caches = {seat: DotsCaches(tables(w, h)) for seat in (0, 1)}
    moves, slowest = [], 0.0
    while not pos.is_terminal():
        seat = pos.to_move
        learned.CONTROL_MAX_MOVES = control[seat]
        start = time.perf_counter()
        a = analyse_position(w, h, pos.drawn, Limit(time_ms=args.time_ms), threads=1,
                             caches=caches[seat], evaluation=evaluation[seat])
        slowest = max(slowest, time.perf_counter() - start)
        ln = game.move_to_action(a.best_move)
        pos.play(game.action_to_move(ln))
        moves.append(ln)
    return {"a_boxes": pos.scores[a_seat], "b_boxes": pos.scores[1 - a_seat], "moves": moves,
            "slowest_ms": round(slowest * 1000)}


def key(r: dict) -> tuple:
    return (r["board"], r["time_ms"], r["seed"], r["opening"], r["a_first"], r["a"], r["b"],
            r["model"], r.get("a_control"), r.get("b_control"))


def game_line(g: int, r: dict) -> str:
    first = f"{r['a']} (A)" if r["a_first"] else f"{r['b']} (B)"
    return (f"game {g + 1:>3}  opening {r['opening']:>3}  {first:>11} starts  "
            f"{r['a']} {r['a_boxes']:>2} - {r['b']} {r['b_boxes']:>2}  "
            f"margin {r['a_boxes'] - r['b_boxes']:+3d}  slowest move {r['slowest_ms']} ms")


def summary(recs: list[dict], a: str, b: str) -> None:
    n = len(recs)
    if not n:
        print("no games yet")
        return
    margins = [r["a_boxes"] - r["b_boxes"] for r in recs]
    wins, draws = sum(m > 0 for m in margins), sum(m == 0 for m in margins)
    by_opening: dict[int, list[int]] = {}
    for r, m in zip(recs, margins, strict=True):
        by_opening.setdefault(r["opening"], []).append(m)
    means = [statistics.mean(ms) for ms in by_opening.values()]
    m = statistics.mean(means)
    half = 1.96 * statistics.stdev(means) / math.sqrt(len(means)) if len(means) > 1 else None
    print(f"\n{a} (A) against {b} (B), {n} games from {len(means)} openings:")
    print(f"  A won {wins}, drew {draws}, lost {n - wins - draws}: win {100 * wins / n:.1f}%, "
          f"score {100 * (wins + draws / 2) / n:.1f}%")
    ci = ("needs two openings" if half is None
          else f"{m - half:+.2f} .. {m + half:+.2f} (over the openings)")
    print(f"  mean margin (A's boxes minus B's) {statistics.mean(margins):+.2f}, 95% interval "
          f"{ci}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="5x5")
    ap.add_argument("--a", default="learned", choices=EVALUATIONS, help="side A's evaluation")
    ap.add_argument("--b", default="fill", choices=EVALUATIONS, help="side B's evaluation")
    ap.add_argument("--a-control", type=int, default=None,
                    help="side A's learned.CONTROL_MAX_MOVES (default: the engine's)")
    ap.add_argument("--b-control", type=int, default=None,
                    help="side B's learned.CONTROL_MAX_MOVES (default: the engine's)")
    ap.add_argument("--games", type=int, default=60, help="games (two per opening)")
    ap.add_argument("--time-ms", type=int, default=200, help="time a move")
    ap.add_argument("--seed", type=int, default=1, help="the openings' seed")
    ap.add_argument("--model", default=None, help="a learned model file (default: shipped)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the results file (JSON lines)")
    ap.add_argument("--report", action="store_true", help="only print what --out holds")
    args = ap.parse_args(argv)
    w, h = parse_board(args.size)
    for side in ("a_control", "b_control"):
        if getattr(args, side) is None:
            setattr(args, side, learned.CONTROL_MAX_MOVES)
    model = load_model(w, h, args.model)
    if "learned" in (args.a, args.b) and model is None:
        ap.error(f"no learned model for {w}x{h}: give --model")
    mid = model_id(model) if "learned" in (args.a, args.b) else None
    out = Path(args.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    done = load(out, key, repair=not args.report)
    ops = openings(w, h, (args.games + 1) // 2, args.seed)
    print(f"# {w}x{h}: {args.a} (A, control {args.a_control}) against {args.b} (B, control "
          f"{args.b_control}), {args.time_ms} ms a move, "
          f"{args.games} games, openings of seed {args.seed}"
          f"{f', learned model {mid}' if mid else ''}", flush=True)
    recs = []
    for g in range(args.games):
        k, a_first = g // 2, g % 2 == 0
        rec = {"board": f"{w}x{h}", "time_ms": args.time_ms, "seed": args.seed, "opening": k,
               "lines": ops[k], "a_first": a_first, "a": args.a, "b": args.b, "model": mid,
               "a_control": args.a_control, "b_control": args.b_control}
        old = done.get(key(rec))
        if old is None:
            if args.report:
                continue
            rec.update(play(w, h, ops[k], a_first, args))
            with open(out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            old = rec
        recs.append(old)
        print(game_line(g, old), flush=True)
    summary(recs, args.a, args.b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
