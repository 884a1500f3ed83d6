"""The TypeScript client (``typescript-client/``, the npm package ``@boxfish/client``): its own
tests, under Node's test runner, against a real ``boxfish serve`` (embedded Redis, an analysis
worker, a webhook worker, keys, queue and data dir of its own, on a free loopback port).

This test installs the package's dependencies (``npm ci``, only when ``node_modules`` is
missing or older than ``package-lock.json``), builds it (``tsc``) and runs ``node --test``
with the server's URL in ``BOXFISH_URL``, and a control endpoint of this test in
``BOXFISH_CONTROL_URL``: ``POST /lose-moves {"game", "keep"}`` cuts a game's log back as a
store failover that lost its last moves would (:func:`tests.lost_moves.lose_moves`, on the
server's own Redis), so the client's handling of the ``game`` reset event is tested on the
real stream. It passes only when every one of the expected node tests passed: a run that
finds no tests, or fewer, fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redis

from boxfish.service.runtime.embedded_redis import free_port
from tests.lost_moves import lose_moves
from tests.service.conftest import boxfish_serve

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "typescript-client"
#: The node tests there are (test/*.test.mjs); a change in their number must change this.
EXPECTED_TESTS = 15


def npm_ci_if_stale() -> None:
    """``npm ci`` when node_modules is missing or older than package-lock.json (npm writes
    ``node_modules/.package-lock.json`` on every install)."""
    marker = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime:
        return
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=PACKAGE,
                   check=True, timeout=600, capture_output=True)


class Control:
    """The tests' control endpoint on loopback: ``POST /lose-moves`` with ``{"game",
    "keep"}`` answers ``{"head"}`` once the game's log is cut back to ``keep`` moves."""

    def __init__(self, client: redis.Redis, key_prefix: str) -> None:
        control = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # the http.server interface
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path != "/lose-moves":
                    self.send_error(404)
                    return
                try:
                    head = lose_moves(control.client, control.key_prefix, body["game"],
                                      int(body["keep"]))
                except AssertionError as exc:
                    self.send_error(409, str(exc))
                    return
                answer = json.dumps({"head": head}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.client = client
        self.key_prefix = key_prefix
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tap_count(output: str, name: str) -> int:
    """A count of the TAP reporter's summary (``# pass 16``)."""
    match = re.search(rf"^# {name} (\d+)$", output, re.MULTILINE)
    assert match, f"no '# {name}' in the node test output:\n{output[-3000:]}"
    return int(match.group(1))


@pytest.mark.timeout(900)
def test_the_typescript_client_passes_its_node_tests_against_boxfish_serve(tmp_path):
    assert shutil.which("node") and shutil.which("npm"), "Node 20+ and npm (scripts/test)"
    version = subprocess.run(["node", "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) >= 20, version
    npm_ci_if_stale()
    subprocess.run(["npm", "run", "build", "--silent"], cwd=PACKAGE, check=True, timeout=300)

    tag = f"ts-{uuid.uuid4().hex[:8]}"
    redis_port = free_port()
    env = {"BOXFISH_KEY_PREFIX": tag, "BOXFISH_QUEUE_NAME": tag,
           "BOXFISH_WEBHOOK_QUEUE_NAME": f"{tag}-webhooks", "BOXFISH_RATE_LIMIT_ENABLED": "false",
           "BOXFISH_WEBHOOK_ALLOW_PRIVATE": "true", "BOXFISH_WEBHOOK_BACKOFF_S": "0.2",
           "BOXFISH_SSE_KEEPALIVE_S": "0.3", "BOXFISH_MAX_TIME_MS": "2000",
           "BOXFISH_SEARCH_THREADS": "1"}
    with boxfish_serve(tmp_path / "data", env, "--redis-port", str(redis_port),
                       "--http-workers", "1", "--threads", "16", "--webhook-workers", "1",
                       workers=1) as base:
        store = redis.Redis(port=redis_port)
        control = Control(store, tag)
        try:
            started = time.monotonic()
            run = subprocess.run(
                ["node", "--test", "--test-reporter=tap", "--test-concurrency=1",
                 *sorted(str(p.relative_to(PACKAGE)) for p in
                         (PACKAGE / "test").glob("*.test.mjs"))],
                cwd=PACKAGE, capture_output=True, text=True, timeout=800,
                env={**os.environ, "BOXFISH_URL": base, "BOXFISH_CONTROL_URL": control.url})
            took = time.monotonic() - started
        finally:
            control.close()
            store.close()
    output = run.stdout + run.stderr
    print(output[-4000:])
    print(f"node --test took {took:.1f} s")
    assert run.returncode == 0, output[-6000:]
    assert tap_count(output, "fail") == 0, output[-6000:]
    assert tap_count(output, "tests") == EXPECTED_TESTS, output[-6000:]
    assert tap_count(output, "pass") == EXPECTED_TESTS, output[-6000:]
