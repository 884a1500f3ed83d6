"""The split of a distributed solve (:mod:`boxfish.engine.dots.split`), driven here in one
process the way the coordinator drives it (MTD(f) over the root, each test's leaf tests
answered by :func:`prove_leaf`, a few at a time): the values are the reference solver's."""

from __future__ import annotations

import random

import pytest

from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.node import CompiledSearcher
from boxfish.engine.dots.split import Split, next_beta, prove_leaf
from tests.engine.dots.reference import reference_move_values, reference_value


def _solve(split: Split, targets: list[int], per_round: int) -> tuple[dict, int]:
    """Every target's exact value (bounds by key) and the leaf tests run."""
    searcher = CompiledSearcher(split.t, caches=DotsCaches(split.t), threads=1)
    leaf_bounds: dict[int, tuple[int, int]] = {}
    runs = 0
    while True:
        bounds = split.bounds(leaf_bounds)
        wanted: dict[int, int] = {}
        for target in targets:
            lo, hi = bounds[target]
            if lo < hi:
                split.tests(bounds, target, next_beta(lo, hi, split.nodes[target].rem),
                            wanted)
        if not wanted:
            return bounds, runs
        for key, beta in list(wanted.items())[:per_round]:
            lo, hi = prove_leaf(searcher, key, beta)
            assert lo >= beta or hi < beta
            old = leaf_bounds.get(key, (lo, hi))
            leaf_bounds[key] = (max(lo, old[0]), min(hi, old[1]))
            runs += 1


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_3x3_from_the_empty_board(depth):
    split = Split(3, 3, 0, depth)
    bounds, _ = _solve(split, [split.root], per_round=3)
    assert bounds[split.root] == (-3, -3)


def test_every_first_move_and_positions_with_boxes_to_take():
    rng = random.Random(11)
    for w, h, drawn in [(3, 3, 0), (3, 3, biased_play(rng, 3, 3, 14, 0.6).drawn),
                        (4, 4, safe_play(rng, 4, 4, 24).drawn),
                        (4, 4, biased_play(rng, 4, 4, 22, 0.7).drawn)]:
        split = Split(w, h, drawn, 2)
        children = split.root_children()
        targets = list(dict.fromkeys(children.values())) or [split.root]
        bounds, _ = _solve(split, targets, per_round=5)
        assert bounds[split.root][0] == bounds[split.root][1] == reference_value(w, h, drawn)
        truth = reference_move_values(w, h, drawn)
        # no move of an unfolded root completes a box: each move is worth its child negated
        assert {ln: -bounds[key][0] for ln, key in children.items()} == (
            truth if children else {})


def test_folds_symmetries_and_prunes():
    split = Split(4, 4, 0, 3)
    assert len(split.nodes[split.root].children) < 40 // 4  # 40 lines, 8 symmetries
    assert len(split.leaves) == 936
    # a test of the root waits first for one line of leaves, not for all of them
    wanted: dict[int, int] = {}
    split.tests(split.bounds({}), split.root, 0, wanted)
    assert 0 < len(wanted) < 50
    # eager: the younger brothers too, after the first child's tests, until there are 60
    eager: dict[int, int] = {}
    split.tests(split.bounds({}), split.root, 0, eager, eager=60)
    assert len(eager) >= 60 and list(eager)[:len(wanted)] == list(wanted)
