"""Narrow unit tests: the state and metadata caches, events, keys, configuration, the CLI's
plumbing, what the API imports."""

from __future__ import annotations

import subprocess
import sys

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from boxfish import engine
from boxfish.service.application.state_cache import StateCache
from boxfish.service.config import Settings
from boxfish.service.store.events import MoveEvent
from boxfish.service.store.feed import partition_of
from boxfish.service.store.keys import KeySpace


def test_state_cache_lru_and_nearest():
    cache = StateCache(max_entries=3)
    for serial in (0, 1, 2):
        cache.put("g", serial, f"s{serial}", "h")
    assert cache.entry("g", 1) == ("s1", "h")
    cache.put("g", 5, "s5", "h")  # evicts the least recently used: serial 0
    assert cache.entry("g", 0) is None
    assert cache.nearest_entry("g", 4) == (2, "s2", "h")
    assert cache.nearest_entry("g", 9) == (5, "s5", "h")
    assert cache.nearest_entry("other", 3) is None
    assert len(cache) == 3


def test_event_round_trip():
    event = MoveEvent(3, (1, 2, 1), 0, 2, (2, 0), 0, "in_progress", 123)
    assert MoveEvent.from_json(event.to_json()) == event
    assert event.response()["scores"] == [2, 0]
    open_ended = MoveEvent(1, (0, 0), 0, 0, None, None, "finished", 1)
    assert MoveEvent.from_json(open_ended.to_json()) == open_ended


def test_keys_share_a_hash_tag():
    keys = KeySpace("bf")
    tagged = {keys.game_log("abc"), keys.game_meta("abc"), keys.idempotency_record("abc", "key"),
              keys.game_webhooks("abc"), keys.feed(partition_of("abc"))}
    tag = f"{{games:{partition_of('abc')}}}"
    assert all(tag in k and k.startswith("bf:") for k in tagged)
    assert len(tagged) == 5


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://example:6379/2")
    monkeypatch.setenv("BOXFISH_MAX_TIME_MS", "2500")
    settings = Settings()
    assert settings.redis_url == "redis://example:6379/2" and settings.max_time_ms == 2500
    monkeypatch.setenv("BOXFISH_MAX_TIME_MS", "-1")
    with pytest.raises(ValueError):
        Settings()


def test_cli_analyse_delegates_to_the_engine(monkeypatch):
    import sys
    import types

    from boxfish.service.runtime import cli
    seen = []
    fake = types.ModuleType("boxfish.engine.cli")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "boxfish.engine.cli", fake)
    assert cli.main(["analyse", "--time-ms", "5", "x"]) == 0
    assert cli.main(["analyze"]) == 0
    assert seen == [["--time-ms", "5", "x"], []]


def test_worker_without_redis_url(monkeypatch, capsys):
    from boxfish.service.runtime import cli
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("BOXFISH_REDIS_URL", raising=False)
    assert cli.main(["worker"]) == 2
    assert "REDIS_URL" in capsys.readouterr().err


def test_state_cache_counts_hits_and_misses_and_reads_mark_entries_used():
    cache = StateCache(max_entries=2)
    cache.put("g", 0, "s0", "h")
    cache.put("g", 1, "s1", "h")
    assert cache.nearest_entry("g", 0) == (0, "s0", "h")  # exact: a hit; 0 is now the most recent
    cache.put("g", 2, "s2", "h")  # evicts 1, the least recently used
    assert cache.entry("g", 1) is None and cache.entry("g", 2) == ("s2", "h")
    assert cache.nearest_entry("g", 1) == (0, "s0", "h")  # below the serial asked for: a miss
    assert cache.nearest_entry("h", 5) is None
    assert (cache.hits, cache.misses) == (2, 3)
    assert cache.max_entries == 2


def test_state_cache_serial_index_follows_eviction():
    cache = StateCache(max_entries=3)
    for serial in (4, 7, 9):
        cache.put("a", serial, f"a{serial}", "h")
    assert cache.latest("a") == 9
    cache.entry("a", 4)
    cache.entry("a", 7)
    cache.put("b", 1, "b1", "h")  # evicts a@9, the newest serial but the least recently used
    assert cache.latest("a") == 7 and cache.nearest_entry("a", 9) == (7, "a7", "h")  # a read of a@7
    cache.put("b", 2, "b2", "h")  # evicts a@4
    cache.put("b", 3, "b3", "h")  # evicts b@1
    assert cache.nearest_entry("a", 6) is None and cache.nearest_entry("b", 1) is None
    assert cache.latest("a") == 7 and cache.nearest_entry("b", 9) == (3, "b3", "h")
    cache.put("b", 4, "b4", "h")  # evicts a@7: no state of game a is left
    assert cache.latest("a") is None and cache.nearest_entry("a", 100) is None
    assert cache.latest("b") == 4 and len(cache) == 3


