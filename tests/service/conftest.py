"""Fixtures of the service tests: the app and its spec-checked client, a real RQ worker, a
real gunicorn. The Redis server and the settings come from ``tests/conftest.py``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest
import redis
from openapi_core import Config, OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse
from werkzeug.wrappers import Request

from boxfish.service.config import Settings
from boxfish.service.http.app import create_app
from boxfish.service.runtime import supervisor
from boxfish.service.runtime.embedded_redis import free_port

ROOT = Path(__file__).resolve().parents[2]


def _env(settings: Settings, **extra) -> dict:
    """The environment that gives a server process ``settings``: this process's environment
    (a test may set variables there) plus every field of ``settings`` that is not at its
    default, under its environment name (``BOXFISH_<NAME>``, ``REDIS_URL``), so a new setting
    cannot be dropped on the way to the server; ``extra`` last."""
    env = dict(os.environ)
    defaults = Settings.model_construct()
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if name != "redis_url" and value == getattr(defaults, name, None):
            continue
        if value is None:
            continue
        key = "REDIS_URL" if name == "redis_url" else f"BOXFISH_{name.upper()}"
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, (list, tuple, dict)):
            value = json.dumps(value)
        env[key] = str(value)
    env.update(extra)
    return env


def _text(data):
    return data.decode() if isinstance(data, bytes) else data


@pytest.fixture(scope="session")
def spec() -> OpenAPI:
    config = Config(extra_media_type_deserializers={
        "application/problem+json": json.loads,
        "application/yaml": _text, "image/svg+xml": _text, "text/plain": _text,
        "text/html": _text, "text/css": _text})
    return OpenAPI.from_file_path(str(ROOT / "openapi.yaml"), config=config)


def check_ndjson_lines(resp) -> None:
    """Each line of an NDJSON response against the schema openapi.yaml gives its media type
    (the schema of one line), with the document's ``$ref``s resolved."""
    import jsonschema
    import referencing
    import yaml

    document = yaml.safe_load((ROOT / "openapi.yaml").read_text())
    op = document["paths"][resp.request.path][resp.request.method.lower()]
    schema = op["responses"][str(resp.status_code)]["content"]["application/x-ndjson"]["schema"]
    resource = referencing.Resource.from_contents(
        document, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:openapi", resource)
    validator = jsonschema.Draft202012Validator(
        {"$ref": "urn:openapi#" + schema["$ref"].lstrip("#")}, registry=registry)
    for line in resp.get_data(as_text=True).splitlines():
        if line:
            validator.validate(json.loads(line))


class CheckedClient:
    """Flask's test client whose every response is validated against openapi.yaml."""

    def __init__(self, client, spec: OpenAPI) -> None:
        self.client = client
        self.spec = spec

    def open(self, *args, validate_spec=True, **kwargs):
        resp = self.client.open(*args, **kwargs)
        if validate_spec and resp.mimetype == "application/x-ndjson":
            check_ndjson_lines(resp)
        elif validate_spec and resp.mimetype != "text/event-stream":
            # Response validation needs the request's method and path, not its body.
            environ = dict(resp.request.environ, CONTENT_LENGTH="0")
            environ["wsgi.input"] = io.BytesIO(b"")
            self.spec.validate_response(WerkzeugOpenAPIRequest(Request(environ)),
                                        WerkzeugOpenAPIResponse(resp))
        return resp

    def get(self, *a, **k):
        return self.open(*a, method="GET", **k)

    def post(self, *a, **k):
        return self.open(*a, method="POST", **k)

    def delete(self, *a, **k):
        return self.open(*a, method="DELETE", **k)


@pytest.fixture
def app(settings, redis_client):
    return create_app(settings, connection=redis_client)


@pytest.fixture
def client(app, spec) -> CheckedClient:
    return CheckedClient(app.test_client(), spec)


@pytest.fixture
def new_game(client):
    """Create a game and return ``(id, auth headers, body)``."""
    def make(game="dots-and-boxes", **params):
        if game == "dots-and-boxes":
            params = {"width": 2, "height": 2, **params}
        resp = client.post("/v1/games", json={"game": game, **params})
        assert resp.status_code == 201, resp.json
        return (resp.json["id"], {"Authorization": f"Bearer {resp.json['write_token']}"},
                resp.json)
    return make


def descendants(pid: int) -> list[int]:
    """Pids of the processes below ``pid`` (none once it has ended)."""
    try:
        return [proc.pid for proc in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@contextlib.contextmanager
def commands_run(url: str, name: str):
    """The ``name`` commands the Redis server at ``url`` runs within the ``with`` block, as
    lists of their words after the name, filled in when the block ends: ``MONITOR`` on a
    connection of its own, read up to a marker sent after the block."""
    seen: list[list[str]] = []
    marker = f"end-of-watch-{uuid.uuid4().hex}"
    with redis.Redis.from_url(url) as watcher, watcher.monitor() as monitor:
        yield seen
        with redis.Redis.from_url(url) as other:
            other.echo(marker)
        while True:
            words = monitor.next_command()["command"].split(" ")
            if words == ["ECHO", marker]:
                return
            if words[0].upper() == name.upper():
                seen.append(words[1:])


def assert_blocking_reads(reads: list[list[str]], key: str, socket_timeout_ms: int,
                          wait_ms: int) -> None:
    """The ``XREAD`` commands of ``reads`` (their words) that name ``key`` (a wait's) are
    blocking reads, each shorter than the socket timeout, that add up to no more than the
    wait (the last may round up to 1 ms)."""
    blocks = [int(words[words.index("BLOCK") + 1]) for words in reads if key in words]
    assert blocks, reads
    assert all(0 < block < socket_timeout_ms for block in blocks), blocks
    assert sum(blocks) <= wait_ms + 1, blocks


def start_worker(settings: Settings, log_path: Path) -> subprocess.Popen:
    log = open(log_path, "ab")
    return subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "worker"],
                            env=_env(settings), stdout=log, stderr=log,
                            start_new_session=True)


