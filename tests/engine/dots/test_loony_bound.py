"""The loony bound (``chain_dp.sacrifice_lines``): a sacrifice that opens a chain of n >= 3
boxes at an end is worth at most 2 - n to the player who makes it, one that opens a loop of n
at most 4 - n. Both searches skip such a sacrifice when its bound cannot reach into the
window, so the bound must hold in every position: it is checked here against the independent
reference solver, on positions of two generators, and the searches with it are checked to give
the reference's values and the node counts they gave before it where it cannot apply."""

from __future__ import annotations

import random

import pytest

from boxfish.engine.dots.chain_dp import sacrifice_lines
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.node import SearchSession

from .reference import reference_move_values, reference_value

BOARDS = [(3, 3, 10), (3, 4, 12), (4, 4, 15), (3, 5, 14)]


def _positions(seed: int, per_board: int):
    """Positions with no box to take (the searches generate sacrifices only there), half by
    safe play and half by play biased to safe moves."""
    rng = random.Random(seed)
    for w, h, undrawn in BOARDS:
        t = tables(w, h)
        made = 0
        while made < per_board:
            p = (safe_play(rng, w, h, undrawn) if made % 2 == 0
                 else biased_play(rng, w, h, undrawn, rng.uniform(0.6, 0.9)))
            vals = t.valences(p.drawn)
            if 3 in vals:
                continue
            made += 1
            yield w, h, p.drawn, vals


def test_every_loony_sacrifice_is_worth_at_most_its_bound():
    t_by = {}
    checked = tight = 0
    for w, h, drawn, vals in _positions(20231126, 24):
        t = t_by.setdefault((w, h), tables(w, h))
        bounded = {ln: bound for _k, ln, bound in sacrifice_lines(t, drawn, vals)
                   if bound is not None}
        if not bounded:
            continue
        got = reference_move_values(w, h, drawn, lines=sorted(bounded))
        for ln, bound in bounded.items():
            assert got[ln] <= bound, (w, h, hex(drawn), ln, got[ln], bound)
            checked += 1
            tight += got[ln] == bound
    # the positions do offer loony sacrifices, and the bound is often met exactly
    assert checked >= 40, checked
    assert tight >= 5, (tight, checked)


def test_sacrifice_lines_mark_only_loony_openings():
    """Short chains (one box, or a 2-chain's middle line, which cannot be declined) and 3+
    chains whose ends meet one joint carry no bound; every bounded line is a chain's end or a
    loop's line, with the bound of its size key."""
    seen_short = seen_bounded = 0
    for w, h, drawn, vals in _positions(7, 16):
        t = tables(w, h)
        for key, ln, bound in sacrifice_lines(t, drawn, vals):
            if key <= 2:
                assert bound is None, (w, h, hex(drawn), ln)
                seen_short += 1
            elif bound is not None:
                # a chain of n (key n, bound 2 - n) or a loop of n (key n + 1, bound 4 - n)
                assert bound in (2 - key, 5 - key), (key, bound)
                seen_bounded += 1
    assert seen_short and seen_bounded


@pytest.mark.parametrize("core", ["python", "c"])
def test_searches_with_the_bound_give_the_reference_values(core):
    for w, h, drawn, _vals in list(_positions(99, 6))[::2]:
        a = analyse_position(w, h, drawn, multipv=1, solve=True, core=core)
        assert a.exact and a.value == reference_value(w, h, drawn), (w, h, hex(drawn))


@pytest.mark.parametrize("core", ["python", "c"])
def test_without_the_bound_the_searches_count_their_old_nodes(core, monkeypatch):
    """``default_loony_bound`` off gives back the search before the bound (the solve bench's
    3x3 count recorded before it; the chain graph, which came later, off too), so the
    benchmark's comparison measures the bound alone; with it on, fewer nodes for the same
    value."""
    monkeypatch.setattr(SearchSession, "default_chain_graph", False)
    monkeypatch.setattr(SearchSession, "default_loony_bound", False)
    off = analyse_position(3, 3, 0, multipv=1, solve=True, core=core)
    monkeypatch.setattr(SearchSession, "default_loony_bound", True)
    on = analyse_position(3, 3, 0, multipv=1, solve=True, core=core)
    assert (off.nodes, off.value) == (82031, -3)
    assert on.value == -3 and on.nodes < off.nodes
