"""The time-bounded contract: deadline, node and depth limits, progress, multipv, JSON.

A deadline is checked by the CPU time the search spends past it (the Python search of the
boards timed here runs on the caller's thread; a watcher reads that thread's CPU clock when
the limit is up), which a loaded machine cannot stretch: it only slows the search down before
and after the deadline alike. The wall time gets a bound many times the limit, which only a
search that hangs or blocks can miss. ``bench/dots_limits_bench.py`` measures how far past
its limit an analysis returns. Exact values come from the independent reference solver
(tests/engine/dots/reference)."""

from __future__ import annotations

import itertools
import json
import threading
import time

import pytest

from boxfish.engine import analyse, load_game
from boxfish.engine.analysis import Progress
from tests.engine.dots.reference import reference_move_values, reference_value

#: CPU time a search may spend past its deadline (its last nodes, the answer's assembly:
#: 1-10 ms measured)
CPU_SLACK_S = 0.15
#: wall time an analysis may take past its deadline on a loaded machine (many times the
#: limits used here)
WALL_SLACK_S = 5.0


def _timed(state, time_ms: int):
    """``analyse(state, time_ms=...)`` on this thread: the analysis, the CPU seconds this
    thread spent after the limit was up, and the wall seconds of the call. (The watcher
    reads the CPU clock late when it is itself delayed: it can only undercount.)"""
    clock = time.pthread_getcpuclockid(threading.get_ident())
    at_limit: list[float] = []
    start = time.perf_counter()

    def watch() -> None:
        time.sleep(max(0.0, start + time_ms / 1000 - time.perf_counter()))
        at_limit.append(time.clock_gettime(clock))

    watcher = threading.Thread(target=watch)
    watcher.start()
    a = analyse(state, time_ms=time_ms)
    cpu_end, wall = time.clock_gettime(clock), time.perf_counter() - start
    watcher.join()
    return a, max(0.0, cpu_end - at_limit[0]), wall


def test_a_deadline_stops_the_search_of_a_10x10_board():
    game = load_game("dots-and-boxes", width=10, height=10)
    for moves in ([], [(1, 1, 1), (5, 5, 2), (10, 11, 1)]):
        st = game.new_state()
        for m in moves:
            st.play(m)
        a, cpu_late, wall = _timed(st, 200)
        assert a.core == "python"  # one thread: the thread's CPU time is the search's
        assert cpu_late <= CPU_SLACK_S, cpu_late
        assert wall <= 0.2 + WALL_SLACK_S, wall
        assert a.best_move in st.legal_moves()
        assert not a.exact
        assert len(a.moves) == len(st.legal_moves())


def test_a_deadline_stops_the_search_of_a_20x20_midgame():
    import random

    game = load_game("dots-and-boxes", width=20, height=20)
    st = game.new_state()
    rng = random.Random(1)
    for _ in range(500):  # lots of chains and handouts on the board
        st.play(rng.choice(st.legal_moves()))
    a, cpu_late, wall = _timed(st, 200)
    assert a.core == "python"
    assert cpu_late <= CPU_SLACK_S, cpu_late
    assert wall <= 0.2 + WALL_SLACK_S, wall
    assert a.best_move in st.legal_moves()


def test_progress_is_reported_after_each_depth():
    game = load_game("dots-and-boxes", width=3, height=3)
    seen: list[Progress] = []
    a = analyse(game.new_state(), time_ms=None, depth=3, on_progress=seen.append)
    assert [p.depth for p in seen] == [1, 2, 3][:len(seen)] and len(seen) == 3
    assert a.depth == 3
    assert all(p.best_move is not None for p in seen)
    assert seen[-1].nodes <= a.nodes


def test_node_limit_stops_the_search():
    game = load_game("dots-and-boxes", width=5, height=5)
    a = analyse(game.new_state(), time_ms=None, nodes=300)
    assert a.nodes <= 300 + 16
    assert a.best_move in game.new_state().legal_moves()