def wait_for_workers(client: redis.Redis, queue_name: str, n: int, timeout_s=60.0) -> None:
    from rq import Queue, Worker
    queue = Queue(queue_name, connection=client)
    deadline = time.monotonic() + timeout_s
    while len(Worker.all(queue=queue)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {n} RQ workers came up")
        time.sleep(0.05)


def stop_process(proc: subprocess.Popen, timeout_s=10.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s`` (the supervisor's own helper)."""
    supervisor.stop(proc, timeout_s)


@pytest.fixture(scope="session")
def rq_worker(settings, redis_client, tmp_path_factory):
    """A real RQ worker subprocess (``boxfish worker``) on the test queue."""
    proc = start_worker(settings, tmp_path_factory.mktemp("worker") / "worker.log")
    wait_for_workers(redis_client, settings.queue_name, 1)
    yield proc
    stop_process(proc)


def start_gunicorn(settings: Settings, port: int, log_path: Path, threads: int = 16,
                   extra_args: list[str] | tuple[str, ...] = ()):
    """gunicorn serving the app with ``settings`` (one process, ``threads`` threads, and
    gunicorn's options ``extra_args``), once it answers ``/healthz``."""
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "python:boxfish.service.http.gunicorn_conf",
         "--workers", "1",
         "--threads", str(threads), "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "2",
         *extra_args, "boxfish.service.http.wsgi:app"], env=_env(settings), stdout=log, stderr=log,
        start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_process(proc)
                raise RuntimeError(f"gunicorn did not come up; see {log_path}") from None
            time.sleep(0.1)


@pytest.fixture(scope="session")
def server_url(settings, tmp_path_factory):
    """A real gunicorn (gthread) serving the app; yields its base URL."""
    port = free_port()
    proc = start_gunicorn(settings, port, tmp_path_factory.mktemp("gunicorn") / "api.log")
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


@contextlib.contextmanager
def boxfish_serve(data_dir: Path, env: dict[str, str], *args: str, workers: int = 2,
                  timeout_s: float = 90.0):
    """``boxfish serve --workers N`` (its own embedded Redis in ``data_dir``) on a free port,
    as a user runs it, with this environment (no Redis URL of the session's) plus ``env`` and
    serve's options ``args``; yields its base URL once ``/readyz`` counts every worker."""
    port = free_port()
    full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BOXFISH_REDIS_URL")}
    full.update(env, BOXFISH_DATA_DIR=str(data_dir))
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "serve",
                             "--port", str(port), "--workers", str(workers), *args], env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=5) as resp:
                    if json.loads(resp.read()).get("workers") == workers:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
