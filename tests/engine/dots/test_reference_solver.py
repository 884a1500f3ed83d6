"""The reference solver (tests/engine/dots/reference) against independent answers: the plain
memoised minimax of test_search_exact, OpenSpiel's own search, the known values of empty
boards, and values counted by hand (simple loony endgames). It is the oracle the engine's
tests and benches are checked against, so it is checked first, on boards of up to 64 lines
(64-bit masks) and of 65 to 127 lines (128-bit masks, lines past 63 included).

Its speed is measured by bench/reference_solver_bench.py, not here: no time is asserted."""

from __future__ import annotations

import json
import random
import time

import pytest

from boxfish.engine import load_game
from boxfish.engine.dots.positions import biased_play, safe_play
from tests.engine.dots import reference
from tests.engine.dots.reference import (
    ReferenceGaveUp,
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


WIDE = [(5, 6), (6, 5), (6, 6), (7, 7), (8, 7), (7, 8), (12, 4), (4, 12), (1, 42), (42, 1)]


def test_boards_of_more_than_64_lines_match_brute_force():
    """Boards of 71 to 127 lines (128-bit masks), near the end: random positions, and
    positions of play biased to safe moves; lines on both sides of bit 64 are drawn and
    undrawn."""
    rng = random.Random(128)
    cases = []
    for _ in range(30):
        w, h = rng.choice(WIDE)
        cases.append((w, h, random_drawn(rng, w, h, rng.randint(3, 9))))
    for _ in range(16):
        w, h = rng.choice([(6, 6), (7, 7), (8, 7), (7, 8), (12, 4)])
        p = biased_play(rng, w, h, rng.randint(5, 9), rng.uniform(0.5, 1.0))
        cases.append((w, h, p.drawn))
    high_undrawn = high_drawn = 0
    for w, h, drawn in cases:
        nl = num_lines(w, h)
        assert 64 < nl <= 127
        assert reference_value(w, h, drawn) == brute(w, h, drawn), (w, h, hex(drawn))
        undrawn_high = ((1 << nl) - 1) & ~drawn
        high_undrawn += undrawn_high >> 64 != 0
        high_drawn += drawn >> 64 != 0
    assert high_undrawn >= 25 and high_drawn == len(cases)


def loony_endgame(w: int, h: int, chain_rows, loops) -> int:
    """A w x h position of independent long chains and loops, every other line drawn: each
    row of ``chain_rows`` is a chain of w boxes from border to border (its vertical lines
    undrawn); each (r, c, k) of ``loops`` is a loop of 2k boxes around the 2 x k block of rows
    r, r + 1 and columns c to c + k - 1 (its inner lines undrawn but the middle columns'
    line between the two rows)."""
    nh = (h + 1) * w

    def vline(r, c):
        return nh + r * (w + 1) + c

    undrawn = set()
    for r in chain_rows:
        undrawn |= {vline(r, c) for c in range(w + 1)}
    for r, c, k in loops:
        undrawn |= {vline(rr, cc) for rr in (r, r + 1) for cc in range(c + 1, c + k)}
        undrawn |= {(r + 1) * w + c, (r + 1) * w + c + k - 1}
    drawn = (1 << num_lines(w, h)) - 1
    for ln in undrawn:
        drawn &= ~(1 << ln)
    # no box is left with three sides: nothing to capture, the mover must open something
    for r in range(h):
        for c in range(w):
            sides = (r * w + c, (r + 1) * w + c, vline(r, c), vline(r, c) + 1)
            assert sum(drawn >> ln & 1 for ln in sides) != 3, (r, c)
    return drawn


def loony_value(chains: tuple[int, ...], loops: tuple[int, ...]) -> int:
    """The value, for the player to move, of independent chains of 3 or more boxes and loops
    of 4 or more, counted by hand (Berlekamp, The Dots-and-Boxes Game, ch. 2-3; Buzzard and
    Ciere, Playing simple loony endgames optimally, 2014): the mover opens one; the other
    player takes it all and moves on (n + the rest's value), or takes all but the last two
    boxes of a chain, or four of a loop, and hands those back so the opener must move on
    again (n - 4, or n - 8, minus the rest's value)."""
    if not chains and not loops:
        return 0
    best = None
    for kind, comps, keep in (("chain", chains, 4), ("loop", loops, 8)):
        for i, n in enumerate(comps):
            rest_c = chains[:i] + chains[i + 1:] if kind == "chain" else chains
            rest_l = loops[:i] + loops[i + 1:] if kind == "loop" else loops
            rest = loony_value(rest_c, rest_l)
            v = -max(n + rest, n - keep - rest)
            best = v if best is None else max(best, v)
    return best


# (w, h, chain rows, loops, chains and loops (boxes)) -- small boards are also brute-forced
LOONY = [
    (3, 3, [0, 2], [], (3, 3), ()),
    (3, 3, [2], [(0, 0, 2)], (3,), (4,)),
    (7, 7, [6], [], (7,), ()),
    (7, 7, [1, 3, 5, 6], [], (7, 7, 7, 7), ()),
    (6, 6, [5], [(0, 2, 2), (2, 0, 4)], (6,), (4, 8)),
    (8, 7, [3, 6], [(0, 0, 2), (4, 0, 3)], (8, 8), (4, 6)),
    (7, 8, [0, 7], [(2, 0, 2), (2, 3, 2), (5, 1, 3)], (7, 7), (4, 4, 6)),
]


@pytest.mark.parametrize("w, h, rows, loops, chains, loop_sizes", LOONY,
                         ids=[f"{c[0]}x{c[1]}-{i}" for i, c in enumerate(LOONY)])
def test_simple_loony_endgames_have_their_hand_counted_values(w, h, rows, loops, chains,
                                                               loop_sizes):
    drawn = loony_endgame(w, h, rows, loops)
    undrawn = num_lines(w, h) - drawn.bit_count()
    assert undrawn == sum(n + 1 for n in chains) + sum(loop_sizes)
    want = loony_value(chains, loop_sizes)
    if undrawn <= 14:
        assert brute(w, h, drawn) == want  # the hand count itself, checked
    assert reference_value(w, h, drawn, max_nodes=100_000_000) == want, (w, h, hex(drawn))


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
    wide_full = (1 << num_lines(8, 7)) - 1  # 127 lines, the most a board has below 128
    assert reference_value(8, 7, wide_full) == 0
    assert reference_value(7, 8, wide_full & ~(1 << 126)) == 1  # the last line closes a box
    for w, h in [(8, 8), (1, 43), (9, 7), (0, 3), (3, -1)]:  # 144, 130, 142 lines; no board
        with pytest.raises(ValueError):
            reference_value(w, h, 0)
    with pytest.raises(ValueError):
        reference_value(2, 2, 1 << 12)  # a line off the board
    with pytest.raises(ValueError):
        reference_value(5, 6, 1 << 71)  # one past 5x6's 71 lines
    with pytest.raises(ValueError):
        reference_value(8, 7, 1 << 127)  # one past 8x7's 127 lines, in the upper half
    with pytest.raises(ValueError):
        reference_value(8, 7, 1 << 128)
    with pytest.raises(ValueError):
        reference_value(3, 3, -1)
    with pytest.raises(ValueError):
        reference_move_values(2, 2, 1, lines=[0])  # a drawn line
    with pytest.raises(ValueError):
        reference_move_values(6, 6, 0, lines=[84])  # off the board


def test_the_compiled_solver_refuses_masks_off_the_board():
    """The C entry point itself (past the wrapper's checks) refuses a line off the board in
    either 64-bit half of the mask, and takes every line of the board in both."""
    import ctypes

    lib = reference._library()
    value, nodes = ctypes.c_int(), ctypes.c_int64()

    def solve(w, h, lo, hi):
        return lib.ref_solve(w, h, lo, hi, 0.0, 0, ctypes.byref(value), ctypes.byref(nodes))

    low = (1 << 64) - 1
    assert solve(5, 5, (1 << 60) - 1, 0) == 0 and value.value == 0  # 60 lines: all drawn
    assert solve(5, 5, 1 << 60, 0) == -1
    assert solve(5, 5, 0, 1) == -1           # line 64 of a 60-line board
    assert solve(1, 21, low, 0) == 0         # 64 lines: all drawn
    assert solve(1, 21, low, 1) == -1
    assert solve(5, 6, low, (1 << 7) - 1) == 0 and value.value == 0  # 71 lines: all drawn
    assert solve(5, 6, 0, 1 << 7) == -1      # line 71
    assert solve(8, 7, low, (1 << 63) - 1) == 0 and value.value == 0  # 127 lines
    assert solve(8, 7, 0, 1 << 63) == -1     # line 127
    assert solve(8, 8, 0, 0) == -1           # 144 lines
    assert lib.ref_max_lines() == reference.MAX_LINES == 128


def test_gives_up_at_its_limits_instead_of_hanging():
    """A node budget and a deadline stop a solve that would take hours, on both kinds of
    mask. The deadline is checked by this thread's CPU time, which a loaded machine cannot
    stretch: past the 0.2 s of wall time the solve may spend at most a few checks' nodes."""
    for w, h in [(5, 5), (7, 7)]:
        with pytest.raises(ReferenceGaveUp):
            reference_value(w, h, 0, max_nodes=20_000)
        assert reference.last_nodes() < 20_000 + 2 * 0x4000  # checked every 16,384 nodes
        for solve in (reference_value, reference_move_values):
            cpu = time.thread_time()
            with pytest.raises(ReferenceGaveUp):
                solve(w, h, 0, max_seconds=0.2)
            assert time.thread_time() - cpu < 2.0
    # what it learnt before giving up leaves later answers right
    assert reference_value(3, 3, 0) == -3


def test_signs_agree_with_openspiel_on_2x2():
    """OpenSpiel scores a game win/draw/loss: its alpha-beta value for the player to move must
    have the sign of (their boxes so far - the opponent's) + the reference value."""
    import pyspiel  # a dev dependency: a missing OpenSpiel fails the test, never skips it
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


@pytest.mark.parametrize("w, h, undrawn", [(5, 5, 34), (6, 6, 36), (7, 7, 40), (8, 7, 44)])
def test_the_value_is_the_best_move_value(w, h, undrawn):
    """On positions far from the end (of both generators), the value equals the best of the
    values of the moves, each solved on its own."""
    rng = random.Random(2026 + w * 10 + h)
    for p in (safe_play(rng, w, h, undrawn), biased_play(rng, w, h, undrawn, 0.8)):
        v = reference_value(w, h, p.drawn, max_nodes=50_000_000)
        values = reference_move_values(w, h, p.drawn, max_nodes=200_000_000)
        assert len(values) == undrawn and max(values.values()) == v, (w, h, hex(p.drawn))


def test_the_recorded_solves_are_of_these_sources():
    """Values recorded by edited sources are not trusted: record them again
    (``BOXFISH_REFERENCE_RECORD=1``) after changing the solver."""
    data = json.loads(reference.RECORDED.read_text())
    assert data["sources"] == reference.sources_digest(), "re-record recorded.json"
    assert data["solves"] and reference.recorded_solves() == data["solves"]


def test_a_recorded_solve_is_the_solvers_and_a_limit_still_gives_up(monkeypatch):
    """The cheapest recorded solve, solved again, has its recorded value; under a node limit
    below its recorded nodes it gives up rather than answering from the record."""
    key, known = min(reference.recorded_solves().items(), key=lambda kv: kv[1]["nodes"])
    size, mask = key.split(":")
    w, h = map(int, size.split("x"))
    reference.clear_table()
    with pytest.raises(reference.ReferenceGaveUp):
        reference_value(w, h, int(mask, 16), max_nodes=known["nodes"] // 4)
    monkeypatch.setenv("BOXFISH_REFERENCE_RECORDED", "0")
    assert reference_value(w, h, int(mask, 16)) == known["value"]
