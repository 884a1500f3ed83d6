"""``engine.SearchCache``: tables kept between analyses, bounded, and never wrong."""

from __future__ import annotations

import pytest

from boxfish import engine
from boxfish.engine import SearchCache, analyse, load_game


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


def test_tables_are_per_board_size_and_the_least_recently_used_is_dropped():
    cache = SearchCache(max_entries=10_000, max_tables=2)
    for w, h in [(2, 2), (2, 3), (2, 2), (3, 2)]:
        state = load_game("dots-and-boxes", width=w, height=h).new_state()
        analyse(state, time_ms=None, cache=cache)
    assert len(cache) == 2
    keys = list(cache._tables)
    assert keys == [("dots-and-boxes", 2, 2), ("dots-and-boxes", 3, 2)]
    for tab in cache._tables.values():
        assert len(tab) <= 10_000


def test_a_table_stays_within_max_entries():
    cache = SearchCache(max_entries=300)
    state = load_game("dots-and-boxes", width=2, height=3).new_state()
    a = analyse(state, time_ms=None, cache=cache)
    assert a.exact and a.value == -2
    assert len(cache._tables[("dots-and-boxes", 2, 3)]) <= 300


def test_extreme_tictactoe_uses_the_cache_and_keeps_it_bounded():
    cache = SearchCache(max_entries=2_000)
    state = load_game("extreme-tictactoe").new_state()
    state.play((0, 0))
    analyse(state, depth=3, time_ms=None, cache=cache)
    table = cache._tables["extreme-tictactoe"]
    assert len(table) > 0
    grown = len(table)
    # a second search with a table past max_entries starts from an empty one
    for i in range(cache.max_entries + 1 - grown):
        table[-1 - i] = (0, 0, 0, -1, False)
    analyse(state, depth=2, time_ms=None, cache=cache)
    assert 0 < len(table) <= cache.max_entries


@pytest.mark.parametrize("kwargs", [{"max_entries": 0}, {"max_tables": 0}])
def test_bad_sizes_are_rejected(kwargs):
    with pytest.raises(ValueError, match="must be >= 1"):
        SearchCache(**kwargs)


def test_exported_from_the_engine():
    assert engine.SearchCache is SearchCache
    assert "SearchCache" in engine.__all__
