"""The compiled core on several threads (issue 23, item 2): exact values are the independent
reference solver's, limits hold for the threads together, and ``threads`` reaches the search
from ``analyse``, the CLI and the workers' settings.

The threaded search is Lazy SMP on one shared, lockless table (see ``core/threads.c``):
every assertion here is on what must hold whatever the threads' timing, never on a time."""

from __future__ import annotations

import json
import random

import pytest

from boxfish.engine import SearchCache, analyse, load_game
from boxfish.engine.analysis import usable_cores
from boxfish.engine.cli import main as cli_main
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search import compiled
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.node import CompiledSearcher
from boxfish.engine.dots.search.table import INF, PROVEN, TranspositionTable
from boxfish.engine.search import SearchAborted
from tests.engine.dots.reference import reference_move_values, reference_value

#: nodes the reference solver may search for one answer here (the positions below take at
#: most a few million): a budget, not a clock, so a loaded machine cannot make it give up
REFERENCE_NODES = 200_000_000

pytestmark = pytest.mark.skipif(not compiled.available(), reason="the compiled core is not built")


def lines_of(drawn: int, nl: int) -> str:
    return "".join("1" if drawn >> i & 1 else "0" for i in range(nl))


def _positions(w: int, h: int, undrawn: tuple[int, ...], n_each: int, seed: int) -> list[int]:
    """Positions from both generators (safe play; play 70-90% biased to safe moves)."""
    rng = random.Random(seed)
    out = []
    for gen in ("safe", "biased"):
        for _ in range(n_each):
            u = rng.choice(undrawn)
            p = (safe_play(rng, w, h, u) if gen == "safe"
                 else biased_play(rng, w, h, u, rng.uniform(0.7, 0.9)))
            out.append(p.drawn)
    return out


def _threaded(t, threads: int = 2, spawn_nodes: int = 0, **kw) -> CompiledSearcher:
    s = CompiledSearcher(t, threads=threads, **kw)
    s.core.spawn_nodes = spawn_nodes  # helpers from the first nodes on: more interleaving
    return s


@pytest.fixture
def searchers(monkeypatch):
    """The compiled searchers the analyses of the test make."""
    import boxfish.engine.dots.search.driver as dots_search

    made: list[CompiledSearcher] = []

    class Spy(CompiledSearcher):
        def __init__(self, *args, **kw) -> None:
            super().__init__(*args, **kw)
            made.append(self)

    monkeypatch.setattr(dots_search, "CompiledSearcher", Spy)
    return made


def test_threaded_analyses_give_the_reference_values(searchers):
    """``analyse(threads=2)`` without limits, on 4x4 and 5x5 positions of both generators
    big enough for the helpers to start: exact, and the reference solver's value."""
    cache = SearchCache(max_entries=500_000)
    cases = ([(4, 4, d) for d in _positions(4, 4, (26, 28, 30), 3, 2301)]
             + [(5, 5, d) for d in _positions(5, 5, (36, 38), 2, 2302)])
    for w, h, drawn in cases:
        t = tables(w, h)
        game = load_game("dots-and-boxes", width=w, height=h)
        state = game.from_lines(lines_of(drawn, t.nl), to_move=0)
        a = analyse(state, time_ms=None, threads=2, cache=cache)
        truth = reference_value(w, h, drawn, max_nodes=REFERENCE_NODES)
        assert a.exact and a.value == truth, (w, h, hex(drawn), a.value, truth)
        assert a.lower == a.upper == truth
    assert len(searchers) == len(cases)
    assert all(s.core.threads == 2 for s in searchers)
    assert sum(s.core.helper_nodes > 0 for s in searchers) >= len(cases) - 2


@pytest.mark.parametrize("table_bytes", [1 << 16, 64 << 20], ids=["tiny table", "64 MiB"])
def test_many_threaded_searches_give_the_reference_values(table_bytes):
    """Stress: full-window proofs on 3x3, 3x4 and 4x4 positions by four threads (more than
    the cores: more interleavings) that share one table across the searches, helpers from
    the first node. The tiny table (4096 entries) replaces entries all the time, so threads
    keep writing over the slots others read; the big one grows while they search."""
    checked = helped = 0
    for w, h, undrawn, seed in ((3, 3, (14, 18, 24), 11), (3, 4, (17, 21, 25), 12),
                                (4, 4, (22, 25), 13)):
        t = tables(w, h)
        caches = DotsCaches(t, table_bytes=table_bytes)
        for drawn in _positions(w, h, undrawn, 6, seed):
            s = _threaded(t, threads=4, caches=caches)
            v = s.search(drawn, -INF, INF, PROVEN)
            assert v == reference_value(w, h, drawn, max_nodes=REFERENCE_NODES), (w, h, hex(drawn))
            checked += 1
            helped += s.core.helper_nodes > 0  # (not in a search of under 16 nodes)
    assert checked == 36 and helped >= 30


