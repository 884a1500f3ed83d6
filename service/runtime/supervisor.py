"""A tiny process supervisor for ``boxfish serve`` / ``boxfish worker``: start children in
their own process groups, stop them in order on SIGINT/SIGTERM, restart a child marked
``restart`` when it dies (at most :data:`MAX_RESTARTS` times a minute), and stop everything if
any other child dies."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

MAX_RESTARTS = 5


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    argv: list[str]
    env: dict
    stop_timeout_s: float = 10.0
    restart: bool = False
    restarts: list[float] = field(default_factory=list)


class Supervisor:
    def __init__(self) -> None:
        self.children: list[Child] = []
        self.stopping = False

    def start(self, name: str, argv: list[str], env: dict, stop_timeout_s: float = 10.0,
              restart: bool = False):
        proc = subprocess.Popen(argv, env=env, start_new_session=True)
        self.children.append(Child(name, proc, argv, env, stop_timeout_s, restart))
        return proc

    def _restart(self, child: Child) -> bool:
        now = time.monotonic()
        child.restarts = [t for t in child.restarts if now - t < 60] + [now]
        if len(child.restarts) > MAX_RESTARTS:
            return False
        print(f"boxfish: {child.name} exited with {child.process.returncode}; restarting",
              file=sys.stderr)
        child.process = subprocess.Popen(child.argv, env=child.env, start_new_session=True)
        return True

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def run(self, extra_stop=None) -> int:
        """Wait until a signal arrives (exit code 0) or a child dies (1); then stop all
        children, newest first, and call ``extra_stop``."""
        code = 0
        try:
            while not self.stopping:
                dead = [c for c in self.children if c.process.poll() is not None
                        and not (c.restart and not self.stopping and self._restart(c))]
                if dead:
                    names = ", ".join(f"{c.name} (exit {c.process.returncode})" for c in dead)
                    print(f"boxfish: {names} stopped; shutting down", file=sys.stderr)
                    code = 1
                    break
                time.sleep(0.2)
        finally:
            self.stop_all()
            if extra_stop is not None:
                extra_stop()
        return code

    def stop_all(self) -> None:
        for child in reversed(self.children):
            stop(child.process, child.stop_timeout_s)
        self.children.clear()


def stop(proc: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM (graceful), then SIGKILL after ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
