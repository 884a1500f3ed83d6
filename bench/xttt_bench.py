"""Extreme Tic-Tac-Toe engine benchmark: speed, depth, and strength. Prints figures.

Usage (from the repository root)::

    .venv/bin/python bench/xttt_bench.py speed [--time 16]        # nps and depth in 1 s / 16 s
    .venv/bin/python bench/xttt_bench.py random [--games 50 --time 0.1]
    .venv/bin/python bench/xttt_bench.py fixed [--games 20 --time 1 --depth 2 --seed 1000]

``speed`` searches the opening and a few middle-game positions (reached by seeded engine
self-play) and prints nodes per second and the depth completed within 1 s and within
``--time`` seconds. ``random`` plays the engine at ``--time`` s per move against a uniformly
random player, ``fixed`` against the engine itself limited to ``--depth`` plies; sides
alternate and each ``fixed`` game starts from two seeded random moves so games differ. A bonus
move is a separate call with the same time. Long runs: ``nohup ... > /tmp/xttt_fixed.log &``;
every game prints a progress line.
"""

from __future__ import annotations

import argparse
import random
import time

from boxfish import engine

GAME = engine.load_game("extreme-tictactoe")


def _p(*args) -> None:
    print(*args, flush=True)


def middle_game(seed: int, plies: int):
    """A position after ``plies`` moves: 4 seeded random moves, then depth-2 self-play."""
    rng = random.Random(seed)
    s = GAME.new_state()
    while s.serial < plies and not s.is_terminal():
        if s.serial < 4:
            s.play(rng.choice(s.legal_moves()))
        else:
            s.play(engine.analyse(s, time_ms=None, depth=2).best_move)
    return s


def speed(args) -> None:
    positions = [("opening", GAME.new_state())]
    for seed, plies in [(1, 20), (2, 40), (3, 60), (4, 90)]:
        s = middle_game(seed, plies)
        if not s.is_terminal():
            positions.append((f"middle seed {seed} ply {s.serial}", s))
    _p(f"{'position':<26} {'budget':>7} {'depth':>5} {'nodes':>9} {'nps':>8} {'time s':>7}"
       "  best  value  proven")
    total_nodes = total_time = 0.0
    for name, s in positions:
        for budget in (1.0, args.time):
            depths = []
            a = engine.analyse(s, time_ms=int(budget * 1000),
                               on_progress=lambda p, d=depths: d.append((p.depth, p.time_ms)))
            total_nodes += a.nodes
            total_time += a.time_ms / 1000
            _p(f"{name:<26} {budget:>6.1f}s {a.depth:>5} {a.nodes:>9} {a.nps:>8} "
               f"{a.time_ms / 1000:>7.2f}  {a.best_move}  {a.value:.0f}  {a.proven}")
            _p("    depth reached at ms: " + ", ".join(f"{d}:{t:.0f}" for d, t in depths))
    _p(f"overall nodes per second: {total_nodes / total_time:.0f}")


def _random_player(rng):
    return lambda s: rng.choice(s.legal_moves())


def _engine_player(time_s: float):
    return lambda s: engine.analyse(s, time_ms=int(time_s * 1000)).best_move


def _fixed_player(depth: int):
    return lambda s: engine.analyse(s, time_ms=None, depth=depth).best_move


def play_game(players, opening_moves: int, rng) -> dict:
    """Play one game; ``players[p]`` picks a move for player p."""
    s = GAME.new_state()
    while not s.is_terminal():
        if s.serial < opening_moves:
            s.play(rng.choice(s.legal_moves()))
        else:
            s.play(players[s.to_move](s))
    return {"result": s.result(), "ending": s.ending, "moves": s.serial}


_SINGULAR = {"pattern wins": "pattern win", "points wins": "points win", "ties": "tie",
             "losses": "loss"}


def match(args, opponent_name: str, make_opponent, opening_moves: int) -> None:
    tally = {"pattern wins": 0, "points wins": 0, "ties": 0, "losses": 0}
    t0 = time.monotonic()
    for g in range(args.games):
        rng = random.Random(args.seed + g)
        side = g % 2  # the engine plays x in even games, o in odd ones
        players = [None, None]
        players[side] = _engine_player(args.time)
        players[1 - side] = make_opponent(rng)
        res = play_game(players, opening_moves, rng)
        winner = res["result"]["winner"]
        if winner == side:
            key = "pattern wins" if res["ending"] == "pattern" else "points wins"
        elif winner is None:
            key = "ties"
        else:
            key = "losses"
        tally[key] += 1
        done = g + 1
        wins = tally["pattern wins"] + tally["points wins"]
        _p(f"game {done}/{args.games} engine={'xo'[side]} {_SINGULAR[key]:<12} "
           f"points={res['result']['points']} moves={res['moves']} | "
           f"win rate {wins}/{done} = {100 * wins / done:.1f}% "
           f"({time.monotonic() - t0:.0f} s)")
    wins = tally["pattern wins"] + tally["points wins"]
    _p(f"engine at {args.time} s/move vs {opponent_name}: {tally}; "
       f"win rate {100 * wins / args.games:.1f}% over {args.games} games")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["speed", "random", "fixed"])
    ap.add_argument("--games", type=int, default=None)
    ap.add_argument("--time", type=float, default=None, help="seconds per move (speed: budget)")
    ap.add_argument("--depth", type=int, default=2, help="depth of the fixed-depth opponent")
    ap.add_argument("--seed", type=int, default=1000, help="game g uses random seed SEED + g")
    args = ap.parse_args(argv)
    if args.mode == "speed":
        args.time = args.time or 16.0
        speed(args)
    elif args.mode == "random":
        args.games = args.games or 50
        args.time = args.time or 0.1
        match(args, "a random player", _random_player, 0)
    else:
        args.games = args.games or 20
        args.time = args.time or 1.0
        match(args, f"the engine at depth {args.depth}", lambda rng: _fixed_player(args.depth),
              2)


if __name__ == "__main__":
    main()