def test_multipv_limits_moves_and_to_dict_is_json():
    game = load_game("dots-and-boxes", width=2, height=2)
    a = analyse(game.new_state(), time_ms=None, multipv=3)
    assert len(a.moves) == 3
    assert all(m.exact for m in a.moves)
    d = json.loads(json.dumps(a.to_dict()))
    assert d["best_move"] == list(a.best_move) and d["value"] == 2 and d["exact"] is True
    assert set(d) >= {"best_move", "value", "exact", "bound", "pv", "depth", "nodes", "nps",
                      "time_ms", "tt_hits", "moves"}


def test_time_bounded_answer_on_midgame_5x5():
    """An analysis with a time limit alone, where no proof fits (56 undrawn lines): a legal
    best move, an estimate, progress after each depth. (Two seconds: the first depth, a few
    microseconds, is done whatever the machine's load.)"""
    game = load_game("dots-and-boxes", width=5, height=5)
    st = game.new_state()
    for m in [(1, 1, 1), (3, 3, 2), (5, 6, 1), (2, 4, 1)]:
        st.play(m)
    seen = []
    a = analyse(st, time_ms=2000, on_progress=seen.append)
    assert a.best_move in st.legal_moves() and not a.exact and a.bound != "exact"
    assert seen and a.depth >= 1 and a.nodes > 0 and a.nps > 0
    assert a.moves[0].move == a.best_move


def test_iterate_yields_one_result_per_depth_and_caller_owns_time():
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.driver import iterate
    from boxfish.engine.dots.search.node import Searcher

    s = Searcher(tables(4, 4))
    depths = []
    for result in iterate(s, 0, multipv=1):
        depths.append(result.depth)
        assert result.moves and not result.solved
        if len(depths) == 3:
            break  # the caller stops whenever it likes
    assert depths == [1, 2, 3]


def test_iterate_reads_solve_lines_when_called(monkeypatch):
    """A 2x2 board (12 lines) is searched to the end from the third iteration, unless the
    module's SOLVE_LINES, changed after import, says otherwise."""
    from boxfish.engine.dots.search import driver as search
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.node import Searcher

    def third_depth():
        s = Searcher(tables(2, 2))
        results = list(itertools.islice(search.iterate(s, 0, multipv=1, refine=False), 3))
        return results[2].depth, results[2].solved

    assert third_depth() == (12, True)
    monkeypatch.setattr(search, "SOLVE_LINES", 4)
    depth, _solved = third_depth()
    assert depth == 3


def test_exact_solve_of_a_loony_5x5_position():
    """Every horizontal line drawn: each row is an independent 5-chain, which the chain DP
    values at once. A timed analysis (a limit it never nears) comes back exact with the
    reference solver's value, -9 as counted by hand (the opener of each of five 5-chains
    but the last gets two boxes of it back: 8 - 17), and every move's."""
    game = load_game("dots-and-boxes", width=5, height=5)
    st = game.new_state()
    for y in range(1, 7):
        for x in range(1, 6):
            st.play((x, y, 1))
    from boxfish.engine.dots.search.board import tables

    t = tables(5, 5)
    truth = reference_move_values(5, 5, st.drawn)
    assert max(truth.values()) == reference_value(5, 5, st.drawn) == -9
    a = analyse(st, time_ms=60_000)
    assert a.exact and a.value == -9
    assert all(m.exact for m in a.moves)
    assert {t.geo.line_id(*m.move): m.value for m in a.moves} == truth


