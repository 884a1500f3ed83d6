"""Nimstring values (engine/dots/nimstring.py and the compiled core's nimstring.c) against the
game's own rules, and control in the learned evaluation."""

from __future__ import annotations

import json
import random
import time
from functools import cache
from pathlib import Path

import pytest

from boxfish.engine.dots.geometry import HORIZONTAL, VERTICAL, geometry
from boxfish.engine.dots.nimstring import (
    Nimstring,
    NimstringBudgetExceeded,
    count_non_loony,
    loony_or_settled,
    non_loony_moves,
)
from boxfish.engine.dots.search import compiled, learned
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.errors import SearchAborted

HELD_OUT = Path(__file__).resolve().parents[3] / "bench" / "results" / "exact"


def plain_nimstring_win(geo):
    """Whether the player to move wins Nimstring from the undrawn lines ``u``, by its rules
    alone: drawing a line that completes a box obliges another move; no move, no win."""

    @cache
    def win(u: int) -> bool:
        rest = u
        while rest:
            low = rest & -rest
            rest ^= low
            after = u & ~low
            completes = any(geo.box_mask[b] & after == 0
                            for b in geo.line_boxes[low.bit_length() - 1])
            if win(after) if completes else not win(after):
                return True
        return False

    return win


def takeable(geo, drawn: int) -> bool:
    undrawn = geo.all_lines & ~drawn
    return any((m & undrawn).bit_count() == 1 for m in geo.box_mask)


def safe_fill(geo, rng, undrawn: int) -> int:
    """Random lines that give no box away, down to ``undrawn`` undrawn lines or none safe."""
    drawn = 0
    lines = list(range(geo.num_lines))
    rng.shuffle(lines)
    for ln in lines:
        if (geo.all_lines & ~drawn).bit_count() <= undrawn:
            break
        if not takeable(geo, drawn | 1 << ln):
            drawn |= 1 << ln
    return drawn


def random_play(geo, rng, undrawn: int) -> int | None:
    """Random Dots-and-Boxes play (a player takes every box he can, then draws at random),
    stopped at ``undrawn`` undrawn lines where no box can be taken (None: none such)."""
    drawn = 0
    while (geo.all_lines & ~drawn).bit_count() > undrawn:
        free = [ln for ln in range(geo.num_lines) if not drawn >> ln & 1]
        take = [ln for ln in free if takeable(geo, drawn) and any(
            (geo.box_mask[b] & ~(drawn | 1 << ln)) & geo.all_lines == 0
            for b in geo.line_boxes[ln])]
        drawn |= 1 << rng.choice(take or free)
    return None if takeable(geo, drawn) else drawn


def positions(w: int, h: int, n: int, seed: int, lo: int, hi: int) -> list[int]:
    geo = geometry(w, h)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        u = rng.randint(lo, hi)
        p = safe_fill(geo, rng, u) if len(out) % 2 else random_play(geo, rng, u)
        if p is not None and not takeable(geo, p):
            out.append(p)
    return out


@pytest.mark.parametrize("w, h, lo, hi", [(1, 2, 0, 7), (2, 2, 0, 12), (2, 3, 2, 17),
                                          (3, 3, 6, 19)])
def test_a_value_other_than_0_wins_the_plain_game(w, h, lo, hi):
    geo = geometry(w, h)
    ns = Nimstring(w, h)
    win = plain_nimstring_win(geo)
    for drawn in positions(w, h, 150, 10 * w + h, lo, hi):
        assert (ns.value(drawn) != 0) == win(geo.all_lines & ~drawn), hex(drawn)


def test_values_add_by_xor_over_parts():
    """Two copies of one 1x2 part, side by side on a 1x5 board (the middle box taken), are
    worth 0: a sum of a value with itself."""
    geo = geometry(5, 1)
    # every line of box 2 drawn: boxes 0-1 and 3-4 are two parts that share nothing
    middle = geo.box_mask[2]
    ns = Nimstring(5, 1)
    assert ns.value(middle) == 0
    assert len(ns.components(geo.all_lines & ~middle)) == 2
    # draw the far end of the left part: the parts differ, and so does the sum
    left_end = 1 << geo.line_id(1, 1, VERTICAL)  # the vertical line at the left border
    assert ns.value(middle | left_end) != 0


def test_loony_moves():
    """On a 1x3 row: opening the row at its end offers a chain of 3 (loony); on a 1x2 row,
    the middle line hands out two boxes that cannot be declined (not loony), and the end line
    offers them with a choice (loony)."""
    geo = geometry(3, 1)
    # the row's long sides drawn: a chain of 3 with both ends on the border
    sides = sum(1 << geo.line_id(x, y, HORIZONTAL) for x in range(1, 4) for y in (1, 2))
    undrawn = geo.all_lines & ~sides
    end = geo.line_id(1, 1, VERTICAL)
    assert loony_or_settled(geo, undrawn & ~(1 << end), geo.line_boxes[end]) is None
    geo2 = geometry(2, 1)
    sides2 = sum(1 << geo2.line_id(x, y, HORIZONTAL) for x in range(1, 3) for y in (1, 2))
    u2 = geo2.all_lines & ~sides2
    middle, end2 = geo2.line_id(2, 1, VERTICAL), geo2.line_id(1, 1, VERTICAL)
    assert loony_or_settled(geo2, u2 & ~(1 << middle), geo2.line_boxes[middle]) == 0
    assert loony_or_settled(geo2, u2 & ~(1 << end2), geo2.line_boxes[end2]) is None
    assert non_loony_moves(geo2, sides2) == [middle]
    assert count_non_loony(geo2, sides2, 0) == 1


