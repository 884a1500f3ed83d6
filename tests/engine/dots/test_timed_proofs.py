"""Timed analyses that prove (issue 21): a timed analysis comes back exact when a proof fits
its time, its depth never exceeds the lines left, and what it reports without a proof never
contradicts what is proven. Exact values come from the independent reference solver
(:mod:`tests.engine.dots.reference`), never from the engine under test."""

from __future__ import annotations

import itertools
import random

from boxfish.engine import analyse, load_game
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import iterate
from boxfish.engine.dots.search.node import CompiledSearcher
from tests.engine.dots.reference import reference_move_values, reference_value

#: nodes the reference solver may search for one answer here: ten times the most a position
#: below takes from an empty table (59 million, 30 s of CPU), a budget no load can make it miss
REFERENCE_NODES = 600_000_000

# the issue's two 5x5 positions of 40 undrawn lines, player 0 to move
ISSUE_A = "110100000110011000100010000000001001011100011110000100100000"
ISSUE_B = "000011000001110110000000000011011101000101000100100011000100"


def mask(lines: str) -> int:
    return sum(1 << i for i, ch in enumerate(lines) if ch == "1")


def lines_of(drawn: int, nl: int) -> str:
    return "".join("1" if drawn >> i & 1 else "0" for i in range(nl))


def _generated(n_each: int, undrawn: tuple[int, ...], seed: int) -> list[int]:
    """5x5 positions from both generators: safe play, and play biased 70-90% towards moves
    that give nothing away (without a box to take at the root, so both players' views of a
    position are searched alike)."""
    rng = random.Random(seed)
    t = tables(5, 5)
    out: list[int] = []
    for gen in ("safe", "biased"):
        got = 0
        while got < n_each:
            u = rng.choice(undrawn)
            p = (safe_play(rng, 5, 5, u) if gen == "safe"
                 else biased_play(rng, 5, 5, u, rng.uniform(0.7, 0.9)))
            if 3 in t.valences(p.drawn):
                continue
            out.append(p.drawn)
            got += 1
    return out


def test_heuristic_iterations_stop_at_the_lines_left():
    """Past the depth of the lines left an iteration searches the same tree again: the
    deepening yields no depth beyond them and ends (it went on without end before)."""
    t = tables(5, 5)
    drawn = 239330986697057503  # 30 undrawn lines; iterations never prove it
    free = (t.full & ~drawn).bit_count()
    searcher = CompiledSearcher(t)
    results = list(itertools.islice(iterate(searcher, drawn, multipv=1, refine=False,
                                            solve_lines=0), free + 5))
    assert results and len(results) <= free
    assert all(r.depth <= free for r in results)
    assert [r.depth for r in results] == sorted(r.depth for r in results)


def test_a_timed_analysis_proves_within_three_times_the_nodes_of_the_untimed_solve():
    """The library's timed ``analyse`` comes back exact and right, having searched at most
    three times the nodes of its untimed solve: the issue's two positions (solved in 2-5 s
    without a limit, they came back as estimates at 10 s, A off by 2 boxes) and positions of
    36-40 undrawn lines from both generators. On one thread both searches count the same
    nodes on every run (a measure a loaded machine cannot change, where three times the
    untimed solve's wall time was one it could); the time limit, a minute, is never neared:
    it only chooses the timed driver, whose proof attempts share the nodes with the
    heuristic deepening. bench/dots_timed_bench.py measures the same in time."""
    game = load_game("dots-and-boxes", width=5, height=5)
    t = tables(5, 5)
    positions = [mask(ISSUE_A), mask(ISSUE_B)] + _generated(1, (36, 38, 40), 2111)
    for drawn in positions:
        state = game.from_lines(lines_of(drawn, t.nl), to_move=0)
        untimed = analyse(state, time_ms=None, multipv=1, threads=1)
        assert untimed.exact
        timed = analyse(state, time_ms=60_000, multipv=1, threads=1)
        truth = reference_value(5, 5, drawn, max_nodes=REFERENCE_NODES)
        assert timed.exact, (lines_of(drawn, t.nl), timed.value, timed.depth)
        assert timed.nodes <= 3 * untimed.nodes, (lines_of(drawn, t.nl), timed.nodes,
                                                  untimed.nodes)
        assert timed.value == truth == untimed.value
        assert timed.lower == timed.upper == truth
        assert timed.depth == (t.full & ~drawn).bit_count()
        best = t.geo.line_id(*timed.best_move)
        assert reference_move_values(5, 5, drawn, [best], max_nodes=REFERENCE_NODES)[best] == truth


