"""``engine.SearchCache``: every cache of a game's search kept between analyses, bounded,
emptied by ``clear()``, and never wrong."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from boxfish import engine
from boxfish.engine import SearchCache, analyse, load_game
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.xttt.search import XtttCaches


def _position(moves):
    game = load_game("dots-and-boxes", width=3, height=3)
    state = game.new_state()
    for m in moves:
        state.play(m)
    return state


OPENING = [(1, 1, 1), (2, 2, 2), (3, 4, 1), (4, 1, 2)]


def test_a_warm_cache_gives_the_same_exact_answers_with_fewer_nodes():
    cold_a = analyse(_position(OPENING), time_ms=None)
    cold_b = analyse(_position(OPENING + [(2, 1, 1)]), time_ms=None)
    cache = SearchCache(max_entries=500_000)
    warm_a = analyse(_position(OPENING), time_ms=None, cache=cache)
    warm_b = analyse(_position(OPENING + [(2, 1, 1)]), time_ms=None, cache=cache)
    for cold, warm in ((cold_a, warm_a), (cold_b, warm_b)):
        assert cold.exact and warm.exact
        assert warm.value == cold.value
        assert {m.move: m.value for m in warm.moves} == {m.move: m.value for m in cold.moves}
        assert all(m.exact for m in warm.moves)
    # the second position was inside the first one's tree
    assert warm_b.nodes < cold_b.nodes / 2
    assert len(cache) == 1


def test_time_bounded_answers_from_a_warm_cache_are_legal_and_not_falsely_exact():
    cache = SearchCache(max_entries=200_000)
    game = load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    for m in [(1, 1, 1), (3, 3, 2), (5, 6, 1), (6, 2, 2)]:
        state.play(m)
    first = analyse(state, time_ms=150, cache=cache)
    second = analyse(state, time_ms=150, cache=cache)
    legal = set(state.legal_moves())
    for a in (first, second):
        assert a.best_move in legal
        assert not a.exact and a.bound != "exact"  # 56 lines left: nothing is proven


def test_owners_are_per_board_size_and_the_least_recently_used_is_dropped():
    cache = SearchCache(max_entries=10_000, max_tables=2)
    for w, h in [(2, 2), (2, 3), (2, 2), (3, 2)]:
        state = load_game("dots-and-boxes", width=w, height=h).new_state()
        analyse(state, time_ms=None, cache=cache)
    assert len(cache) == 2
    owners = cache.owners()
    assert list(owners) == [("dots-and-boxes", 2, 2), ("dots-and-boxes", 3, 2)]
    for owner in owners.values():
        assert isinstance(owner, DotsCaches) and 0 < len(owner) <= 10_000
    assert cache.entries() == sum(len(o) for o in owners.values())


def test_a_table_stays_within_max_entries():
    cache = SearchCache(max_entries=300)
    state = load_game("dots-and-boxes", width=2, height=3).new_state()
    a = analyse(state, time_ms=None, cache=cache)
    assert a.exact and a.value == -2
    owner = cache.owners()[("dots-and-boxes", 2, 3)]
    assert len(owner.tt) <= owner.bounds()["tt"] and len(owner) <= 300


def test_extreme_tictactoe_uses_the_cache_and_keeps_it_bounded():
    cache = SearchCache(max_entries=2_000)
    state = load_game("extreme-tictactoe").new_state()
    state.play((0, 0))
    analyse(state, depth=3, time_ms=None, cache=cache)
    owner = cache.owners()["extreme-tictactoe"]
    assert isinstance(owner, XtttCaches)
    table = owner.tt
    assert len(table) > 0 and len(owner.blocks) > 0
    grown = len(table)
    # a second search with a table that has no room left starts from an empty one
    for i in range(cache.max_entries + 1 - grown):
        table[-1 - i] = (0, 0, 0, -1, False)
    analyse(state, depth=2, time_ms=None, cache=cache)
    assert 0 < len(table) <= owner.tt_entries
    assert len(owner) <= cache.max_entries


def _dots_position(w, h, moves=()):
    state = load_game("dots-and-boxes", width=w, height=h).new_state()
    for m in moves:
        state.play(m)
    return state


@pytest.mark.parametrize("core", ["c", "python"])
def test_clear_empties_every_cache_of_every_owner(core):
    cache = SearchCache(max_entries=100_000, max_tables=3)
    # a heuristic search fills the evaluation's memos; a proof the chain DP's
    analyse(_dots_position(4, 4), time_ms=None, depth=3, cache=cache, core=core)
    analyse(_dots_position(3, 3, OPENING), time_ms=None, cache=cache, core=core)
    analyse(load_game("extreme-tictactoe").new_state(), time_ms=None, depth=2, cache=cache)
    owners = cache.owners()
    assert len(owners) == 3
    sizes = {key: owner.sizes() for key, owner in owners.items()
             if isinstance(owner, DotsCaches)}
    # an owner holds the caches of the core that searched with it, and only those
    # (4x4 has a learned evaluation: its memo, which the default analysis fills, and its
    # Nimstring memo, which only control fills: tests/engine/dots/test_nimstring.py)
    names = {"c": {"compiled", "compiled_memos", "compiled_nim"},
             "python": {"tt", "values", "ends", "dp", "learned", "nimstring"}}[core]
    assert set(sizes[("dots-and-boxes", 4, 4)]) == names
    nim = {"compiled_nim", "nimstring"}
    assert all(v for k, v in sizes[("dots-and-boxes", 4, 4)].items() if k not in nim), sizes
    if core == "python":
        assert sizes[("dots-and-boxes", 3, 3)]["tt"] and sizes[("dots-and-boxes", 3, 3)]["dp"]
    else:
        assert sizes[("dots-and-boxes", 3, 3)]["compiled"]
        assert owners[("dots-and-boxes", 3, 3)].compiled.stats()["loony_entries"]
    xttt = owners["extreme-tictactoe"]
    assert len(xttt.tt) and len(xttt.blocks)
    cache.clear()
    assert len(cache) == 0 and cache.entries() == 0
    # the owners a search may still hold are empty too
    for owner in owners.values():
        assert len(owner) == 0
        if isinstance(owner, DotsCaches) and core == "python":
            assert not any(owner.sizes().values())
            assert not owner.evaluator.values and not owner.evaluator.ends
            assert not owner.dp.memo and not owner.tt.table
        elif isinstance(owner, DotsCaches):
            assert not any(owner.sizes().values())
            assert len(owner.compiled) == 0 and owner.compiled.get(0) is None
        else:
            assert not owner.tt and not owner.blocks.table


@pytest.mark.parametrize("core", ["c", "python"])
@pytest.mark.parametrize("max_entries", [1, 16, 200, 5_000])
def test_a_tiny_cache_keeps_every_cache_within_its_bound(max_entries, core):
    """Searches that fill more than ``max_entries`` entries (a 4x3 heuristic search: the
    evaluation's memos; a 2x3 proof: the table and the chain DP; Extreme Tic-Tac-Toe: its
    table and block values) leave every cache within its bound, and right answers."""
    cache = SearchCache(max_entries=max_entries, max_tables=3)
    free = SearchCache(max_entries=10_000_000, max_tables=3)
    for c in (cache, free):
        a = analyse(_dots_position(4, 3), time_ms=None, depth=3, cache=c, core=core)
        assert a.value == 2
        b = analyse(_dots_position(2, 3), time_ms=None, cache=c, core=core)
        assert b.exact and b.value == -2
        x = analyse(load_game("extreme-tictactoe").new_state(), time_ms=None, depth=3, cache=c)
        assert x.value == 3667
    if max_entries < 1_000:
        assert free.entries() > 3 * max_entries  # the searches would have exceeded it
    assert len(cache) == 3
    for key, owner in cache.owners().items():
        # each cache keeps at least one entry (the compiled Nimstring memo four): an owner
        # holds at most max(max_entries, 8)
        assert len(owner) <= max(max_entries, 8), (key, owner)
        if isinstance(owner, DotsCaches):
            bounds = owner.bounds()
            assert sum(bounds.values()) <= max(max_entries, 8)
            for name, n in owner.sizes().items():
                assert n <= bounds[name], (key, name, n, bounds)
        else:
            assert len(owner.tt) <= owner.tt_entries
            assert len(owner.blocks) <= owner.blocks.max_entries
            assert owner.tt_entries + owner.blocks.max_entries <= max(max_entries, 2)


def test_the_budget_split():
    def made(owner):
        # every cache made (each is made by the first search that needs it)
        owner.tt, owner.evaluator, owner.learned_evaluator(), owner.compiled_table()
        return owner.bounds()

    owner = SearchCache(max_entries=1_000_000).owner(("dots-and-boxes", 5, 5),
                                                     lambda n: DotsCaches(_tables(5, 5), n))
    assert owner.bounds() == {}
    # the compiled table: the Python table's share in 16-byte entries (12,000,000 bytes),
    # rounded down to a power of two of entries; its memos: a power of two of the share
    # (5x5 has a learned evaluation: its memo and its Nimstring memo are the fourth and
    # fifth auxiliary caches; the compiled Nimstring memo has four times a memo's slots)
    assert made(owner) == {"tt": 1_000_000 - 5 * 62_500, "values": 62_500, "ends": 62_500,
                           "dp": 62_500, "learned": 62_500, "nimstring": 62_500,
                           "compiled": 1 << 19, "compiled_memos": 3 << 15,
                           "compiled_nim": 4 << 15}
    assert owner.compiled.max_nbytes == 16 << 19 and not owner.compiled.wide
    big = made(DotsCaches(_tables(5, 5), 10_000_000))
    assert big["values"] == big["ends"] == big["dp"] == big["learned"] == 65_536
    assert big["nimstring"] == 65_536
    assert big["tt"] == 10_000_000 - 5 * 65_536
    # a search given no cache: the Python search's usual 2,000,000-entry table, 65,536 for
    # the rest; the compiled table: the machine's share (own_table_bytes) in 16-byte entries,
    # rounded down to a power of two
    from boxfish.engine.dots.search.caches import own_table_bytes
    assert made(DotsCaches(_tables(5, 5))) == {
        "tt": 2_000_000, "values": 65_536, "ends": 65_536, "dp": 65_536, "learned": 65_536,
        "nimstring": 65_536, "compiled": 1 << ((own_table_bytes() // 16).bit_length() - 1),
        "compiled_memos": 3 << 16, "compiled_nim": 4 << 16}
    # a board of more than 64 lines: 32-byte entries; table_bytes given: that many bytes
    wide = DotsCaches(_tables(6, 6), 1_000_000, table_bytes=3 << 20)
    assert wide.compiled_table().wide and wide.compiled.max_nbytes == 2 << 20
    x = XtttCaches(1_000_000)
    assert x.blocks.max_entries == 62_500 and x.tt_entries == 937_500
    assert 2 * x.tt_max + 1 <= x.tt_entries


def _tables(w, h):
    from boxfish.engine.dots.search.board import tables
    return tables(w, h)


def test_two_caches_share_no_entries():
    one, two = SearchCache(max_entries=100_000), SearchCache(max_entries=100_000)
    analyse(_dots_position(4, 4), time_ms=None, depth=3, cache=one)
    assert one.entries() > 0 and two.entries() == 0
    key = ("dots-and-boxes", 4, 4)
    analyse(_dots_position(4, 4), time_ms=None, depth=3, cache=two)
    a, b = one.owners()[key], two.owners()[key]
    assert a is not b
    for x, y in ((a.tt, b.tt), (a.evaluator, b.evaluator), (a.dp, b.dp),
                 (a.evaluator.values, b.evaluator.values), (a.dp.memo, b.dp.memo)):
        assert x is not y
    two.clear()
    assert len(a) > 0
    analyse(load_game("extreme-tictactoe").new_state(), time_ms=None, depth=2, cache=one)
    analyse(load_game("extreme-tictactoe").new_state(), time_ms=None, depth=2, cache=two)
    xa, xb = one.owners()["extreme-tictactoe"], two.owners()["extreme-tictactoe"]
    assert xa.tt is not xb.tt and xa.blocks is not xb.blocks


@pytest.mark.parametrize("core", ["c", "python"])
def test_a_search_without_a_cache_keeps_nothing_after_it(core):
    """Two analyses without a ``SearchCache`` share no memo: each search's caches are its
    own (and nothing is left at module level: see the next test)."""
    from boxfish.engine.dots.search.driver import analyse_position
    from boxfish.engine.dots.search.node import CompiledSearcher, Searcher

    t = _tables(3, 3)
    s1, s2 = Searcher(t), Searcher(t)
    assert s1.caches is not s2.caches and s1.tt is s1.caches.tt
    c1, c2 = CompiledSearcher(t), CompiledSearcher(t)
    assert c1.caches is not c2.caches and c1.tt is c1.caches.compiled is not c2.tt
    owner = DotsCaches(t)
    a = analyse_position(3, 3, 0, engine.Limit(depth=3), caches=owner, core=core)
    if core == "python":
        assert len(owner.tt) > 0 and len(owner.evaluator.values) > 0
    else:
        assert len(owner.compiled) > 0 and owner.compiled.stats()["eval_entries"] > 0
    assert analyse_position(3, 3, 0, engine.Limit(depth=3), core=core).nodes == a.nodes


# names at module level that are mutable containers but no cache
_NOT_CACHES = {("boxfish.engine.game", "_REGISTRY")}  # the games, registered at import


def test_no_module_level_caches_in_the_engine():
    """Every cache belongs to an owner object (a search's, or a ``SearchCache``'s): no
    engine module holds a dict, list, set or bytearray at module level (read-only tables
    are tuples or bytes), and the per-size tables' memoisation is bounded."""
    found = []
    for info in pkgutil.walk_packages(engine.__path__, "boxfish.engine."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith("__") or (info.name, name) in _NOT_CACHES:
                continue
            if isinstance(value, (dict, list, set, bytearray)):
                found.append((info.name, name, type(value).__name__))
    assert found == []
    from boxfish.engine.dots.geometry import geometry
    from boxfish.engine.dots.search.board import tables
    for fn in (geometry, tables):
        assert fn.cache_info().maxsize is not None


@pytest.mark.parametrize("kwargs", [{"max_entries": 0}, {"max_tables": 0}])
def test_bad_sizes_are_rejected(kwargs):
    with pytest.raises(ValueError, match="must be >= 1"):
        SearchCache(**kwargs)


def test_exported_from_the_engine():
    assert engine.SearchCache is SearchCache
    assert "SearchCache" in engine.__all__


def test_a_search_without_a_cache_gets_a_table_sized_to_the_machine():
    """A one-off library or CLI solve's compiled table may grow to a quarter of the machine's
    memory (at most 4 GiB), not the 32 MB of a 2,000,000-entry owner it had before."""
    import os

    import pytest

    from boxfish.engine.dots.search import caches, compiled
    from boxfish.engine.dots.search.board import tables

    if not compiled.available():
        pytest.fail("the compiled core is not built")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    budget = max(caches.OWN_TABLE_MIN_BYTES, min(caches.OWN_TABLE_MAX_BYTES, memory // 4))
    assert caches.own_table_bytes() == budget
    own = caches.DotsCaches(tables(4, 4))
    assert own.table_bytes == budget
    table = own.compiled_table()
    assert budget // 2 < table.max_nbytes <= budget
    assert table.nbytes < 64 << 20  # it starts small and grows as it fills
    owner = caches.DotsCaches(tables(4, 4), max_entries=1_000_000)
    assert owner.table_bytes == owner._compiled_entries() * compiled.entry_bytes(40)