@hypothesis.settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "get", "nearest"]), st.sampled_from("abc"),
                          st.integers(0, 9)), max_size=60), st.integers(1, 6))
def test_state_cache_serial_index_is_consistent_under_eviction(ops, size):
    cache = StateCache(max_entries=size)
    for op, game_id, serial in ops:
        if op == "put":
            cache.put(game_id, serial, (game_id, serial), "h")
        elif op == "get":
            cache.entry(game_id, serial)
        else:
            cache.nearest_entry(game_id, serial)
        keys = set(cache._entries)
        assert len(keys) == len(cache) <= size
        index = {g: {s for k, s in keys if k == g} for g, _ in keys}
        assert cache._entries.serials == index
        for g in "abc":
            cached = index.get(g, set())
            assert cache.latest(g) == (max(cached) if cached else None)
            below = [s for s in cached if s <= serial]
            assert cache.nearest_entry(g, serial) == (
                (max(below), (g, max(below)), "h") if below else None)


def test_game_service_remembers_static_metadata_lru():
    from boxfish.service.application.games import GameService
    from boxfish.service.store.recorder import InMemoryRecorder

    recorder = InMemoryRecorder()
    games = GameService(recorder, StateCache(max_entries=2))
    dots = engine.load_game("dots-and-boxes", width=2, height=2)
    ids = [games.create(dots)[0].game_id for _ in range(3)]  # remembers the last two
    reads = []
    real = recorder.get_meta
    recorder.get_meta = lambda game_id: reads.append(game_id) or real(game_id)
    assert games.static_meta(ids[1]).game_id == ids[1] and reads == []
    assert games.static_meta(ids[0]).game_id == ids[0] and reads == [ids[0]]  # read, kept
    assert games.static_meta(ids[0]) is not None and reads == [ids[0]]
    games.static_meta(ids[2])  # evicted by ids[0], the least recently used then
    assert reads == [ids[0], ids[2]]


def test_the_api_imports_no_worker_module():
    code = ("import sys\n"
            "import boxfish.service.http.app, boxfish.service.http.views.ops\n"
            "import boxfish.service.application.analyses\n"
            "from boxfish.service.http.app import create_app\n"
            "print(sorted(m for m in sys.modules if m.startswith('boxfish.workers')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_workers_share_the_service_constants(monkeypatch):
    from boxfish.service import config
    from boxfish.workers import analysis_job as analysis
    from boxfish.workers import worker

    assert worker.WORKER_TTL_S is config.WORKER_TTL_S
    assert analysis.DEFAULT_SEARCH_CACHE_ENTRIES == config.DEFAULT_SEARCH_CACHE_ENTRIES
    monkeypatch.delenv("BOXFISH_SEARCH_CACHE_ENTRIES", raising=False)
    assert Settings().search_cache_entries == config.DEFAULT_SEARCH_CACHE_ENTRIES


def test_the_append_scripts_arguments_are_named_as_its_encoder_names_them():
    """APPEND_LUA reads each ARGV into a local of the name AppendArgs gives that field, in
    AppendArgs' order, and the encoder writes flags as Redis strings."""
    import dataclasses
    import re

    from boxfish.service.store.redis_recorder import APPEND_LUA, AppendArgs

    read = re.findall(r"^local (\w+) = ARGV\[(\d+)\]", APPEND_LUA, re.M)
    names = [f.name for f in dataclasses.fields(AppendArgs)]
    assert [int(i) for _, i in read] == list(range(1, len(read) + 1))
    # The one field the script reads as two (whether to check it, and its value).
    assert [n for n, _ in read] == [*names[:-2], "check_head", "expected_head", "game_id"]
    args = AppendArgs(serial=3, idempotency_key=None, fingerprint="fp", event_json="{}",
                      status="in_progress", record_ttl_ms=1000, rewrite_record=True,
                      expected_head=None, game_id="g1")
    assert args.argv() == [3, "", "fp", "{}", "in_progress", 1000, "1", "", "", "g1"]
    assert dataclasses.replace(args, idempotency_key="k", rewrite_record=False,
                               expected_head="").argv()[1:] == [
        "k", "fp", "{}", "in_progress", 1000, "", "1", "", "g1"]
