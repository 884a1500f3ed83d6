"""Fixtures of the page tests: the real RQ worker of tests/service/conftest.py."""

from __future__ import annotations

from tests.service.conftest import rq_worker  # noqa: F401 - a fixture used by the tests here
