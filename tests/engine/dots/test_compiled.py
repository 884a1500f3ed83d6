"""The compiled core of the Dots search: the same search as the Python one, its table, its
limits, its fallback and its build.

The node-for-node equality on the recorded searches is in ``test_search_regression.py``
(every case runs on both cores); here every field of whole analyses is compared too.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boxfish import engine
from boxfish.engine.analysis import Limit, SearchCache
from boxfish.engine.dots.search import compiled
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.node import CompiledSearcher, Searcher
from boxfish.engine.dots.search.table import INF, PROVEN, TranspositionTable
from boxfish.engine.search import SearchAborted

ROOT = Path(__file__).resolve().parents[3]


def test_the_compiled_core_is_built():
    """CI builds the extension (``pip install`` with a C compiler): it must be there."""
    assert compiled.available(), compiled.UNAVAILABLE_REASON


def _position(w, h, undrawn, seed):
    """Random play that takes what is offered and otherwise avoids handing boxes over."""
    t = tables(w, h)
    rng = random.Random(seed)
    d = 0
    while (t.full & ~d).bit_count() > undrawn:
        vals = t.valences(d)
        free = [ln for ln in range(t.nl) if not d >> ln & 1]
        caps = [ln for ln in free if any(vals[b] == 3 for b in t.line_boxes[ln])]
        safe = [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]
        d |= 1 << rng.choice(caps or safe or free)
    return d


def _fields(a):
    d = a.to_dict()
    for volatile in ("time_ms", "nps", "core"):
        d.pop(volatile)
    return d


# (w, h, drawn, limit, multipv, symmetry): solves with every move refined, multipv, node and
# depth limits, no symmetry, wide (more than 64 lines) boards
AGREE = [
    (3, 3, 0, None, None, True),
    (2, 5, 0, None, 1, True),
    (4, 3, _position(4, 3, 20, 1), None, None, True),
    (5, 5, _position(5, 5, 30, 2), None, 3, True),
    (5, 5, _position(5, 5, 40, 3), Limit(nodes=30_000), None, True),
    (5, 5, 0, Limit(depth=3), 2, False),
    (6, 6, _position(6, 6, 40, 4), Limit(nodes=20_000), None, True),
    (7, 7, _position(7, 7, 70, 5), Limit(depth=3), None, True),
    (8, 7, _position(8, 7, 60, 6), Limit(nodes=10_000), None, True),
]


@pytest.mark.parametrize("w, h, drawn, limit, multipv, symmetry", AGREE,
                         ids=[f"{c[0]}x{c[1]}-{i}" for i, c in enumerate(AGREE)])
def test_both_cores_give_the_same_analysis(w, h, drawn, limit, multipv, symmetry):
    """Value, bound, best move, every move's value and bound, the principal variation, the
    depth, nodes and table hits: all equal."""
    py = analyse_position(w, h, drawn, limit, multipv, symmetry=symmetry, core="python")
    c = analyse_position(w, h, drawn, limit, multipv, symmetry=symmetry, core="c")
    assert (py.core, c.core) == ("python", "c")
    assert _fields(c) == _fields(py)


def test_exact_values_of_small_boards():
    """Known values (Barker and Korf 2012; Wilson's tables): 2x2 +2, 3x3 -3, 2x4 +2, 2x5 -2
    (the first player's margin) and 3x4 a tie, solved by the compiled core."""
    for (w, h), value in {(2, 2): 2, (3, 3): -3, (2, 4): 2, (2, 5): -2, (4, 3): 0}.items():
        a = analyse_position(w, h, 0, multipv=1, solve=True)
        assert a.core == "c" and a.exact and a.value == value, (w, h, a)


@pytest.mark.parametrize("w, h", [(1, 1), (2, 3), (3, 3), (5, 5), (6, 6), (7, 7), (8, 7)])
def test_the_key_is_the_python_key(w, h):
    """The compiled key (smallest twin-sorted image, first symmetry reaching it) is
    ``Tables.key``, with and without symmetries."""
    t = tables(w, h)
    board = compiled.board(t)
    rng = random.Random(w * 100 + h)
    for _ in range(300):
        d = rng.getrandbits(t.nl) & rng.getrandbits(t.nl)
        assert board.key(d) == t.key(d, True)
        assert board.key(d, False) == t.key(d, False)


_OPS = st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 5, PROVEN]),
                          st.integers(-9, 9), st.integers(-9, 9), st.integers(-1, 30),
                          st.sampled_from(["exact", "lower", "upper", "range"])),
                max_size=60)


