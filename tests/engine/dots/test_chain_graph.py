"""The chain graph (engine/dots/chain_graph.py, core/chain_graph.c): the exact value of a
position with no safe line left whose chains meet at joints.

Checked against the independent reference solver on positions of three generators (safe play,
play biased to safe moves, random lines), each played on with random safe lines and captures
until no safe line is left, on 3x3 to 5x5 boards: the Python solver, the compiled one (a search
settled at its root by node_leaf), and both searches with it and without it, which must also
count the same nodes as each other."""

from __future__ import annotations

import random

import pytest

from boxfish.engine.dots.chain_graph import (
    ChainGraph,
    _degrees,
    normal_form,
    position_graph,
)
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search import compiled
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.node import CompiledSearcher, SearchSession
from boxfish.engine.dots.search.table import INF, PROVEN

from .reference import reference_value

needs_core = pytest.mark.skipif(not compiled.available(), reason=str(compiled.UNAVAILABLE_REASON))

#: (w, h, undrawn lines the generators stop at; the play on leaves fewer)
BOARDS = [(3, 3, 14), (3, 4, 17), (4, 4, 21), (4, 5, 26), (5, 5, 30)]


def play_on(t, rng: random.Random, drawn: int, safe_left: int = 0) -> int:
    """``drawn`` played on by random captures, then random safe lines, until no box can be
    taken and at most ``safe_left`` safe lines are left."""
    while True:
        vals = t.valences(drawn)
        free = [ln for ln in range(t.nl) if not drawn >> ln & 1]
        caps = [ln for ln in free if any(vals[b] == 3 for b in t.line_boxes[ln])]
        if caps:
            drawn |= 1 << rng.choice(caps)
            continue
        safe = [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]
        if len(safe) <= safe_left:
            return drawn
        drawn |= 1 << rng.choice(safe)


def start(rng: random.Random, w: int, h: int, undrawn: int, i: int) -> int:
    """A position of generator ``i % 3``: safe play, biased play, or random lines."""
    if i % 3 == 0:
        return safe_play(rng, w, h, undrawn).drawn
    if i % 3 == 1:
        return biased_play(rng, w, h, undrawn, rng.uniform(0.6, 0.9)).drawn
    nl = (h + 1) * w + h * (w + 1)
    return sum(1 << ln for ln in rng.sample(range(nl), nl - undrawn))


def graph_positions(seed: int, per_board: int, boards=BOARDS):
    """``(w, h, drawn)`` with no safe line, no box to take and a joint, ``per_board`` of
    each board, the generators in turn."""
    rng = random.Random(seed)
    for w, h, undrawn in boards:
        t = tables(w, h)
        made = i = 0
        while made < per_board:
            drawn = play_on(t, rng, start(rng, w, h, undrawn, i))
            i += 1
            if position_graph(t, drawn, t.valences(drawn)) is not None:
                made += 1
                yield w, h, drawn


def test_python_values_match_the_reference():
    """Including the rule of a chain from a joint of three lines back to it (taken with the
    joint and its third chain), which the positions must exercise."""
    solver = ChainGraph()
    looped = 0
    for w, h, drawn in graph_positions(20261127, 24):
        t = tables(w, h)
        vals = t.valences(drawn)
        assert solver.position_value(t, drawn, vals) == reference_value(w, h, drawn), \
            (w, h, hex(drawn))
        edges, _loops = position_graph(t, drawn, vals)
        deg = _degrees(edges)
        looped += any(a and a == b and deg[a] == 3 for a, b, _n in edges)
    assert looped >= 3, looped
    assert solver.hits < solver.calls and solver.solved > solver.calls


@needs_core
def test_compiled_values_match_the_python_and_the_reference():
    """The compiled solver, as node_leaf runs it at the root of a search."""
    for w, h, drawn in graph_positions(7, 12):
        t = tables(w, h)
        s = CompiledSearcher(t)
        v = s.search(drawn, -INF, INF, PROVEN)
        assert s.core.graph_calls == 1 and s.nodes == 1, (w, h, hex(drawn))
        assert v == ChainGraph().position_value(t, drawn, t.valences(drawn)), (w, h, hex(drawn))
        if w * h <= 16:
            assert v == reference_value(w, h, drawn), (w, h, hex(drawn))


