"""The horizon evaluation: its component count and its memos."""

from __future__ import annotations

import random

from boxfish.engine.dots.chain_dp import (
    chain_counts,
    chain_lengths,
    chain_lines,
    loony_value_fast,
)
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.search import evaluate as ev
from boxfish.engine.dots.search.board import tables


def _random_filled(rng, t):
    """Random safe lines until none is left (the position an evaluation fill ends in)."""
    drawn = 0
    while True:
        vals = t.valences(drawn)
        safe = [ln for ln in bits(t.full & ~drawn) if all(vals[b] < 2 for b in t.line_boxes[ln])]
        if not safe:
            return drawn
        drawn |= 1 << rng.choice(safe)


def test_chain_counts_match_the_chains_with_their_lines():
    rng = random.Random(5)
    for _ in range(300):
        w, h = rng.choice([(2, 2), (3, 3), (4, 3), (5, 5), (1, 6), (6, 4)])
        t = tables(w, h)
        drawn = _random_filled(rng, t)
        # also positions with a few more lines drawn (chains cut, boxes of valence 3 or 4)
        for ln in rng.sample(bits(t.full & ~drawn), min(3, (t.full & ~drawn).bit_count())):
            if rng.random() < 0.5:
                drawn |= 1 << ln
        vals = t.valences(drawn)
        chains, loops, joints = chain_counts(t, drawn, vals)
        walked = chain_lines(t, drawn, vals)
        assert sorted(chains) == sorted(n for loop, n, _l, _i in walked if not loop)
        assert sorted(loops) == sorted(n for loop, n, _l, _i in walked if loop)
        assert joints == sum(1 for v in vals if v <= 1)
        assert chain_lengths(t, drawn, vals) == (chains, loops)


def _expected(t, drawn, vals):
    """The evaluation's definition: the fills' mean, scaled by the trust in their parity
    (each fill by an evaluator of its own, with empty memos)."""
    total = sum(ev.Evaluator(t).fill_value(drawn, vals, i) for i in range(ev.FILLS))
    return total * ev.TRUST_NUM // (ev.FILLS * ev.TRUST_DEN)


def test_memos_return_the_unmemoised_value_per_board_size():
    rng = random.Random(8)
    for w, h in [(3, 3), (3, 4), (5, 5)]:
        t = tables(w, h)
        evaluator = ev.Evaluator(t)
        for _ in range(30):
            drawn = 0
            for ln in rng.sample(range(t.nl), t.nl // 3):
                drawn |= 1 << ln
            vals = t.valences(drawn)
            if 3 in vals:
                continue
            want = _expected(t, drawn, vals)
            assert evaluator.evaluate(drawn, vals) == want
            assert evaluator.evaluate(drawn, vals) == want  # from the memo
        assert len(evaluator.values) > 0
    # a tiny evaluator empties its memos when they are full, and still answers the same
    t = tables(3, 3)
    tiny = ev.Evaluator(t, max_entries=3)
    for _ in range(40):
        drawn = 0
        for ln in rng.sample(range(t.nl), t.nl // 3):
            drawn |= 1 << ln
        vals = t.valences(drawn)
        if 3 not in vals:
            assert tiny.evaluate(drawn, vals) == _expected(t, drawn, vals)
            assert len(tiny.values) <= 3 and len(tiny.ends) <= 3
    tiny.clear()
    assert len(tiny) == 0


def _reference_fill_value(t, drawn, vals, order):
    """The evaluation's definition, line by line: draw every line of ``order`` that is
    undrawn and touches no box of valence 2 yet; the parity of how many, and the chain DP of
    the loony position left (joints counted with the longest chain)."""
    vals = vals[:]
    k = 0
    for ln in order:
        if drawn >> ln & 1 or any(vals[b] >= 2 for b in t.line_boxes[ln]):
            continue
        drawn |= 1 << ln
        k += 1
        for b in t.line_boxes[ln]:
            vals[b] += 1
    comps = chain_lines(t, drawn, vals)
    chains = [n for loop, n, _l, _i in comps if not loop]
    loops = [n for loop, n, _l, _i in comps if loop]
    joints = sum(1 for v in vals if v < 2)
    if joints:
        if chains:
            chains[chains.index(max(chains))] += joints
        else:
            chains.append(joints)
    f = loony_value_fast(chains, loops)
    return f if k & 1 else -f


def test_fill_in_order_space_and_its_memo_match_the_definition():
    rng = random.Random(21)
    for w, h in [(2, 2), (3, 3), (3, 4), (5, 5), (4, 7)]:
        t = tables(w, h)
        evaluator = ev.Evaluator(t)
        for _ in range(60):
            drawn = 0
            for ln in rng.sample(range(t.nl), rng.randint(0, t.nl * 2 // 3)):
                drawn |= 1 << ln
            vals = t.valences(drawn)
            if 3 in vals:
                continue
            for i in range(ev.FILLS):
                want = _reference_fill_value(t, drawn, vals, t.fill_orders[i])
                assert evaluator.fill_value(drawn, vals, i) == want
                assert evaluator.fill_value(drawn, vals, i) == want  # the loony value memoised