@settings(max_examples=200, deadline=None)
@given(_OPS)
def test_table_updates_follow_the_python_table(ops):
    """Below its capacity the compiled table keeps exactly what the Python table keeps: the
    same merge of proven entries, the same deeper-or-equal replacement of heuristic ones."""
    py = TranspositionTable(1000)
    c = compiled.new_table(1 << 16, 40)
    for key, depth, lo, hi, move, kind in ops:
        lo, hi = min(lo, hi), max(lo, hi)
        lo, hi = {"exact": (lo, lo), "lower": (lo, INF), "upper": (-INF, hi),
                  "range": (lo, hi)}[kind]
        py.store(key, depth, lo, hi, move)
        c.store(key, depth, lo, hi, move)
    for key in range(41):
        assert c.get(key) == py.get(key), key
    assert len(c) == len(py)


def test_a_full_table_replaces_by_its_rule():
    """A table of 16 entries: new positions replace heuristic entries before proven ones,
    and a heuristic entry never replaces a proven one."""
    tab = compiled.new_table(16 * 16, 40)
    assert tab.capacity == 16
    for k in range(16):
        tab.store(k, PROVEN, 1, 1, -1)
    tab.store(100, 3, 0, 0, 5)                     # heuristic: dropped, all are proven
    assert tab.get(100) is None and len(tab) == 16
    tab.store(101, PROVEN, 2, 2, -1)                # proven: replaces one
    assert tab.get(101) == (PROVEN, 2, 2, -1) and tab.evictions == 1
    tab.clear()
    assert len(tab) == 0 and tab.get(101) is None and tab.evictions == 0


def test_a_full_table_replaces_the_smallest_proof_first():
    """A proof's depth is PROVEN plus its subtree's size class; a full window replaces the
    proof of the smallest size class, and a key's proofs merge to the larger class."""
    tab = compiled.new_table(16 * 16, 40)
    for k in range(16):
        tab.store(k, PROVEN + 20 - (k == 5) * 10, 1, 1, -1)
    tab.store(100, PROVEN + 3, 2, 2, -1)
    assert tab.get(5) is None and tab.get(100) == (PROVEN + 3, 2, 2, -1)
    assert all(tab.get(k) is not None for k in range(16) if k != 5)
    tab.store(100, PROVEN, 1, 3, -1)
    assert tab.get(100) == (PROVEN + 3, 2, 2, -1)


def test_proofs_are_stored_with_their_size_class_and_keep_their_values():
    """With sized proofs the root's entry carries the bit length of the root's nodes; without,
    PROVEN; the value and the node count are the same (nothing was replaced)."""
    t = tables(3, 3)
    d = _position(3, 3, 18, 5)
    got = {}
    for sized in (False, True):
        s = CompiledSearcher(t)
        s.sized_proofs = sized
        v = s.search(d, -INF, INF, PROVEN)
        depth = s.tt.get(t.key(d)[0])[0]
        got[sized] = (v, s.nodes, depth)
    (v0, n0, d0), (v1, n1, d1) = got[False], got[True]
    assert (v0, n0) == (v1, n1) and d0 == PROVEN
    assert PROVEN < d1 <= PROVEN + n1.bit_length()


def test_the_phases_settle_every_node():
    """On one thread the nodes settled by each phase (node_leaf's three ways apart, and the
    parents' reads of their children's entries) add up to the nodes searched."""
    s = CompiledSearcher(tables(4, 4))
    s.search(_position(4, 4, 28, 3), -INF, INF, PROVEN)
    settled = s.core.settled
    assert sum(settled.values()) == s.nodes > 10_000
    assert all(settled[k] > 0 for k in ("node_captures", "node_probe", "chain_dp",
                                        "chain_graph", "node_etc", "node_children",
                                        "parent_read")), settled