def test_a_budget_bounds_the_work_and_a_takeable_box_is_refused():
    geo = geometry(4, 4)
    drawn = positions(4, 4, 1, 7, 20, 20)[0]
    with pytest.raises(NimstringBudgetExceeded):
        Nimstring(4, 4).value(drawn, budget=1)
    line = geo.line_id(1, 1, HORIZONTAL)
    three = geo.box_mask[0] & ~(1 << line)
    with pytest.raises(ValueError, match="a box can be taken"):
        Nimstring(4, 4).value(three)


def core_of(w: int, h: int):
    t = tables(w, h)
    return compiled.core(t, compiled.new_table(1 << 22, t.nl), True, SearchAborted,
                         time.perf_counter)


def held_out_5x5(max_undrawn: int) -> list[int]:
    out = []
    for path in sorted((HELD_OUT / "5x5").glob("*.jsonl")):
        for line in path.read_text().splitlines()[1:]:
            r = json.loads(line)
            drawn = int(r["drawn"], 16)
            if r.get("value") is not None and r["u"] <= max_undrawn and \
                    not takeable(geometry(5, 5), drawn):
                out.append(drawn)
    return out


@pytest.mark.parametrize("w, h, lo, hi", [(3, 3, 6, 19), (4, 4, 14, 26), (4, 5, 18, 28)])
def test_the_compiled_values_are_the_python_ones(w, h, lo, hi):
    ns, core = Nimstring(w, h), core_of(w, h)
    for drawn in positions(w, h, 40, w * h, lo, hi):
        assert core.nimber(drawn) == ns.value(drawn), hex(drawn)


def test_the_compiled_values_of_held_out_5x5_positions():
    ns, core = Nimstring(5, 5), core_of(5, 5)
    ps = held_out_5x5(35)
    assert len(ps) >= 40
    for drawn in ps:
        assert core.nimber(drawn) == ns.value(drawn), hex(drawn)
    # a budget too small for a fresh core: no value, and no wrong one
    assert core_of(5, 5).nimber(ps[-1], 1) in (None, ns.value(ps[-1]))


CONTROL = 16


def test_control_signs_the_learned_estimate_on_both_cores():
    """Leaves of at most ``control_moves`` non-loony moves: the estimate's sign is control's,
    the same in Python and C; others keep the model's value."""
    t = tables(5, 5)
    model = learned.model_for(t)
    ev = learned.LearnedEvaluator(DotsCaches(t, 1 << 20).evaluator, model, CONTROL)
    core = core_of(5, 5)
    core.model = compiled.model(model, CONTROL)
    plain = core_of(5, 5)
    plain.model = compiled.model(model, 0)
    ns = Nimstring(5, 5)
    geo = geometry(5, 5)
    controlled = 0
    for drawn in held_out_5x5(40):
        vals = t.valences(drawn)
        v = ev.evaluate(drawn, vals)
        assert core.evaluate(drawn) == v
        if count_non_loony(geo, drawn, CONTROL) <= CONTROL:
            controlled += 1
            assert (v > 0) == (ns.value(drawn) != 0)
            assert abs(v) == max(1, abs(plain.evaluate(drawn)))
        else:
            assert v == plain.evaluate(drawn)
    assert controlled >= 20


@pytest.mark.parametrize("core", ["c", "python"])
def test_a_search_with_control_fills_the_nimstring_memo_and_clear_empties_it(core, monkeypatch):
    from boxfish.engine import load_game
    from boxfish.engine.analysis import SearchCache, analyse

    monkeypatch.setattr(learned, "CONTROL_MAX_MOVES", CONTROL)
    state = load_game("dots-and-boxes", width=4, height=4).new_state()
    geo = geometry(4, 4)
    for drawn_line in positions_of_4x4_safe():
        state.play(geo.moves[drawn_line])
    search_cache = SearchCache(max_entries=100_000)
    plain = analyse(state, time_ms=None, depth=2, core=core)
    a = analyse(state, time_ms=None, depth=2, cache=search_cache, core=core)
    owner = search_cache.owners()[("dots-and-boxes", 4, 4)]
    name = "compiled_nim" if core == "c" else "nimstring"
    assert owner.sizes()[name] > 0
    assert a.exact == plain.exact
    search_cache.clear()
    assert owner.sizes()[name] == 0


def positions_of_4x4_safe() -> list[int]:
    """18 lines of a 4x4 board that give no box away (seeded): few non-loony moves left."""
    geo = geometry(4, 4)
    rng = random.Random(3)
    lines = list(range(geo.num_lines))
    rng.shuffle(lines)
    drawn, out = 0, []
    for ln in lines:
        if len(out) == 18:
            break
        if not takeable(geo, drawn | 1 << ln):
            drawn |= 1 << ln
            out.append(ln)
    assert count_non_loony(geo, drawn, CONTROL) <= CONTROL
    return out
