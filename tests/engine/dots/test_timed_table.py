"""A timed search sizes its compiled table before it starts and never grows it mid-search
(issue 38: the doubling of a second's table, rehashing 64 MiB, overran deadlines by up to
a third); an untimed search still grows it as it fills."""

from __future__ import annotations

import random

from boxfish.engine.analysis import Limit
from boxfish.engine.dots import compiled
from boxfish.engine.dots.caches import DotsCaches, timed_table_bytes
from boxfish.engine.dots.positions import safe_play
from boxfish.engine.dots.search import analyse_position
from boxfish.engine.dots.search_board import tables

INITIAL_SLOTS = 1 << 16  # _core.c's INITIAL_SLOTS

def fill(table, n: int, start: int = 1) -> None:
    """Store ``n`` heuristic entries of distinct keys."""
    for k in range(start, start + n):
        table.store(k * 0x9E3779B97F4A7C15 & (1 << 60) - 1, 1, -1, 1, -1)


def test_reserve_grows_now_and_holds_the_size_until_release():
    table = compiled.new_table(1 << 26, 60)
    assert table.capacity == INITIAL_SLOTS
    fill(table, 1000)
    assert table.reserve(1 << 22) == 1 << 22  # 2^18 slots of 16 bytes
    assert table.capacity == 1 << 18 and len(table) == 1000  # entries kept
    fill(table, (1 << 18) // 4, start=10_000)  # far past the 1/8 at which it would double
    assert table.capacity == 1 << 18
    table.release()
    fill(table, 10, start=1 << 30)
    assert table.capacity > 1 << 18


def test_reserve_never_shrinks_nor_passes_the_tables_bound():
    table = compiled.new_table(1 << 22, 60)
    assert table.reserve(1 << 30) == 1 << 22
    assert table.reserve(1 << 16) == 1 << 22
    assert table.capacity == table.max_capacity


def test_a_timed_analysis_searches_on_the_table_it_reserved_and_releases_it():
    t = tables(5, 5)
    caches = DotsCaches(t)
    drawn = safe_play(random.Random(38), 5, 5, 52).drawn
    analyse_position(5, 5, drawn, Limit(time_ms=400), caches=caches, threads=1)
    table = caches.compiled
    # 0.30-0.40 s of search: 38-51 MB, so 2^21 slots of 16 bytes whatever the start took
    assert timed_table_bytes(0.30, 1, t.nl) >= 32 << 20 > timed_table_bytes(0.40, 1, t.nl) / 2
    assert table.capacity == 1 << 21
    fill(table, (1 << 21) // 4, start=1 << 40)  # released: stores grow it again
    assert table.capacity > 1 << 21