def test_threaded_zero_window_passes_give_true_bounds():
    """MTD(f)'s zero-window passes on two threads: each pass's fail-high or fail-low value is
    a true bound of the reference value, and the passes meet at it."""
    t = tables(4, 4)
    for drawn in _positions(4, 4, (26, 29), 2, 2303):
        truth = reference_value(4, 4, drawn, max_nodes=REFERENCE_NODES)
        s = _threaded(t)
        lo, hi, guess = -INF, INF, 0
        while lo < hi:
            beta = min(max(guess + 1 if guess <= lo else guess, lo + 1), hi)
            v = s.search(drawn, beta - 1, beta, PROVEN)
            if v >= beta:
                assert truth >= v
                lo = v
            else:
                assert truth <= v
                hi = v
            guess = v
        assert lo == truth
        assert s.core.helper_nodes > 0


def test_a_table_grows_while_threads_search_it():
    """A search that fills the table past its growth point while two threads search it: the
    table grows (the threads stop between two nodes for it) and the value is exact."""
    t = tables(4, 4)
    drawn = _positions(4, 4, (29,), 1, 2304)[0]
    caches = DotsCaches(t, table_bytes=256 << 20)
    table = caches.compiled_table()
    start = table.capacity
    s = _threaded(t, caches=caches)
    v = s.search(drawn, -INF, INF, PROVEN)
    assert table.capacity > start
    assert len(table) * 8 <= table.capacity * 2  # grown as it filled, not after
    assert s.core.helper_nodes > 0
    assert v == reference_value(4, 4, drawn, max_nodes=REFERENCE_NODES)


def test_wide_tables_give_the_single_thread_values():
    """Boards of more than 64 lines (32-byte entries of 128-bit keys, past the reference
    solver): two threads prove what one proves."""
    t = tables(5, 6)
    assert t.nl > 64
    for drawn in _positions(5, 6, (40, 42), 2, 2305):
        one = CompiledSearcher(t).search(drawn, -INF, INF, PROVEN)
        two = _threaded(t)
        assert two.search(drawn, -INF, INF, PROVEN) == one, hex(drawn)
        assert two.caches.compiled_table().wide and two.core.helper_nodes > 0


def test_the_node_budget_counts_every_thread():
    """A node budget stops the threads together: the nodes reported are every thread's, they
    reach the budget (by at most a few checks' worth more), and the main thread searched
    fewer than the budget itself."""
    t = tables(5, 5)
    drawn = _positions(5, 5, (40,), 1, 2306)[0]
    budget = 200_000
    s = _threaded(t, max_nodes=budget)
    with pytest.raises(SearchAborted):
        s.search(drawn, -INF, INF, PROVEN)
    helpers = s.core.helper_nodes
    assert helpers > 0
    assert budget <= s.nodes <= budget + 2 * 64
    assert s.nodes - helpers < budget


def test_a_deadline_stops_every_thread():
    """A deadline stops a threaded search (SearchAborted, after the helpers ran); one
    already past stops it before any helper starts; a timed threaded analysis of a big board
    returns a legal move, not exact, and every later search on the core still works."""
    import time

    t = tables(5, 5)
    drawn = _positions(5, 5, (44,), 1, 2307)[0]
    s = _threaded(t)
    # set once the table is made, and a second away: the helpers start after 16 nodes, long
    # before it on any machine (the search itself would take hours)
    s.deadline = time.perf_counter() + 1.0
    with pytest.raises(SearchAborted):
        s.search(drawn, -INF, INF, PROVEN)
    assert s.core.helper_nodes > 0
    late = CompiledSearcher(t, threads=2, deadline=time.perf_counter() - 1)
    with pytest.raises(SearchAborted):
        late.search(drawn, -INF, INF, PROVEN)
    assert late.nodes == 16 and late.core.helper_nodes == 0
    game = load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    a = analyse(state, time_ms=300, threads=2)
    assert a.best_move in state.legal_moves() and not a.exact and a.core == "c"
    s.deadline = None
    small = _positions(5, 5, (20,), 1, 2308)[0]
    assert s.search(small, -INF, INF, PROVEN) == reference_value(5, 5, small)


