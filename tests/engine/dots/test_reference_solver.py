"""The reference solver (tests/engine/dots/reference) against independent answers: the plain
memoised minimax of test_search_exact, OpenSpiel's own search, and the known values of empty
boards. It is the oracle the engine's benches are checked against, so it is checked first.

``test_solve_times_on_5x5`` prints how long it takes on 5x5 mid-game positions (run pytest
with ``-s`` to see the figures; ``BOXFISH_REFERENCE_TIMING=1`` adds positions with 40 undrawn
lines, which take tens of seconds each). No time is asserted."""

from __future__ import annotations

import os
import random
import time

import pytest

from boxfish.engine import load_game
from boxfish.engine.dots.positions import biased_play, safe_play
from tests.engine.dots.reference import (
    ReferenceGaveUp,
    clear_table,
    last_nodes,
    reference_move_values,
    reference_value,
)
from tests.engine.dots.test_search_exact import brute


def num_lines(w: int, h: int) -> int:
    return (h + 1) * w + h * (w + 1)


def random_drawn(rng: random.Random, w: int, h: int, free: int) -> int:
    nl = num_lines(w, h)
    return sum(1 << ln for ln in rng.sample(range(nl), nl - free))


def completes(w: int, h: int, drawn: int, line: int) -> int:
    """Boxes that drawing ``line`` completes (from the layout, as ``brute`` has it)."""
    nh = (h + 1) * w
    child = drawn | 1 << line
    n = 0
    for r in range(h):
        for c in range(w):
            left = nh + r * (w + 1) + c
            m = 1 << (r * w + c) | 1 << ((r + 1) * w + c) | 1 << left | 1 << (left + 1)
            n += bool(m >> line & 1 and child & m == m)
    return n


@pytest.mark.parametrize("w,h,expected", [(1, 1, -1), (2, 2, 2), (2, 3, -2), (3, 2, -2),
                                          (3, 3, -3), (1, 2, 0), (2, 1, 0)])
def test_spec_values_from_empty_board(w, h, expected):
    assert reference_value(w, h, 0) == expected


def test_random_positions_match_brute_force():
    rng = random.Random(20260601)
    sizes = [(1, 1), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3), (1, 4), (2, 4), (4, 2)]
    for _ in range(300):
        w, h = rng.choice(sizes)
        free = rng.randint(0, min(num_lines(w, h), 12))
        drawn = random_drawn(rng, w, h, free)
        assert reference_value(w, h, drawn) == brute(w, h, drawn), (w, h, hex(drawn))


def test_positions_from_play_match_brute_force():
    """Positions of both generators (chains, captures pending) on small boards, and near-end
    positions of big boards of up to 64 lines."""
    rng = random.Random(99)
    for i in range(120):
        w, h = rng.choice([(2, 3), (3, 3), (2, 4), (3, 4), (4, 3)])
        undrawn = rng.randint(4, 13)
        p = (safe_play(rng, w, h, undrawn) if i % 2 else
             biased_play(rng, w, h, undrawn, rng.uniform(0.5, 1.0)))
        assert reference_value(w, h, p.drawn) == brute(w, h, p.drawn), (w, h, hex(p.drawn))
    for w, h in [(5, 5), (4, 6), (6, 4), (3, 8), (1, 21), (21, 1)]:
        assert num_lines(w, h) <= 64
        for _ in range(4):
            p = biased_play(rng, w, h, rng.randint(6, 11), 0.8)
            assert reference_value(w, h, p.drawn) == brute(w, h, p.drawn), (w, h, hex(p.drawn))


def test_move_values_are_each_lines_value():
    rng = random.Random(5)
    for _ in range(40):
        w, h = rng.choice([(2, 2), (2, 3), (3, 3), (1, 4)])
        drawn = random_drawn(rng, w, h, rng.randint(1, 11))
        values = reference_move_values(w, h, drawn)
        free = [ln for ln in range(num_lines(w, h)) if not drawn >> ln & 1]
        assert sorted(values) == free
        for ln, v in values.items():
            c = completes(w, h, drawn, ln)
            child = brute(w, h, drawn | 1 << ln)
            assert v == (c + child if c else -child), (w, h, hex(drawn), ln)
        assert max(values.values()) == reference_value(w, h, drawn)
        some = free[::2]
        assert reference_move_values(w, h, drawn, lines=some) == {ln: values[ln] for ln in some}


