"""Narrow unit tests: the state cache, events, keys, configuration, the CLI's plumbing."""

from __future__ import annotations

import pytest

from boxfish.service.config import Settings
from boxfish.service.events import MoveEvent
from boxfish.service.keys import KeySpace
from boxfish.service.state_cache import StateCache


def test_state_cache_lru_and_nearest():
    cache = StateCache(max_entries=3)
    for serial in (0, 1, 2):
        cache.put("g", serial, f"s{serial}")
    assert cache.get("g", 1) == "s1"
    cache.put("g", 5, "s5")  # evicts the least recently used: serial 0
    assert cache.get("g", 0) is None
    assert cache.nearest("g", 4) == (2, "s2")
    assert cache.nearest("g", 9) == (5, "s5")
    assert cache.nearest("other", 3) is None
    assert len(cache) == 3


def test_event_round_trip():
    event = MoveEvent(3, (1, 2, 1), 0, 2, (2, 0), 0, "in_progress", 123)
    assert MoveEvent.from_json(event.to_json()) == event
    assert event.response()["scores"] == [2, 0]
    open_ended = MoveEvent(1, (0, 0), 0, 0, None, None, "finished", 1)
    assert MoveEvent.from_json(open_ended.to_json()) == open_ended


def test_keys_share_a_hash_tag():
    keys = KeySpace("bf")
    tagged = {keys.game_log("abc"), keys.game_meta("abc"), keys.game_idempotency("abc")}
    assert all("{game:abc}" in k and k.startswith("bf:") for k in tagged)
    assert len(tagged) == 3


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

    from boxfish.service import cli
    seen = []
    fake = types.ModuleType("boxfish.engine.cli")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "boxfish.engine.cli", fake)
    assert cli.main(["analyse", "--time-ms", "5", "x"]) == 0
    assert cli.main(["analyze"]) == 0
    assert seen == [["--time-ms", "5", "x"], []]


def test_worker_without_redis_url(monkeypatch, capsys):
    from boxfish.service import cli
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("BOXFISH_REDIS_URL", raising=False)
    assert cli.main(["worker"]) == 2
    assert "REDIS_URL" in capsys.readouterr().err


def test_worker_search_cache_follows_the_environment(monkeypatch):
    import boxfish.workers.analysis as wa
    from boxfish import engine

    monkeypatch.setattr(wa, "_search_cache", None)
    monkeypatch.delenv("BOXFISH_SEARCH_CACHE_ENTRIES", raising=False)
    cache = wa.search_cache()
    assert isinstance(cache, engine.SearchCache)
    assert cache.max_entries == wa.DEFAULT_SEARCH_CACHE_ENTRIES
    assert wa.search_cache() is cache  # one per process, kept between jobs

    monkeypatch.setattr(wa, "_search_cache", None)
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "1234")
    assert wa.search_cache().max_entries == 1234

    monkeypatch.setattr(wa, "_search_cache", None)
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "0")
    assert wa.search_cache() is None

    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "lots")
    with pytest.raises(ValueError, match="BOXFISH_SEARCH_CACHE_ENTRIES"):
        wa.search_cache()