def test_bounds_of_an_unfinished_analysis_are_true_bounds():
    """A search stopped early labels a value "exact", "upper" or "lower" only when it was
    proven (no heuristic leaf below it); every such label is checked against the reference
    solver's value of the move (and of the position for the position's own bound)."""
    import random

    from boxfish.engine.dots.search.board import tables

    t = tables(3, 3)
    game = load_game("dots-and-boxes", width=3, height=3)
    rng = random.Random(11)
    labelled = 0
    for nodes in (300, 3000, 20000):
        for _ in range(3):
            state = game.new_state()
            for _ in range(rng.randint(2, 6)):
                safe = state.safe_moves() or state.legal_moves()
                state.play(rng.choice(sorted(safe)))
            a = analyse(state, time_ms=None, nodes=nodes)
            true_of = {t.moves[ln]: v
                       for ln, v in reference_move_values(3, 3, state.drawn).items()}
            true_value = max(true_of.values())
            for m in a.moves:
                if m.bound == "exact":
                    assert m.exact and m.value == true_of[m.move]
                elif m.bound == "upper":
                    assert true_of[m.move] <= m.value
                elif m.bound == "lower":
                    assert true_of[m.move] >= m.value
                else:
                    assert m.bound == "estimate" and not m.exact
                    continue
                labelled += 1
            if a.bound == "exact":
                assert a.value == true_value
            elif a.bound == "lower":
                assert true_value >= a.value
            elif a.bound == "upper":
                assert true_value <= a.value
    assert labelled > 0


def test_a_proof_cut_short_keeps_the_bounds_its_passes_proved():
    """The first root move of a proof is searched by zero-window passes; a node limit that
    stops it after the first pass still reports that pass's proven bound, a true bound of the
    reference solver's value of the move."""
    from boxfish.engine.dots.search.board import tables

    t = tables(3, 3)
    game = load_game("dots-and-boxes", width=3, height=3)
    a = analyse(game.new_state(), time_ms=None, nodes=30_000)
    assert not a.exact
    bounded = [m for m in a.moves if m.bound in ("upper", "lower")]
    assert bounded, [(m.move, m.value, m.bound) for m in a.moves]
    lines = [t.geo.line_id(*m.move) for m in bounded]
    solved = {t.moves[ln]: v for ln, v in reference_move_values(3, 3, 0, lines).items()}
    for m in bounded:
        if m.bound == "upper":
            assert solved[m.move] <= m.value
        else:
            assert solved[m.move] >= m.value


def _process_state():
    import gc
    import sys
    return sys.getrecursionlimit(), gc.isenabled(), gc.get_threshold()


def test_a_search_leaves_the_garbage_collector_and_the_recursion_limit_alone():
    """No process-wide side effects: neither the collector nor the recursion limit is
    changed by an analysis, a time-bounded one on 20x20 (840 lines) or an exact 3x3 solve,
    and a caller's disabled collector stays disabled."""
    import gc

    before = _process_state()
    a = analyse(load_game("dots-and-boxes", width=20, height=20).new_state(), time_ms=150)
    assert a.best_move is not None
    assert _process_state() == before
    b = analyse(load_game("dots-and-boxes", width=3, height=3).new_state(), time_ms=None)
    assert b.exact and b.value == -3  # the known value (and the reference solver's)
    assert _process_state() == before
    gc.disable()
    try:
        analyse(load_game("dots-and-boxes", width=2, height=2).new_state(), time_ms=None)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert _process_state() == before


def test_a_low_recursion_limit_is_raised_for_the_call_only():
    """A search that needs more frames than the limit leaves (here a caller's low limit)
    raises it for the duration of the call and puts it back."""
    import sys

    from boxfish.engine.dots.search.driver import analyse_position

    drawn = 239330986697057503  # a 5x5 position with 30 undrawn lines, solved exactly
    want = analyse_position(5, 5, drawn)
    assert want.exact and want.value == reference_value(5, 5, drawn)
    old = sys.getrecursionlimit()
    try:
        low = 1  # the lowest limit allowed here: just above the depth in use
        while True:
            try:
                sys.setrecursionlimit(low)
                break
            except RecursionError:
                low += 1
        low += 5  # fewer frames than the proof needs (about 20 more)
        sys.setrecursionlimit(low)
        got = analyse_position(5, 5, drawn)
        assert sys.getrecursionlimit() == low
    finally:
        sys.setrecursionlimit(old)
    assert (got.value, got.nodes, got.best_move) == (want.value, want.nodes, want.best_move)


def test_a_closed_searcher_is_freed_by_reference_counting():
    import gc
    import weakref

    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.node import Searcher

    s = Searcher(tables(2, 2))
    s.search(0, -(1 << 20), 1 << 20, 1 << 16)
    ref = weakref.ref(s)
    s.close()
    gc.disable()
    try:
        del s
        assert ref() is None
    finally:
        gc.enable()