def test_finished_board_and_bad_input():
    full = (1 << num_lines(2, 2)) - 1
    assert reference_value(2, 2, full) == 0
    assert reference_move_values(2, 2, full) == {}
    with pytest.raises(ValueError):
        reference_value(5, 6, 0)  # 71 lines
    with pytest.raises(ValueError):
        reference_value(2, 2, 1 << 12)  # a line off the board
    with pytest.raises(ValueError):
        reference_move_values(2, 2, 1, lines=[0])  # a drawn line


def test_gives_up_at_its_limits_instead_of_hanging():
    with pytest.raises(ReferenceGaveUp):
        reference_value(5, 5, 0, max_nodes=20_000)
    t0 = time.perf_counter()
    with pytest.raises(ReferenceGaveUp):
        reference_value(5, 5, 0, max_seconds=0.2)
    assert time.perf_counter() - t0 < 5
    with pytest.raises(ReferenceGaveUp):
        reference_move_values(5, 5, 0, max_seconds=0.2)
    # what it learnt before giving up leaves later answers right
    assert reference_value(3, 3, 0) == -3


def test_signs_agree_with_openspiel_on_2x2():
    """OpenSpiel scores a game win/draw/loss: its alpha-beta value for the player to move must
    have the sign of (their boxes so far - the opponent's) + the reference value."""
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import minimax

    sgame = pyspiel.load_game("dots_and_boxes(num_rows=2,num_cols=2)")
    game = load_game("dots-and-boxes", width=2, height=2)
    rng = random.Random(11)
    checked = 0
    for plies in (3, 4, 5, 5, 6, 6, 7, 8, 9, 10):
        theirs = sgame.new_initial_state()
        ours = game.new_state()
        for _ in range(plies):
            action = rng.choice(theirs.legal_actions())
            theirs.apply_action(action)
            ours.play_unchecked(action)
        if theirs.is_terminal():
            continue
        player = theirs.current_player()
        assert player == ours.to_move
        value, _ = minimax.alpha_beta_search(sgame, state=theirs.clone(),
                                             maximizing_player_id=player)
        s = ours.scores
        margin = s[player] - s[1 - player] + reference_value(2, 2, ours.drawn)
        assert (margin > 0) - (margin < 0) == round(value), (plies, hex(ours.drawn))
        checked += 1
    assert checked >= 8


def test_solve_times_on_5x5(capsys):
    """Prints the time of each solve from an empty table (no time is asserted); the first
    value at 36 undrawn lines is checked against the best of its move values."""
    slow = bool(os.environ.get("BOXFISH_REFERENCE_TIMING"))
    plan = [(36, 3), (38, 3), (40, 3)] if slow else [(36, 2), (38, 1)]
    rng = random.Random(2026)
    lines = []
    for undrawn, count in plan:
        times = []
        for i in range(count):
            p = safe_play(rng, 5, 5, undrawn)
            clear_table()
            t0 = time.perf_counter()
            v = reference_value(5, 5, p.drawn, max_seconds=300)
            secs = time.perf_counter() - t0
            nodes = last_nodes()
            times.append(secs)
            lines.append(f"5x5 {undrawn} undrawn #{i + 1}: value {v:+d}  {secs:6.2f}s  "
                         f"{nodes:>12,} nodes  drawn {p.drawn:#x}")
            if i == 0 and undrawn == 36:
                assert max(reference_move_values(5, 5, p.drawn, max_seconds=600).values()) == v
        lines.append(f"5x5 {undrawn} undrawn: mean {sum(times) / len(times):.2f}s, "
                     f"max {max(times):.2f}s over {count}")
    with capsys.disabled():
        print("\nreference solver, 5x5 safe-play positions (fresh table each):")
        for line in lines:
            print("  " + line)
