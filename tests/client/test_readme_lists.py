"""The Python client's page (docs/client.md) names every field of every result the client
returns (``boxfish.client.types``) and every error it raises (``boxfish.client.errors``), with
their attributes, so that the docs and the client cannot drift apart."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from boxfish.client import errors, types

CLIENT_PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def client_section() -> str:
    text = CLIENT_PAGE.read_text()
    assert text.startswith("# The Python client: `boxfish.client`")
    return text


def listed_after(section: str, name: str) -> set[str]:
    """The names in backquotes in the parentheses that follow the first ``-> `name` (``."""
    found = re.search(rf"-> `{name}`\s*\(", section)
    assert found, f"docs/client.md never says what `{name}` holds"
    depth, i = 1, found.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(section[i], 0)
        i += 1
    return set(re.findall(r"`([A-Za-z_]\w*)`", section[found.end():i - 1]))


def public_properties(cls) -> set[str]:
    return {n for n, v in inspect.getmembers(cls) if isinstance(v, property)
            and not n.startswith("_")}


RESULTS = [c for _, c in inspect.getmembers(types, inspect.isclass)
           if dataclasses.is_dataclass(c) and c.__module__ == types.__name__]
ERRORS = [c for _, c in inspect.getmembers(errors, inspect.isclass)
          if issubclass(c, Exception) and c.__module__ == errors.__name__]


def test_the_lists_cover_the_client():
    assert {c.__name__ for c in RESULTS} == {"Game", "Move", "Analysis", "Webhook",
                                             "GameReset", "Review"}
    assert {"BoxfishError", "SerialConflict", "WebhookVerificationError"} <= {
        c.__name__ for c in ERRORS}


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_the_readme_lists_every_field_of_a_result(cls):
    section = client_section()
    fields = {f.name for f in dataclasses.fields(cls)} | public_properties(cls)
    if cls is not types.GameReset:  # a GameReset holds a Game, which keeps it
        assert "raw" in fields and "`.raw`" in section  # every result keeps the server's JSON
    missing = fields - {"raw"} - listed_after(section, cls.__name__)
    assert not missing, f"client page: `{cls.__name__}` ({', '.join(sorted(missing))}) not listed"


def _instance(cls):
    return cls(409, {"type": "urn:boxfish:problem:x", "reason": "r", "current_serial": 1})


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_the_readme_lists_every_error_and_its_attributes(cls):
    section = client_section()
    errors_text = section[section.index("Errors are typed"):]
    assert f"`{cls.__name__}`" in errors_text, f"docs/client.md: error `{cls.__name__}` not listed"
    if not issubclass(cls, errors.BoxfishError):
        return
    attributes = set(vars(_instance(cls))) | public_properties(cls)
    named = set(re.findall(r"`\.?([A-Za-z_]\w*)`", errors_text))
    missing = attributes - named
    assert not missing, f"client page: `{cls.__name__}` ({', '.join(sorted(missing))}) not listed"


def test_the_readme_names_the_engine_seat_conflict():
    """A move posted on the engine's turn is a ``SerialConflict`` with ``reason``
    ``engine_seat``: the client page's list of errors says so."""
    section = client_section()
    errors_text = section[section.index("Errors are typed"):]
    conflict = errors_text[errors_text.index("`SerialConflict`"):][:300]
    assert "engine_seat" in conflict


def test_a_game_keeps_its_legal_moves():
    game = types.Game.from_json({"id": "g", "game": "dots-and-boxes", "serial": 0,
                                 "to_move": 0, "status": "in_progress",
                                 "legal_moves": [[1, 1, 1], [1, 1, 2]]})
    assert game.legal_moves == [[1, 1, 1], [1, 1, 2]] and not game.finished
    old = types.Game.from_json({"id": "g", "game": "dots-and-boxes", "serial": 0,
                                "to_move": 0, "status": "finished"})
    assert old.legal_moves is None and old.finished


def test_an_analysis_reads_the_time_used_and_an_older_servers_time_ms():
    """``Analysis.time_used_ms`` is the result's ``time_used_ms``; a server older than it
    sends only ``time_ms`` (the same number, deprecated), which is read instead."""
    base = {"best_move": [1, 1, 1], "value": 1, "bound": "exact", "exact": True}
    new = types.Analysis.from_json({"id": "a", "result": {**base, "time_used_ms": 12.5,
                                                         "time_ms": 12.5}})
    old = types.Analysis.from_json({"id": "a", "result": {**base, "time_ms": 7.25}})
    neither = types.Analysis.from_json({"id": "a", "result": base})
    assert (new.time_used_ms, old.time_used_ms, neither.time_used_ms) == (12.5, 7.25, None)


def test_a_finished_game_has_no_side_to_move():
    """As the answer of the move that ended it says (an older server sent the side that
    would have moved next)."""
    for sent in (None, 1):
        game = types.Game.from_json({"id": "g", "game": "dots-and-boxes", "serial": 4,
                                     "to_move": sent, "status": "finished"})
        assert game.to_move is None and types.GameReset(game).to_move is None
    live = types.Game.from_json({"id": "g", "game": "dots-and-boxes", "serial": 1,
                                 "to_move": 1, "status": "in_progress"})
    assert live.to_move == 1 == types.GameReset(live).to_move