def _check_bounds(a, truth: int, move_truth: dict) -> int:
    """Every proven claim of ``a`` holds; returns how many proven bounds it made."""
    claims = 0
    for what, value, bound, lo, hi, true in (
            [("root", a.value, a.bound, a.lower, a.upper, truth)]
            + [(m.move, m.value, m.bound, m.lower, m.upper, move_truth[m.move])
               for m in a.moves]):
        if lo is not None:
            assert true >= lo and value >= lo, (what, value, bound, lo, hi, true)
            claims += 1
        if hi is not None:
            assert true <= hi and value <= hi, (what, value, bound, lo, hi, true)
            claims += 1
        if bound == "exact":
            assert value == true == lo == hi, (what, value, lo, hi, true)
        elif bound == "lower":
            assert value == lo
        elif bound == "upper":
            assert value == hi
    return claims


def test_proven_bounds_of_unfinished_analyses_hold():
    """Timed, node-limited and depth-limited analyses of 4x4 and 5x5 positions (both
    generators) that mostly do not finish: ``lower``/``upper`` (of the position and of every
    move) hold against the reference solver, an estimate lies between them, and ``bound``
    names the one it equals."""
    rng = random.Random(7)
    claims = inexact_claims = 0
    for w, h, undrawn in ((4, 4, 26), (5, 5, 32), (5, 5, 34), (5, 5, 36)):
        t = tables(w, h)
        game = load_game("dots-and-boxes", width=w, height=h)
        for gen in ("safe", "biased"):
            p = (safe_play(rng, w, h, undrawn) if gen == "safe"
                 else biased_play(rng, w, h, undrawn, 0.8))
            values = reference_move_values(w, h, p.drawn, max_nodes=REFERENCE_NODES)
            truth = max(values.values())
            move_truth = {t.moves[ln]: v for ln, v in values.items()}
            state = game.from_lines(lines_of(p.drawn, t.nl), to_move=0)
            for limit in ({"time_ms": 20}, {"time_ms": 120}, {"time_ms": None, "nodes": 5000},
                          {"time_ms": None, "nodes": 60_000}, {"time_ms": None, "depth": 2},
                          {"time_ms": None, "depth": 4}):
                a = analyse(state, **limit)
                n = _check_bounds(a, truth, move_truth)
                claims += n
                if not a.exact:
                    inexact_claims += n
    assert claims > 0 and inexact_claims > 0, (claims, inexact_claims)


def test_a_value_proven_before_the_moves_are_read_reports_the_depth_to_the_end(monkeypatch):
    """Under load the deadline can pass right after the root proof, before the proof
    iterations have read the moves' values from the table: the value is exact all the same,
    and an exact value is one searched to the end, so the depth is the lines left (it was the
    last heuristic iteration's, 8 of 40, seen on a loaded machine)."""
    from boxfish.engine.dots.search import driver as dots_search

    real_iterate = dots_search.iterate

    def cut_short(*args, **kwargs):
        if kwargs.get("solve"):
            return iter(())  # the deadline passed before the first proof iteration ended
        return real_iterate(*args, **kwargs)

    monkeypatch.setattr(dots_search, "iterate", cut_short)
    t = tables(5, 5)
    drawn = mask(ISSUE_A)
    game = load_game("dots-and-boxes", width=5, height=5)
    result = analyse(game.from_lines(ISSUE_A), time_ms=60_000, multipv=1)
    assert result.exact
    assert result.value == reference_value(5, 5, drawn)
    assert result.depth == (t.full & ~drawn).bit_count()