def test_a_timed_5x5_position_past_the_safe_phase_is_proven():
    """30 undrawn lines: iterative deepening alone never proves it (long-chain sacrifices are
    pruned in heuristic iterations); the proof attempts of a timed analysis do (a few
    hundredths of a second), within three times the nodes of the untimed solve (one thread:
    the same nodes on every run), with the reference solver's value and a best move worth
    it. (The limit, never neared, only chooses the timed driver.)"""
    from boxfish.engine.analysis import Limit
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.driver import analyse_position

    drawn = 239330986697057503
    t = tables(5, 5)
    assert (t.full & ~drawn).bit_count() == 30
    value = reference_value(5, 5, drawn)
    untimed = analyse_position(5, 5, drawn, multipv=1, threads=1)
    a = analyse_position(5, 5, drawn, Limit(time_ms=60_000), multipv=1, threads=1)
    assert a.exact and a.bound == "exact" and a.value == value
    assert a.nodes <= 3 * untimed.nodes, (a.nodes, untimed.nodes)
    mv = t.geo.line_id(*a.best_move)
    assert reference_move_values(5, 5, drawn, [mv]) == {mv: value}


def test_the_time_limit_counts_from_the_call_to_analyse(monkeypatch):
    """``engine.analyse`` takes the time before it hands over to the game (whose first call
    imports its search), and each game's search counts its limit from that start."""
    from boxfish.engine import analysis
    from boxfish.engine.analysis import Limit

    for name, params in (("dots-and-boxes", {"width": 3, "height": 3}),
                         ("extreme-tictactoe", {})):
        game = load_game(name, **params)
        seen = {}
        real = type(game).analyse

        def spy(self, *args, start=None, seen=seen, real=real, **kwargs):
            seen["start"] = start
            return real(self, *args, start=start, **kwargs)

        monkeypatch.setattr(type(game), "analyse", spy)
        t0 = time.perf_counter()
        analysis.analyse(game.new_state(), time_ms=50)
        t1 = time.perf_counter()
        assert seen["start"] is not None and t0 <= seen["start"] <= t1
        monkeypatch.undo()

        # a start one second ago: the 200 ms are already used up
        a = game.analyse(game.new_state(), Limit(time_ms=200), None, None,
                         start=time.perf_counter() - 1.0)
        assert a.time_ms >= 1000, (name, a.time_ms)
        assert a.best_move in game.new_state().legal_moves()


def test_dots_analyses_have_no_mate_distance():
    game = load_game("dots-and-boxes", width=2, height=2)
    progress = []
    exact = analyse(game.new_state(), time_ms=None, on_progress=progress.append)
    bounded = analyse(load_game("dots-and-boxes", width=4, height=4).new_state(),
                      time_ms=None, depth=2)
    for a in (exact, bounded):
        assert a.mate_in is None and all(m.mate_in is None for m in a.moves)
        d = a.to_dict()
        assert d["mate_in"] is None and all(m["mate_in"] is None for m in d["moves"])
    assert exact.exact and progress and all(p.mate_in is None for p in progress)


def test_big_boards_read_the_clock_at_every_node():
    """A node of a 20x20 search costs a millisecond or more: 16 nodes between two looks at
    the clock overran 200 ms deadlines by 17 ms. Past 128 lines the deadline is checked at
    every node (the node budget still every 16); smaller boards check every 16 nodes."""
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.node import Searcher
    from boxfish.engine.dots.search.table import INF, PROVEN
    from boxfish.engine.search import SearchAborted

    for (w, h), nodes in {(20, 20): 1, (9, 9): 1, (5, 5): 16}.items():
        s = Searcher(tables(w, h), deadline=time.perf_counter() - 1)
        with pytest.raises(SearchAborted):
            s.search(0, -INF, INF, PROVEN)
        assert s.nodes == nodes, (w, h)
    s = Searcher(tables(20, 20), max_nodes=5)
    with pytest.raises(SearchAborted):
        s.search(0, -INF, INF, 2)
    assert s.nodes == 16
