"""The compiled table grows as it fills (it doubles past an eighth full), except where the
rehash would not end before the search's deadline (issue 38: the doubling of a 1 s search's
table, rehashing into 128 MiB, made answers up to 0.3 s late). The core estimates a
rehash at 8 ms per MiB of the new table (``GROW_SECONDS_PER_MIB`` in ``core/table.c``)."""

from __future__ import annotations

import random

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.positions import safe_play
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position

SLOTS = 1 << 22  # 64 MiB of 16-byte entries: the next doubling is estimated at 1.0 s
GROW_AT = 8


def fill(table, n: int, start: int) -> None:
    """Store ``n`` heuristic entries of distinct keys."""
    for k in range(start, start + n):
        table.store(k * 0x9E3779B97F4A7C15 & (1 << 60) - 1, 1, -1, 1, -1)


def table_near_its_growth() -> tuple[DotsCaches, object]:
    """Caches for 5x5 whose compiled table has ``SLOTS`` slots, a few entries short of the
    eighth full at which it doubles."""
    caches = DotsCaches(tables(5, 5))
    table = caches.compiled_table()
    fill(table, SLOTS // GROW_AT - 2000, start=1 << 40)
    assert table.capacity == SLOTS
    return caches, table


def searched(caches, time_ms: int) -> None:
    drawn = safe_play(random.Random(38), 5, 5, 50).drawn
    analyse_position(5, 5, drawn, Limit(time_ms=time_ms), caches=caches, threads=1)


def test_a_search_whose_deadline_is_nearer_than_the_rehash_does_not_grow_the_table():
    caches, table = table_near_its_growth()
    searched(caches, 500)
    assert len(table) > SLOTS // GROW_AT  # the search filled it past its growth point
    assert table.capacity == SLOTS
    fill(table, 10, start=1 << 50)  # outside a search it grows again
    assert table.capacity == 2 * SLOTS


def test_a_search_with_time_for_the_rehash_grows_the_table():
    caches, table = table_near_its_growth()
    searched(caches, 4000)
    assert table.capacity >= 2 * SLOTS


def test_an_untimed_search_grows_the_table():
    caches, table = table_near_its_growth()
    drawn = safe_play(random.Random(38), 5, 5, 50).drawn
    analyse_position(5, 5, drawn, Limit(nodes=200_000), caches=caches, threads=1)
    assert table.capacity >= 2 * SLOTS
