"""Engine speed: play+undo pairs per second and event-list rebuilds per second.

Usage: python bench/engine_bench.py [--seconds S]
Prints one line per measurement. The baseline in the same run is a plain dict-of-lines board
(no bitboards, no kept structures), so the ratio shows what the representation buys.
"""

from __future__ import annotations

import argparse
import random
import time

from boxfish.engine import load_game, replay


def random_line_orders(game, n, rng):
    out = []
    for _ in range(n):
        lines = list(range(game.num_actions))
        rng.shuffle(lines)
        out.append(lines)
    return out


def play_undo_pairs(game, orders, seconds):
    """Play each random game to the end with play_unchecked (action ids), then undo it all
    with undo_unchecked; count pairs."""
    state = game.new_state()
    pairs = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for lines in orders:
            for ln in lines:
                state.play_unchecked(ln)
            for _ in lines:
                state.undo_unchecked()
            pairs += len(lines)
    return pairs / (time.perf_counter() - start)


def checked_play_undo(game, orders, seconds):
    """The same through the checked path: play((x, y, o)) validates every move."""
    orders = [[game.action_to_move(ln) for ln in lines] for lines in orders]
    state = game.new_state()
    pairs = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for ms in orders:
            for m in ms:
                state.play(m)
            for _ in ms:
                state.undo()
            pairs += len(ms)
    return pairs / (time.perf_counter() - start)


def naive_play_undo(game, orders, seconds):
    """Baseline: lines in a set, boxes checked by looking up their four lines."""
    geo = game.geometry
    pairs = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for lines in orders:
            drawn = set()
            scores = [0, 0]
            player = 0
            stack = []
            for ln in lines:
                drawn.add(ln)
                done = sum(1 for b in geo.line_boxes[ln]
                           if all(x in drawn for x in geo.box_lines[b]))
                stack.append((ln, done, player))
                if done:
                    scores[player] += done
                else:
                    player = 1 - player
            while stack:
                ln, done, player = stack.pop()
                drawn.discard(ln)
                scores[player] -= done
            pairs += len(lines)
    return pairs / (time.perf_counter() - start)


def rebuilds(game, orders, seconds, n_events=60):
    events_lists = [[(i + 1, game.geometry.moves[ln]) for i, ln in enumerate(lines[:n_events])]
                    for lines in orders]
    count = 0
    events = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for evs in events_lists:
            replay(game, evs)
            count += 1
            events += len(evs)
    took = time.perf_counter() - start
    return count / took, events / took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = ap.parse_args()
    rng = random.Random(1)
    print(f"{'measurement':44s} {'per second':>14s}")
    for w, h in ((5, 5), (10, 10)):
        game = load_game("dots-and-boxes", width=w, height=h)
        orders = random_line_orders(game, 20, rng)
        fast = play_undo_pairs(game, orders, args.seconds)
        checked = checked_play_undo(game, orders, args.seconds)
        naive = naive_play_undo(game, orders, args.seconds)
        print(f"{f'{w}x{h} play+undo pairs (unchecked)':44s} {fast:14,.0f}")
        print(f"{f'{w}x{h} play+undo pairs (checked)':44s} {checked:14,.0f}")
        print(f"{f'{w}x{h} baseline set-of-lines play+undo':44s} {naive:14,.0f}"
              f"   (State/baseline = {fast / naive:.2f}x)")
    for w, h in ((5, 5), (10, 10)):
        game = load_game("dots-and-boxes", width=w, height=h)
        n = min(60, game.num_lines)
        orders = random_line_orders(game, 20, rng)
        per_s, ev_s = rebuilds(game, orders, args.seconds, n)
        print(f"{f'{w}x{h} rebuilds from {n}-move event lists':44s} {per_s:14,.0f}"
              f"   ({ev_s:,.0f} events/s)")


if __name__ == "__main__":
    main()