def test_normal_form_is_shared_by_relabelled_graphs():
    """Relabelled joints and shuffled chains give the same normal form, except where joints
    of equal invariants are numbered in another order (then the same value); a joint of two
    lines is merged into its chains (a loop when both are one chain)."""
    rng = random.Random(3)
    same = 0
    for w, h, drawn in graph_positions(11, 8, BOARDS[2:]):
        t = tables(w, h)
        edges, loops = position_graph(t, drawn, t.valences(drawn))
        k = max(b for _a, b, _n in edges)
        perm = list(range(1, k + 1))
        rng.shuffle(perm)
        label = [0, *perm]
        moved = [(min(label[a], label[b]), max(label[a], label[b]), n) for a, b, n in edges]
        rng.shuffle(moved)
        g1, g2 = normal_form(moved, loops[::-1]), normal_form(edges, loops)
        same += g1 == g2
        assert ChainGraph().f(*g1) == ChainGraph().f(*g2)
    assert same >= 20, same
    # joint 1 of two lines: the ground-to-ground chain 2 + 1 + 3
    assert normal_form([(0, 1, 2), (0, 1, 3)], []) == (((0, 0, 6),), ())
    # joint 2 of two lines: its chains 3 and 4 to joint 1 become one of 3 + 1 + 4 from 1 back
    # to 1, which keeps three lines
    assert normal_form([(1, 2, 3), (1, 2, 4), (0, 1, 5)], []) == (((0, 1, 5), (1, 1, 8)), ())
    # a chain of 3 from joint 1 back to it, and nothing else at 1: with 1, a loop of 4
    assert normal_form([(1, 1, 3)], [6]) == ((), (4, 6))


@pytest.mark.parametrize("core", ["python", "c"])
def test_searches_with_and_without_give_the_reference_values(core, monkeypatch):
    """Positions with a few safe lines left: the search reaches positions with none inside."""
    if core == "c" and not compiled.available():
        pytest.skip(str(compiled.UNAVAILABLE_REASON))
    rng = random.Random(5)
    for w, h, undrawn in BOARDS[:3]:
        t = tables(w, h)
        for i in range(4):
            drawn = play_on(t, rng, start(rng, w, h, undrawn, i), safe_left=rng.randint(1, 4))
            want = reference_value(w, h, drawn)
            for on in (False, True):
                monkeypatch.setattr(SearchSession, "default_chain_graph", on)
                a = analyse_position(w, h, drawn, multipv=1, solve=True, core=core)
                assert a.exact and a.value == want, (w, h, hex(drawn), on)


@needs_core
def test_both_searches_count_the_same_nodes_with_it():
    """The Python node and the compiled one settle the same nodes by the chain graph."""
    rng = random.Random(9)
    for w, h, undrawn in BOARDS[:3]:
        t = tables(w, h)
        for i in range(3):
            drawn = play_on(t, rng, start(rng, w, h, undrawn, i), safe_left=rng.randint(2, 5))
            got = [analyse_position(w, h, drawn, multipv=1, solve=True, core=core)
                   for core in ("python", "c")]
            assert got[0].nodes == got[1].nodes and got[0].value == got[1].value, \
                (w, h, hex(drawn))


@pytest.mark.parametrize("core", ["python", "c"])
def test_off_gives_back_the_search_before_it(core, monkeypatch):
    """``default_chain_graph`` off gives back the search before it (the 3x3 count then), so
    the benchmark's comparison measures it alone; on, fewer nodes for the same value."""
    if core == "c" and not compiled.available():
        pytest.skip(str(compiled.UNAVAILABLE_REASON))
    monkeypatch.setattr(SearchSession, "default_chain_graph", False)
    off = analyse_position(3, 3, 0, multipv=1, solve=True, core=core)
    monkeypatch.setattr(SearchSession, "default_chain_graph", True)
    on = analyse_position(3, 3, 0, multipv=1, solve=True, core=core)
    assert (off.nodes, off.value) == (81102, -3)
    assert on.value == -3 and on.nodes < off.nodes
