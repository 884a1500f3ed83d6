"""The loony-endgame DP against brute-force search, and the published shortcuts."""

from __future__ import annotations

import itertools
import random

from boxfish.engine.dots.chain_dp import (
    chain_lines,
    controlled_value,
    loony_endgame_value,
    loony_value,
)
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.node import solve

from .test_search_exact import brute


def _random_loony(rng, w, h, tries=200):
    """Random safe lines until none is left; kept if every box left has valence 2."""
    t = tables(w, h)
    for _ in range(tries):
        drawn = 0
        while True:
            vals = t.valences(drawn)
            safe = [ln for ln in bits(t.full & ~drawn)
                    if all(vals[b] < 2 for b in t.line_boxes[ln])]
            if not safe:
                break
            drawn |= 1 << rng.choice(safe)
        vals = t.valences(drawn)
        if drawn != t.full and loony_endgame_value(t, drawn, vals) is not None:
            return t, drawn
    return None


def test_dp_equals_brute_force_on_random_loony_endgames():
    rng = random.Random(11)
    found = 0
    kinds = set()
    for _ in range(300):
        w, h = rng.choice([(2, 2), (2, 3), (3, 2), (3, 3), (1, 4), (2, 4), (4, 2), (1, 5)])
        got = _random_loony(rng, w, h, tries=20)
        if got is None:
            continue
        t, drawn = got
        if (t.full & ~drawn).bit_count() > 16:
            continue
        vals = t.valences(drawn)
        dp = loony_endgame_value(t, drawn, vals)
        assert dp == brute(w, h, drawn), (w, h, bin(drawn))
        for is_loop, n, _l, _i in chain_lines(t, drawn, vals):
            kinds.add(("loop" if is_loop else "chain", min(n, 4)))
        found += 1
    assert found >= 40
    # the sample covers short chains, long chains and loops
    assert ("chain", 1) in kinds and ("chain", 2) in kinds and ("chain", 3) in kinds
    assert any(k[0] == "loop" for k in kinds)


def test_search_with_a_capture_first_matches_brute_force():
    """Loony endgames one move later (a chain just opened): the take-all / decline choice."""
    rng = random.Random(5)
    n = 0
    for _ in range(200):
        w, h = rng.choice([(2, 3), (3, 3), (2, 4), (3, 2)])
        got = _random_loony(rng, w, h, tries=20)
        if got is None:
            continue
        t, drawn = got
        if (t.full & ~drawn).bit_count() > 15:
            continue
        opened = drawn | 1 << rng.choice(bits(t.full & ~drawn))
        assert solve(t, opened)[0] == brute(w, h, opened)
        n += 1
    assert n >= 30


def test_hand_values():
    assert loony_value((), ()) == 0
    assert loony_value((3,), ()) == 3
    assert loony_value((3, 3), ()) == 2          # open one: take 1, decline 2: 1 + |2 - 3|
    assert loony_value((1,), ()) == 1
    assert loony_value((1, 3), ()) == -2         # sacrifice the box, opponent opens the 3
    assert loony_value((), (4,)) == 4
    assert loony_value((), (4, 4)) == 0          # take all 4, or decline 4: either nets 0
    assert loony_value((3, 3, 3), ()) == 1


def test_controlled_value_and_smallest_component_rule():
    lengths = range(3, 9)
    for nc in range(0, 4):
        for nlp in range(0, 3):
            if nc + nlp == 0:
                continue
            for chains in itertools.combinations_with_replacement(lengths, nc):
                for loops in itertools.combinations_with_replacement(range(4, 10, 2), nlp):
                    v = loony_value(tuple(sorted(chains)), tuple(sorted(loops)))
                    cv = controlled_value(chains, loops)
                    if cv >= 2:
                        assert v == cv, (chains, loops)
                    # opening the smallest chain or the smallest loop is enough
                    opts = []
                    if chains:
                        c = min(chains)
                        rest = list(chains)
                        rest.remove(c)
                        r = loony_value(tuple(sorted(rest)), tuple(sorted(loops)))
                        opts.append(c - 2 + abs(2 - r))
                    if loops:
                        lp = min(loops)
                        rest = list(loops)
                        rest.remove(lp)
                        r = loony_value(tuple(sorted(chains)), tuple(sorted(rest)))
                        opts.append(lp - 4 + abs(4 - r))
                    assert min(opts) == v
