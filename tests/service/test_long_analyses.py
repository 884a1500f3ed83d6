"""Analyses that run their whole time limit, through a real gunicorn and real RQ workers
(issue 21: jobs declared dead while still running, and a 500 from the API's own check).

Every job runs for ``time_ms`` = the maximum, 10 s, five times ``BOXFISH_JOB_LIVENESS_S`` (2 s: a
key refreshed every third of it lapses only if its refresher stalls for over a second); each
worker runs two in a row; while they run, the API is polled without pause (GET and POST with
``?wait=``). Every job must end ``finished`` and the API never answer 5xx."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

from boxfish import engine
from boxfish.service.config import search_threads_for
from boxfish.service.runtime.embedded_redis import free_port

from .conftest import start_gunicorn, start_worker, stop_process, wait_for_workers

TIME_MS = 10_000
WORKERS = 2
ANALYSES = 4


def _positions() -> list[dict]:
    """Distinct 6x6 Dots-and-Boxes positions near the start (84 lines, at most 3 drawn): no
    search proves one within 10 s, so each job runs its whole ``time_ms``."""
    game = engine.load_game("dots-and-boxes", width=6, height=6)
    first = game.new_state().legal_moves()
    return [{"game": "dots-and-boxes", "width": 6, "height": 6, "time_ms": TIME_MS,
             "moves": [list(m) for m in first[:i]]} for i in range(ANALYSES)]


def _call(base: str, method: str, path: str, body: dict | None = None,
          timeout_s: float = 30.0) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"raw": raw.decode(errors="replace")}


def test_jobs_at_the_longest_time_limit_outlive_a_short_liveness_window(settings, redis_client,
                                                                        tmp_path):
    # The workers' search threads as ``boxfish serve --workers 2`` sets them: the CPUs
    # shared, not oversubscribed (each worker taking every CPU would run twice as many
    # search threads as cores, beside the API the test polls without pause).
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-long",
                                      "job_liveness_s": 2.0, "max_time_ms": TIME_MS,
                                      "search_threads": search_threads_for(WORKERS)})
    assert TIME_MS >= 5 * 1000 * own.job_liveness_s
    workers = [start_worker(own, tmp_path / f"worker{i}.log") for i in range(WORKERS)]
    api = None
    try:
        wait_for_workers(redis_client, own.queue_name, WORKERS)
        port = free_port()
        api = start_gunicorn(own, port, tmp_path / "api.log", threads=8)
        base = f"http://127.0.0.1:{port}"

        bodies = _positions()
        ids = []
        for body in bodies:
            code, view = _call(base, "POST", "/v1/analyses", body)
            assert code == 202, view
            ids.append(view["id"])
        assert len(set(ids)) == ANALYSES

        errors: list[tuple] = []
        statuses: dict[str, str] = {}
        done = threading.Event()

        def note(what, code, view):
            if code >= 500 or code not in (200, 202):
                errors.append((what, code, view))
            elif view.get("status") == "failed":
                errors.append((what, "failed", view.get("error")))

        def get_poller():
            while not done.is_set():
                for job_id in ids:
                    code, view = _call(base, "GET", f"/v1/analyses/{job_id}")
                    note(("GET", job_id), code, view)
                    if code == 200:
                        statuses[job_id] = view["status"]
                time.sleep(0.01)

        def wait_poller(body):
            while not done.is_set():
                code, view = _call(base, "POST", "/v1/analyses?wait=1.5", body)
                note(("POST wait", view.get("id")), code, view)
                if code == 200 and view["status"] in ("finished", "failed"):
                    return

        threads = [threading.Thread(target=get_poller, daemon=True) for _ in range(2)]
        threads += [threading.Thread(target=wait_poller, args=(b,), daemon=True)
                    for b in bodies]
        for t in threads:
            t.start()
        # Two rounds of 10 s on each worker, with time for start-up and a loaded machine.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not errors:
            if len(statuses) == ANALYSES and all(
                    s in ("finished", "failed") for s in statuses.values()):
                break
            time.sleep(0.2)
        done.set()
        for t in threads:
            t.join(timeout=30)

        assert errors == []
        finals = {}
        for job_id in ids:
            code, view = _call(base, "GET", f"/v1/analyses/{job_id}")
            assert code == 200, view
            finals[job_id] = (view["status"], view["error"])
        assert all(status == "finished" for status, _ in finals.values()), finals
        for job_id in ids:
            view = _call(base, "GET", f"/v1/analyses/{job_id}")[1]
            # The search ran its whole time limit: the job outlived five liveness windows.
            assert view["result"]["exact"] is False
    finally:
        if api is not None:
            stop_process(api)
        for w in workers:
            stop_process(w)
        redis_client.delete(f"rq:queue:{own.queue_name}")