def test_a_small_search_stays_on_one_thread():
    """Below ``spawn_nodes`` no helper starts: the search is the single-threaded one, node
    for node."""
    t = tables(3, 3)
    one = CompiledSearcher(t)
    two = CompiledSearcher(t, threads=2)
    assert two.core.threads == 2 and two.core.spawn_nodes > 0
    drawn = _positions(3, 3, (14,), 1, 2309)[0]
    assert two.search(drawn, -INF, INF, PROVEN) == one.search(drawn, -INF, INF, PROVEN)
    assert one.nodes < two.core.spawn_nodes
    assert (two.nodes, two.core.helper_nodes) == (one.nodes, 0)


def test_threads_are_checked():
    t = tables(2, 2)
    with pytest.raises(ValueError, match="threads"):
        CompiledSearcher(t, threads=0)
    with pytest.raises(ValueError, match="threads"):
        CompiledSearcher(t, threads=compiled.MAX_THREADS + 1)
    assert compiled.MAX_THREADS == compiled._core.MAX_THREADS
    assert compiled.NIM_SLOTS_PER_SLOT == compiled._core.NIM_SLOTS_PER_SLOT
    assert compiled.threads_of(0) == 1 and compiled.threads_of(1000) == compiled.MAX_THREADS
    state = load_game("dots-and-boxes", width=2, height=2).new_state()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threads"):
            analyse(state, time_ms=None, threads=bad)
    assert analyse(state, time_ms=None, threads=1000).value == 2  # capped, not refused


def test_the_python_search_runs_on_one_thread():
    """The Python core ignores ``threads``: the same search, node for node; so does Extreme
    Tic-Tac-Toe's."""
    one = analyse_position(3, 3, 0, multipv=1, core="python")
    two = analyse_position(3, 3, 0, multipv=1, core="python", threads=2)
    assert (two.nodes, two.value, two.exact) == (one.nodes, one.value, one.exact)
    xttt = load_game("extreme-tictactoe").new_state()
    assert analyse(xttt, time_ms=None, depth=2, threads=4).best_move is not None


def test_analyse_defaults_to_every_usable_core(searchers):
    state = load_game("dots-and-boxes", width=2, height=2).new_state()
    analyse(state, time_ms=None)
    analyse(state, time_ms=None, threads=3)
    assert [s.core.threads for s in searchers] == [min(usable_cores(), compiled.MAX_THREADS),
                                                   3]


def test_the_cli_takes_threads(capsys):
    assert cli_main(["--size", "3x3", "--time", "0", "--threads", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact"] and out["value"] == reference_value(3, 3, 0) == -3
    assert cli_main(["--size", "3x3", "--threads", "0"]) == 2
    assert "threads" in capsys.readouterr().err


_OPS = [(k, d, lo, hi, m) for k, d, lo, hi, m in
        ((1, 3, -2, 4, 7), (1, 5, 0, 0, 9), (1, 2, -9, 9, 1), (1, PROVEN, 1, INF, 3),
         (1, 9, 2, 2, 4), (1, PROVEN, -INF, 5, -1), (2, PROVEN, -INF, -64, 127),
         (1 << 100, 4, -64, 64, 0), (1 << 100 | 1, PROVEN, 3, 3, -1), (7 << 90, 1, -1, 1, 2))]


def test_wide_entries_keep_what_the_python_table_keeps():
    """The 32-byte entries (key, data, check) merge and replace as the Python table does,
    128-bit keys and the extreme values included."""
    py = TranspositionTable(1000)
    c = compiled.new_table(1 << 16, 100)
    assert c.wide
    for op in _OPS:
        py.store(*op)
        c.store(*op)
    for key in {op[0] for op in _OPS}:
        assert c.get(key) == py.get(key), key
    assert len(c) == len(py)
    with pytest.raises(ValueError):
        c.store(5, 1, 200, 300, 0)


def test_threaded_move_values_are_the_reference_values(searchers):
    """Every root move's value of an untimed analysis on two threads (the driver's proof
    iterations and refinements, on the table the helpers share) is the reference solver's."""
    t = tables(4, 4)
    drawn = _positions(4, 4, (28,), 1, 2310)[0]
    a = analyse_position(4, 4, drawn, core="c", threads=2)
    truth = reference_move_values(4, 4, drawn, max_nodes=REFERENCE_NODES)
    assert a.exact and len(a.moves) == len(truth)
    for m in a.moves:
        assert m.exact and m.value == truth[t.geo.line_id(*m.move)], m
    assert searchers and searchers[0].core.helper_nodes > 0
