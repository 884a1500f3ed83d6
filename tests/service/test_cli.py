"""``boxfish serve`` end to end: embedded Redis + workers + gunicorn, then a clean Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from boxfish.service.runtime.embedded_redis import free_port

from .conftest import descendants


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def worker_children(pid: int, webhooks: bool) -> list[int]:
    """The ``boxfish worker`` processes ``boxfish serve`` (``pid``) started itself: analysis
    workers, or with ``webhooks`` webhook workers (not the RQ scheduler each of those runs in
    a child process of its own)."""
    found = []
    for child in descendants(pid):
        line = cmdline(child)
        if b"worker" not in line or not line.count(b"boxfish.service.runtime.cli"):
            continue
        try:
            with open(f"/proc/{child}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == pid and (b"--webhooks" in line) == webhooks:
            found.append(child)
    return found


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_runs_everything_and_stops_cleanly(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BOXFISH_REDIS_URL")}
    env["BOXFISH_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "serve",
                             "--port", str(port),
                             "--workers", "1", "--threads", "4"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/readyz")
                if status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        assert body["workers"] == 1
        while body["webhook_workers"] != 1:  # serve starts one webhook worker besides
            assert time.monotonic() < deadline, f"no webhook worker came up: {body}"
            time.sleep(0.2)
            status, body = _get(f"http://127.0.0.1:{port}/readyz")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            assert b"boxfish_webhook_queue_length 0.0" in resp.read()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/games", method="POST",
            data=json.dumps({"game": "dots-and-boxes", "width": 2, "height": 2}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 201
        # An analysis through the job queue's own Redis and the worker.
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/analyses?wait=8", method="POST",
            data=json.dumps({"game": "dots-and-boxes", "width": 1, "height": 1,
                             "moves": [[1, 1, 1], [1, 2, 1]], "time_ms": 500}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            job = json.loads(resp.read())
        deadline = time.monotonic() + 60
        while job["status"] in ("queued", "started"):  # the wait ran out on a loaded host
            assert time.monotonic() < deadline, f"the analysis did not end: {job}"
            time.sleep(0.1)
            job = _get(f"http://127.0.0.1:{port}/v1/analyses/{job['id']}")[1]
        assert job["status"] == "finished" and job["result"]["exact"] is True
        assert (tmp_path / "data" / "queue").is_dir()
        # One webhook worker besides the analysis workers.
        assert len(worker_children(proc.pid, webhooks=True)) == 1
        # A worker that dies is restarted.
        workers = worker_children(proc.pid, webhooks=False)
        assert len(workers) == 1
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            again = [p for p in worker_children(proc.pid, webhooks=False) if p != workers[0]]
            if again:
                break
            assert time.monotonic() < deadline, "the killed worker was not restarted"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out.decode()[-2000:]
    assert (tmp_path / "data").is_dir() and any((tmp_path / "data").iterdir())
    # Everything it started is gone: nothing listens on the API port any more.
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
        raise AssertionError("the API still answers after Ctrl-C")
    except OSError:
        pass