def test_limits_stop_the_compiled_search_where_they_stop_the_python_one():
    t = tables(5, 5)
    d = _position(5, 5, 40, 7)
    for cls in (Searcher, CompiledSearcher):
        s = cls(t, max_nodes=1000)
        with pytest.raises(SearchAborted):
            s.search(d, -INF, INF, PROVEN)
        assert s.nodes == 1008  # the budget is checked every 16 nodes
    s = CompiledSearcher(t, deadline=time.perf_counter() - 1)
    with pytest.raises(SearchAborted):
        s.search(d, -INF, INF, PROVEN)
    assert s.nodes == 16


def test_bad_bitboards_are_refused():
    t = tables(3, 3)
    s = CompiledSearcher(t)
    for bad in (-1, 1 << t.nl, 1 << 200):
        with pytest.raises(ValueError):
            s.search(bad, -INF, INF, 3)
    with pytest.raises(TypeError):
        s.search("0", -INF, INF, 3)
    narrow = compiled.new_table(1 << 12, 24)
    with pytest.raises(ValueError, match="64 bits"):
        narrow.get(1 << 70)
    with pytest.raises(ValueError, match="wide table"):
        compiled.core(tables(6, 6), narrow, True, SearchAborted, time.perf_counter)


def test_a_search_cache_keeps_the_compiled_table_between_analyses():
    cache = SearchCache(max_entries=1_000_000, table_bytes=8 << 20)
    state = engine.load_game("dots-and-boxes", width=4, height=4).new_state()
    state.play((1, 1, 1))
    first = engine.analyse(state, time_ms=None, depth=5, cache=cache)
    owner = cache.owners()[("dots-and-boxes", 4, 4)]
    assert first.core == "c" and owner.compiled.max_nbytes == 8 << 20 and len(owner.compiled)
    again = engine.analyse(state, time_ms=None, depth=5, cache=cache)
    assert again.best_move == first.best_move and again.nodes < first.nodes / 2
    cache.clear()
    assert len(owner.compiled) == 0


def test_boards_past_the_core_and_a_missing_core_fall_back_to_python(monkeypatch):
    big = analyse_position(10, 10, 0, Limit(nodes=500))
    assert big.core == "python"
    with pytest.raises(ValueError, match="128 lines"):
        analyse_position(10, 10, 0, Limit(nodes=500), core="c")
    with pytest.raises(ValueError, match="core must be"):
        engine.analyse(engine.load_game("dots-and-boxes").new_state(), core="rust")
    with pytest.raises(ValueError, match="only the Python search"):
        engine.analyse(engine.load_game("extreme-tictactoe").new_state(), time_ms=50, core="c")
    monkeypatch.setattr(compiled, "_core", None)
    monkeypatch.setattr(compiled, "UNAVAILABLE_REASON", "not built here")
    with pytest.warns(RuntimeWarning, match="not built here"):
        a = analyse_position(3, 3, 0, Limit(depth=2))
    assert a.core == "python"
    with pytest.raises(ValueError, match="not built here"):
        analyse_position(3, 3, 0, Limit(depth=2), core="c")


def test_the_cli_says_which_core_ran():
    # --time 0: a solve, exact whatever the machine's load (a time limit could end first)
    cmd = [sys.executable, "-m", "boxfish.engine.cli", "--size", "3x3", "--time", "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "core c" in out and "value -3" in out
    out = subprocess.run(cmd + ["--core", "python", "--depth", "2"], capture_output=True,
                         text=True, check=True).stdout
    assert "core python" in out


def test_a_failed_build_warns_and_leaves_the_python_search(tmp_path):
    """``setup.py``'s build_ext: a compiler that fails is a warning, not a failed install."""
    core = Path("engine") / "dots" / "search" / "core"
    shutil.copy(ROOT / "setup.py", tmp_path)
    shutil.copytree(ROOT / core, tmp_path / core)
    env = {**os.environ, "CC": "false"}
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "WARNING: boxfish's compiled Dots-and-Boxes core could not be built" in r.stderr
    assert "pure-Python search" in r.stderr
    assert not list(tmp_path.rglob("_core*.so"))
