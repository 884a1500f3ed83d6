"""Fixtures of the client tests: a real gunicorn serving the API (one for the session, and
one a test may stop and start again on the same port), with a real RQ worker and Redis (the
helpers and fixtures of tests/service/conftest.py)."""

from __future__ import annotations

import pytest

from boxfish.service.runtime.embedded_redis import free_port
from tests.service.conftest import (  # noqa: F401 - fixtures used by the tests here
    rq_worker,
    server_url,
    start_gunicorn,
    stop_process,
)


class RestartableServer:
    """A gunicorn serving ``settings`` on one port: ``stop()`` and ``start()`` it again."""

    def __init__(self, settings, log_path) -> None:
        self.settings = settings
        self.port = free_port()
        self.log_path = log_path
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self) -> None:
        self.proc = start_gunicorn(self.settings, self.port, self.log_path)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def restartable_server(settings, redis_client, tmp_path):
    server = RestartableServer(settings, tmp_path / "api.log")
    server.start()
    yield server
    server.stop()
