"""The root obeys the capture rules the search applies inside (issue 21): a capture that the
search would force is the best move whatever the limit, and its value bounds every other
move's from above; a bot that follows the best move never gives a free box away."""

from __future__ import annotations

import random

import pytest

from boxfish.engine import analyse, load_game
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.positions import safe_play
from boxfish.engine.dots.search.board import tables
from tests.engine.dots.reference import reference_move_values

FREE_BOX_MOVES = [(1, 1, 1), (2, 1, 2), (1, 2, 1), (3, 3, 2), (5, 5, 1)]
LIMITS = ([{"time_ms": ms} for ms in (30, 200, 1000)]
          + [{"time_ms": None, "depth": d} for d in range(1, 7)]
          + [{"time_ms": None, "nodes": n} for n in (500, 20_000, 400_000)])


def _free_box_state():
    state = load_game("dots-and-boxes", width=5, height=5).new_state()
    for m in FREE_BOX_MOVES:
        state.play(m)
    return state


def _assert_capture_leads(a, capture) -> None:
    assert a.best_move == capture, (a.best_move, a.moves[:4])
    assert a.moves[0].move == capture
    top = a.moves[0].value
    assert all(m.value <= top for m in a.moves), [(m.move, m.value, m.bound) for m in a.moves]
    assert a.value == top


@pytest.mark.parametrize("limit", LIMITS, ids=lambda lim: "-".join(f"{k}{v}" for k, v in
                                                                  lim.items() if v))
@pytest.mark.parametrize("multipv", [1, 4, None])
def test_the_free_box_of_the_issue_is_taken_at_every_limit(limit, multipv):
    """5x5 after ``1,1,1 2,1,2 1,2,1 3,3,2 5,5,1``: box (1,1) has three sides and its
    missing side ``1,1,2`` is a border line; drawing it is provably best."""
    a = analyse(_free_box_state(), multipv=multipv, **limit)
    _assert_capture_leads(a, (1, 1, 2))


def test_the_issue_call_recommends_the_capture():
    """``boxfish analyse --size 5x5 --moves "..." --time 5000 --multipv 4`` recommended
    ``2,1,1 ~+1``, leaving the box to the opponent, and rated the capture ``~-1``."""
    _assert_capture_leads(analyse(_free_box_state(), time_ms=5000, multipv=4), (1, 1, 2))


def _independent_capture_position(rng: random.Random, w: int, h: int, undrawn: int):
    """A position from safe play with one line added that gives a single box its third side
    where taking it hands nothing over (the box across the missing line, if any, has at most
    one side): ``(drawn, capture line)``, or None when the position has no such line."""
    t = tables(w, h)
    p = safe_play(rng, w, h, undrawn + 1)
    drawn = p.drawn
    vals = t.valences(drawn)
    if 3 in vals:
        return None
    options = []
    for ln in bits(t.full & ~drawn):
        boxes = t.line_boxes[ln]
        if [vals[b] for b in boxes].count(2) != 1 or t.completes(drawn, ln):
            continue
        x = next(b for b in boxes if vals[b] == 2)
        d2 = drawn | 1 << ln
        missing = bits(t.box_mask[x] & ~d2)
        if len(missing) != 1:
            continue
        cap = missing[0]
        across = [b for b in t.line_boxes[cap] if b != x]
        v2 = t.valences(d2)
        if across and v2[across[0]] >= 2:
            continue
        if v2.count(3) != 1:
            continue
        options.append((d2, cap))
    return rng.choice(options) if options else None


def _positions(seed: int, w: int, h: int, undrawn: int, n: int):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        p = _independent_capture_position(rng, w, h, undrawn)
        if p is not None:
            out.append(p)
    return out


@pytest.mark.parametrize("w,h,undrawn,seed", [(5, 5, 44, 1), (5, 5, 34, 2), (4, 4, 28, 3),
                                              (6, 5, 50, 4)])
def test_a_random_independent_capture_is_the_best_move(w, h, undrawn, seed):
    game = load_game("dots-and-boxes", width=w, height=h)
    t = tables(w, h)
    for drawn, cap in _positions(seed, w, h, undrawn, 3):
        state = game.from_lines("".join("1" if drawn >> i & 1 else "0" for i in range(t.nl)),
                                to_move=0)
        capture = t.moves[cap]
        for limit in ({"time_ms": 40}, {"time_ms": 400}, {"time_ms": None, "depth": 1},
                      {"time_ms": None, "depth": 2}, {"time_ms": None, "depth": 5},
                      {"time_ms": None, "nodes": 3000}):
            _assert_capture_leads(analyse(state, **limit), capture)


def test_an_independent_capture_is_value_optimal_by_the_reference_solver():
    """The rule itself, checked by the independent solver on small boards: the capture's
    exact value is the position's value."""
    checked = 0
    for w, h, undrawn, seed in ((3, 3, 16, 5), (4, 3, 19, 6), (4, 4, 22, 7)):
        for drawn, cap in _positions(seed, w, h, undrawn, 4):
            values = reference_move_values(w, h, drawn, max_nodes=50_000_000)
            assert values[cap] == max(values.values()), (w, h, drawn, cap, values)
            checked += 1
    assert checked == 12
