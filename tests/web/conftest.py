"""Fixtures of the page tests: those of tests/service/conftest.py (the app and its spec-checked
client, a game maker, the real RQ worker)."""

from __future__ import annotations

from tests.service.conftest import (  # noqa: F401 - fixtures used by the tests here
    app,
    client,
    new_game,
    rq_worker,
    spec,
)
