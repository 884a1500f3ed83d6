"""Playing strength of the Dots-and-Boxes search on 5x5 (issue 3).

Opponents:
  mcts    OpenSpiel's MCTSBot, random rollouts (``--sims`` simulations per move, 1000 default)
  greedy  takes every box offered, otherwise a random safe line, otherwise the line that
          hands over the fewest boxes

Games alternate who starts. Progress: one line per finished game (flushed), then a table of
wins / draws / losses and the average final margin (our boxes minus theirs).

    python bench/dots_strength_bench.py --opponent greedy --games 100 --time 200
    nohup python bench/dots_strength_bench.py --opponent mcts --games 40 --time 500 \
        > /tmp/dots_strength_mcts.log 2>&1 &
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from boxfish.engine import load_game
from boxfish.engine.analysis import Limit
from boxfish.engine.dots import DotsState
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.table import TranspositionTable


def boxes_handed(pos: DotsState, line: int) -> int:
    """How many boxes the opponent can take in a row after we draw ``line``."""
    t = tables(pos.game.width, pos.game.height)
    d = pos.drawn | 1 << line
    n = 0
    while True:
        vals = t.valences(d)
        cap = [b for b in range(t.nb) if vals[b] == 3]
        if not cap:
            return n
        for b in cap:
            missing = t.box_mask[b] & ~d
            if missing:
                ln = missing.bit_length() - 1
                n += t.completes(d, ln)
                d |= 1 << ln


def greedy_move(pos: DotsState, rng: random.Random) -> int:
    t = tables(pos.game.width, pos.game.height)
    free = pos.legal_actions()
    caps = [ln for ln in free if t.completes(pos.drawn, ln)]
    if caps:
        return rng.choice(caps)
    vals = t.valences(pos.drawn)
    safe = [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]
    if safe:
        return rng.choice(safe)
    cost = {ln: boxes_handed(pos, ln) for ln in free}
    least = min(cost.values())
    return rng.choice([ln for ln in free if cost[ln] == least])


class MctsPlayer:
    def __init__(self, w: int, h: int, sims: int, seed: int) -> None:
        import pyspiel
        from open_spiel.python.algorithms import mcts

        self.game = pyspiel.load_game(f"dots_and_boxes(num_rows={h},num_cols={w})")
        rng = __import__("numpy").random.RandomState(seed)
        self.bot = mcts.MCTSBot(self.game, uct_c=2.0, max_simulations=sims,
                                evaluator=mcts.RandomRolloutEvaluator(1, rng),
                                random_state=rng, solve=True)

    def move(self, actions: list[int]) -> int:
        state = self.game.new_initial_state()
        for a in actions:
            state.apply_action(a)
        return self.bot.step(state)


def play_game(w, h, we_start: bool, opponent, time_ms: int, rng, tt_entries: int):
    game = load_game("dots-and-boxes", width=w, height=h)
    pos = game.new_state()
    actions: list[int] = []
    us = 0 if we_start else 1
    # the table and the evaluation's memos, kept from move to move (fresh each game)
    caches = DotsCaches(tables(w, h), tt=TranspositionTable(tt_entries))
    think = []
    while not pos.is_terminal():
        if pos.to_move == us:
            t0 = time.perf_counter()
            a = analyse_position(w, h, pos.drawn, Limit(time_ms=time_ms), multipv=1,
                                 caches=caches)
            think.append(time.perf_counter() - t0)
            line = game.move_to_action(a.best_move)
        elif opponent == "greedy":
            line = greedy_move(pos, rng)
        else:
            line = opponent.move(actions)
        pos.play(game.action_to_move(line))
        actions.append(line)
    margin = pos.scores[us] - pos.scores[1 - us]
    return margin, max(think) if think else 0.0, actions


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--opponent", choices=("mcts", "greedy"), default="greedy")
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--time", type=int, default=200, help="our time per move, ms")
    p.add_argument("--sims", type=int, default=1000, help="MCTS simulations per move")
    p.add_argument("--size", default="5x5")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tt", type=int, default=1_000_000, help="TT entries (fresh each game)")
    args = p.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    rng = random.Random(args.seed)
    opponent = "greedy" if args.opponent == "greedy" else MctsPlayer(w, h, args.sims, args.seed)
    wins = draws = losses = 0
    margins = []
    worst = 0.0
    t_start = time.time()
    print(f"# {w}x{h} vs {args.opponent} ({args.sims} sims)" if args.opponent == "mcts"
          else f"# {w}x{h} vs greedy", f"our time {args.time} ms/move, {args.games} games",
          flush=True)
    for g in range(args.games):
        we_start = g % 2 == 0
        margin, slowest, actions = play_game(w, h, we_start, opponent, args.time, rng,
                                             args.tt)
        worst = max(worst, slowest)
        margins.append(margin)
        if margin > 0:
            wins += 1
        elif margin == 0:
            draws += 1
        else:
            losses += 1
        print(f"game {g + 1:>3}  we {'start' if we_start else 'reply'}  margin {margin:+3d}  "
              f"W/D/L {wins}/{draws}/{losses}  slowest move {slowest * 1000:.0f} ms  "
              f"elapsed {time.time() - t_start:.0f}s", flush=True)
        if margin < 0:  # the game, as OpenSpiel action ids, for a post-mortem
            print(f"  lost game lines: {' '.join(map(str, actions))}", flush=True)
    n = len(margins)
    print()
    print("| opponent | games | wins | draws | losses | win % | avg margin |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.opponent} | {n} | {wins} | {draws} | {losses} | "
          f"{100 * wins / max(1, n):.1f} | {statistics.mean(margins) if margins else 0:+.2f} |",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
