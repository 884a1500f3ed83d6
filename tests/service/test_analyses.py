"""Analyses through the API with a real RQ worker subprocess."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid

import pytest
from rq import Queue

from boxfish import engine
from boxfish.service.http.app import create_app

from .conftest import CheckedClient, descendants, start_worker, stop_process, wait_for_workers

# 1x2 boxes with 4 of the 7 lines drawn: a handful of moves left, solved at once.
TRIVIAL = {"game": "dots-and-boxes", "width": 2, "height": 1,
           "moves": [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]}


def direct(request: dict):
    game = engine.load_game(request["game"], width=request["width"], height=request["height"])
    state = game.new_state()
    for m in request["moves"]:
        state.play(tuple(m))
    return engine.analyse(state, time_ms=request["time_ms"]).to_dict()


def same_analysis(got: dict, want: dict) -> None:
    assert got["game"] == want["game"]
    assert got["exact"] == want["exact"]
    if want["exact"]:
        assert got["value"] == want["value"]
        assert got["best_move"] == want["best_move"] or got["best_move"] in [
            m["move"] for m in want["moves"] if m["value"] == want["value"]]


def poll(client, job_id: str, until=("finished", "failed"), timeout_s=30.0):
    """GET the job until its status is in ``until``; returns (last body, statuses seen)."""
    seen = []
    deadline = time.monotonic() + timeout_s
    while True:
        body = client.get(f"/v1/analyses/{job_id}").json
        if not seen or seen[-1] != body["status"]:
            seen.append(body["status"])
        if body["status"] in until:
            return body, seen
        assert time.monotonic() < deadline, f"job stuck in {seen}"
        time.sleep(0.02)


def waited(client, resp) -> dict:
    """The job a ``POST ...?wait=`` answered with, at its end: as answered (200) or, when the
    wait ran out first (202: a busy worker or a loaded host), polled to its end."""
    assert resp.status_code in (200, 202), resp.json
    if resp.status_code == 202:
        assert resp.json["status"] in ("queued", "started"), resp.json
        return poll(client, resp.json["id"])[0]
    return resp.json


def test_lifecycle_and_result_equals_engine(client, rq_worker):
    # Occupy the single test worker with a time-bounded search so the next job must queue.
    busy = client.post("/v1/analyses", json={"game": "extreme-tictactoe", "time_ms": 4000})
    assert busy.status_code == 202
    assert busy.headers["Location"] == f"/v1/analyses/{busy.json['id']}"
    busy_view, busy_seen = poll(client, busy.json["id"], until=("started",))
    request = {**TRIVIAL, "time_ms": 2000}
    queued = client.post("/v1/analyses", json=request)
    assert queued.status_code == 202 and queued.json["status"] == "queued"
    done, seen = poll(client, queued.json["id"])
    assert seen[0] == "queued" and seen[-1] == "finished", seen
    same_analysis(done["result"], direct(request))
    assert done["error"] is None
    # The time the search took is time_used_ms (time_ms, its deprecated alias, the same):
    # not the request's limit, time_ms.
    result = done["result"]
    assert result["time_used_ms"] == result["time_ms"] < request["time_ms"]
    busy_done, more = poll(client, busy.json["id"])
    assert busy_done["status"] == "finished" and "started" in busy_seen + more
    assert busy_done["result"]["game"] == "extreme-tictactoe"
    assert busy_done["result"]["best_move"] in [list(m) for m in engine.load_game(
        "extreme-tictactoe").new_state().legal_moves()]
    assert busy_done["progress"] is not None and busy_done["progress"]["depth"] >= 1
    assert set(busy_done["progress"]) == {"depth", "best_move", "value", "exact", "nodes",
                                          "mate_in"}


def test_wait_answers_with_the_finished_job(settings, redis_client, spec, work_here):
    """``?wait=`` holds the answer while the job is queued and run (here, on a queue of the
    test's own, once it is there: well within the wait), then answers 200 with it."""
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-wait"})
    app = create_app(own, connection=redis_client)
    request = {**TRIVIAL, "time_ms": 900 + uuid.uuid4().int % 99}
    answers = []
    poster = threading.Thread(target=lambda: answers.append(CheckedClient(
        app.test_client(), spec).post("/v1/analyses?wait=10", json=request)))
    poster.start()
    queue = Queue(own.queue_name, connection=redis_client)
    deadline = time.monotonic() + 30
    while not queue.count:
        assert time.monotonic() < deadline and poster.is_alive(), "the job was not queued"
        time.sleep(0.02)
    work_here(own.queue_name)
    poster.join(30)
    (resp,) = answers
    assert resp.status_code == 200 and resp.json["status"] == "finished"
    same_analysis(resp.json["result"], direct(request))
    again = CheckedClient(app.test_client(), spec).post("/v1/analyses", json=request)
    assert again.json["id"] == resp.json["id"] and again.status_code == 200


def test_lines_position(client, rq_worker):
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    state = game.new_state()
    for m in TRIVIAL["moves"]:
        state.play(tuple(m))
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "lines": state.to_lines(),
            "to_move": state.to_move, "scores": list(state.scores), "time_ms": 800}
    job = waited(client, client.post("/v1/analyses?wait=8", json=body))
    assert job["status"] == "finished", job
    same_analysis(job["result"], direct({**TRIVIAL, "time_ms": 800}))


def test_identical_requests_join_one_job(client, rq_worker):
    busy = client.post("/v1/analyses", json={"game": "extreme-tictactoe", "time_ms": 1000,
                                             "moves": [[0, 0]]})
    request = {**TRIVIAL, "time_ms": 1100 + uuid.uuid4().int % 99}
    first = client.post("/v1/analyses", json=request)
    second = client.post("/v1/analyses", json=dict(reversed(list(request.items()))))
    assert first.json["id"] == second.json["id"]
    poll(client, first.json["id"])
    poll(client, busy.json["id"])


def test_stored_game_at_a_serial(client, new_game, rq_worker):
    gid, auth, _ = new_game(width=2, height=1)
    for m in TRIVIAL["moves"]:
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    job = waited(client, client.post(f"/v1/games/{gid}/analyses?wait=8",
                                     json={"at": 4, "time_ms": 700}))
    assert job["status"] == "finished", job
    assert job["request"]["moves"] == TRIVIAL["moves"]
    same_analysis(job["result"], direct({**TRIVIAL, "time_ms": 700}))
    early = client.post(f"/v1/games/{gid}/analyses", json={"at": 1, "time_ms": 700})
    assert early.json["request"]["moves"] == TRIVIAL["moves"][:1]
    assert client.post(f"/v1/games/{gid}/analyses", json={"at": 5}).status_code == 422
    current = waited(client, client.post(f"/v1/games/{gid}/analyses?wait=8"))  # no body: now
    assert current["status"] == "finished" and current["request"]["moves"] == TRIVIAL["moves"]
    assert client.post("/v1/games/nope/analyses", json={}).status_code == 404


def test_analysis_request_errors(client):
    base = {"game": "dots-and-boxes", "width": 2, "height": 2}
    cases = [
        ({**base, "time_ms": 5001}, "limit_exceeded"),
        ({**base, "time_ms": 0}, "invalid_request"),
        ({**base, "time_ms": 1.5}, "invalid_request"),
        ({**base, "multipv": 0}, "invalid_request"),
        ({**base, "moves": [[1, 1, 1]] * 301}, "limit_exceeded"),
        ({**base, "moves": [[1, 1, 1], [1, 1, 1]]}, "already_drawn"),
        ({**base, "moves": [[7, 7, 1]]}, "out_of_range"),
        ({**base, "moves": [[1, 1]]}, "malformed"),
        ({**base, "moves": [], "lines": "0" * 12}, "invalid_position"),
        ({**base, "lines": "012"}, "invalid_position"),
        ({**base, "to_move": 1}, "invalid_position"),
        ({"game": "extreme-tictactoe", "lines": "0"}, "invalid_position"),
        ({"game": "extreme-tictactoe", "width": 2}, "invalid_request"),
        ({"game": "go"}, "unknown_game"),
        ({**base, "width": 13}, "limit_exceeded"),
        ({**base, "colour": 1}, "invalid_request"),
    ]
    for body, reason in cases:
        resp = client.post("/v1/analyses", json=body)
        assert resp.status_code == 422, (body, resp.json)
        assert resp.json["reason"] == reason, (body, resp.json)
    illegal = client.post("/v1/analyses", json={**base, "moves": [[1, 1, 1], [1, 1, 1]]})
    assert illegal.json["index"] == 1
    assert client.post("/v1/analyses?wait=11", json=base).status_code == 422
    assert client.post("/v1/analyses?wait=soon", json=base).status_code == 422
    assert client.get("/v1/analyses/does-not-exist").status_code == 404


def test_queue_full_is_503(settings, redis_client, spec):
    app = create_app(settings.model_copy(update={"max_queue_length": 0}),
                     connection=redis_client)
    client = CheckedClient(app.test_client(), spec)
    resp = client.post("/v1/analyses", json={**TRIVIAL, "time_ms": 4321})
    assert resp.status_code == 503 and int(resp.headers["Retry-After"]) > 0
    assert resp.mimetype == "application/problem+json"


@pytest.mark.parametrize("fork", [False, True], ids=["simple-worker", "forking-worker"])
def test_killed_worker_ends_failed_and_api_stays_healthy(settings, redis_client, spec,
                                                         tmp_path, fork):
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-kill-{fork}",
                                      "worker_fork": fork})
    app = create_app(own, connection=redis_client)
    client = CheckedClient(app.test_client(), spec)
    worker = start_worker(own, tmp_path / "worker.log")
    try:
        wait_for_workers(redis_client, own.queue_name, 1)
        resp = client.post("/v1/analyses", json={"game": "extreme-tictactoe",
                                                 "time_ms": 5000, "moves": [[1, 1]]})
        poll(client, resp.json["id"], until=("started",))
        # The machine dies: the worker and (forking worker) its work horse, which RQ puts in
        # its own process group, are killed at once, so nothing reports the job's end.
        for pid in [worker.pid, *descendants(worker.pid)]:
            os.kill(pid, signal.SIGKILL)
        worker.wait()
        failed, _ = poll(client, resp.json["id"], until=("failed", "finished"))
        assert failed["status"] == "failed"
        assert "worker" in failed["error"] and failed["result"] is None
    finally:
        stop_process(worker)
    assert client.get("/healthz").status_code == 200
    assert client.get(f"/v1/analyses/{resp.json['id']}").json["status"] == "failed"
    # A new identical request does not join the dead job.
    retry = client.post("/v1/analyses", json={"game": "extreme-tictactoe", "time_ms": 5000,
                                              "moves": [[1, 1]]})
    assert retry.json["id"] != resp.json["id"]
    redis_client.delete(f"rq:queue:{own.queue_name}")


@pytest.mark.parametrize("path", ["/readyz"])
def test_readyz_with_a_live_worker(client, rq_worker, path):
    resp = client.get(path)
    assert resp.status_code == 200 and resp.json["workers"] >= 1


def test_readyz_without_workers(settings, redis_client, spec):
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-none"})
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    resp = client.get("/readyz")
    assert resp.status_code == 503 and "worker" in resp.json["detail"]


# -- the search core -----------------------------------------------------------------------------

# 3x3 boxes after 8 moves: solved exactly by either core in well under a second.
NEAR_END_3X3 = {"game": "dots-and-boxes", "width": 3, "height": 3,
                "moves": [[1, 1, 1], [3, 3, 1], [1, 2, 2], [2, 1, 1], [3, 4, 1], [2, 3, 2],
                          [1, 4, 1], [3, 3, 2]]}


def needs_compiled_core():
    from boxfish.engine.dots.search import compiled
    if not compiled.available():
        pytest.skip(f"the compiled core is not built: {compiled.UNAVAILABLE_REASON}")


def test_the_compiled_and_python_cores_give_the_same_exact_value(client, new_game, rq_worker):
    needs_compiled_core()
    time_ms = 3000 + uuid.uuid4().int % 99  # a job of this test's own
    results = {}
    for core in ("c", "python", None):
        body = {**NEAR_END_3X3, "time_ms": time_ms, **({"core": core} if core else {})}
        job = waited(client, client.post("/v1/analyses?wait=8", json=body))
        assert job["status"] == "finished", job
        assert job["request"].get("core") == core  # left out when not chosen
        results[core] = job["result"]
    assert results["c"]["core"] == "c" and results["python"]["core"] == "python"
    assert results[None]["core"] == "c"  # the default: the compiled core, which takes 3x3
    want = direct({**NEAR_END_3X3, "time_ms": time_ms})
    assert want["exact"]
    for result in results.values():
        same_analysis(result, want)
    assert results["c"]["value"] == results["python"]["value"] == want["value"]
    assert results["c"]["best_move"] == results["python"]["best_move"]

    # The stored-game route takes the core too.
    gid, auth, _ = new_game(width=3, height=3)
    for m in NEAR_END_3X3["moves"]:
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    stored = waited(client, client.post(f"/v1/games/{gid}/analyses?wait=8",
                                        json={"time_ms": time_ms, "core": "python"}))
    assert stored["status"] == "finished", stored
    assert stored["request"]["core"] == "python"
    assert stored["result"]["core"] == "python"
    assert stored["result"]["value"] == want["value"]
    again = client.get(f"/v1/analyses/{stored['id']}")
    assert again.json["result"]["core"] == "python"


def test_a_core_that_cannot_run_is_refused_and_nothing_is_enqueued(settings, redis_client,
                                                                   spec, new_game):
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-core-refused"})
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    queue = Queue(own.queue_name, connection=redis_client)
    job_keys = f"{own.key_prefix}:analysis:job:{own.queue_name}:*"

    def refused(path, body, reason, *words):
        resp = client.post(path, json=body)
        assert resp.status_code == 422, (body, resp.json)
        assert resp.mimetype == "application/problem+json"
        problem = resp.json
        assert problem["type"] == "urn:boxfish:problem:invalid-request"
        assert problem["status"] == 422 and problem["reason"] == reason, problem
        for word in words:
            assert word in problem["detail"], problem
        return problem

    xttt = refused("/v1/analyses", {"game": "extreme-tictactoe", "core": "c"},
                   "core_unavailable", "Python search")
    assert xttt["errors"][0]["loc"] == ["core"]
    from boxfish.engine.dots.search import compiled
    too_big = ("128 lines", "10x10 has 220") if compiled.available() else ()
    refused("/v1/analyses", {"game": "dots-and-boxes", "width": 10, "height": 10,
                             "core": "c"}, "core_unavailable", *too_big)
    refused("/v1/analyses", {"game": "dots-and-boxes", "width": 10, "height": 10,
                             "lines": "0" * 220, "core": "c"}, "core_unavailable", *too_big)
    gid, _, _ = new_game("extreme-tictactoe")
    refused(f"/v1/games/{gid}/analyses", {"core": "c"}, "core_unavailable", "Python search")
    big, _, _ = new_game(width=10, height=10)
    refused(f"/v1/games/{big}/analyses", {"core": "c", "time_ms": 10}, "core_unavailable",
            *too_big)
    for bad in ("rust", "C", "", None, 1, ["c"]):
        problem = refused("/v1/analyses", {**TRIVIAL, "core": bad}, "invalid_request")
        assert any(e["loc"][-1] == "core" for e in problem["errors"]), problem
        refused(f"/v1/games/{gid}/analyses", {"core": bad}, "invalid_request")
    assert queue.count == 0 and not list(redis_client.scan_iter(job_keys))

    # What can run is taken: Python for either game, and the compiled core where it fits.
    for body in ({"game": "extreme-tictactoe", "core": "python", "time_ms": 10},
                 {"game": "dots-and-boxes", "width": 10, "height": 10, "core": "python",
                  "time_ms": 10},
                 *([{**TRIVIAL, "core": "c", "time_ms": 10}] if compiled.available() else [])):
        assert client.post("/v1/analyses", json=body).status_code == 202, body
    assert queue.count == len(list(redis_client.scan_iter(job_keys))) >= 2
    queue.empty()


# -- a job whose worker died, failed by the API's own check --------------------------------------


def test_a_dead_workers_job_announces_its_failure_from_any_api_thread(settings, redis_client,
                                                                      spec, tmp_path):
    """The API fails the job of a killed worker from a request thread (as gunicorn's gthread
    workers answer): the job's failure callback runs there too, so the analysis's callback is
    told ``analysis.failed`` (RQ's default SIGALRM timer cannot be set outside the main
    thread)."""
    from boxfish.service.application.webhooks import new_secret
    from boxfish.service.store.keys import KeySpace

    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-thread-kill",
                                      "webhook_queue_name": f"{settings.queue_name}-tk-hooks",
                                      "job_liveness_s": 1.0})
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    worker = start_worker(own, tmp_path / "worker.log")
    try:
        wait_for_workers(redis_client, own.queue_name, 1)
        resp = client.post("/v1/analyses", json={
            "game": "extreme-tictactoe", "time_ms": 5000, "moves": [[2, 2]],
            "callback": {"url": "http://127.0.0.1:9/analysis", "secret": new_secret()}})
        assert resp.status_code == 202, resp.json
        job_id = resp.json["id"]
        poll(client, job_id, until=("started",))
        for pid in [worker.pid, *descendants(worker.pid)]:
            os.kill(pid, signal.SIGKILL)
        worker.wait()

        views: list = []

        def poll_in_a_thread():
            try:
                views.append(poll(client, job_id, until=("failed", "finished"))[0])
            except BaseException as exc:  # reported below
                views.append(exc)

        thread = threading.Thread(target=poll_in_a_thread)
        thread.start()
        thread.join(timeout=60)
        (view,) = views
        assert isinstance(view, dict), view
        assert view["status"] == "failed" and "worker" in view["error"]
        ended = redis_client.get(KeySpace(own.key_prefix).analysis_ended(job_id))
        assert ended is not None, "the failure callback did not run"
        event = json.loads(ended)
        assert event["type"] == "analysis.failed" and event["data"]["id"] == job_id
        assert "worker" in event["data"]["error"]
    finally:
        stop_process(worker)
        for name in (own.queue_name, own.webhook_queue_name):
            redis_client.delete(f"rq:queue:{name}")


def _started_by_a_gone_worker(settings, redis_client, queue_name: str):
    """An analysis job that RQ shows started by a worker that then vanished (nothing refreshes
    its liveness key): a real RQ worker object marks it started and is never run. Returns
    ``(service, job, execution)``."""
    from rq import SimpleWorker
    from rq.job import Job

    from boxfish.service.application.analyses import AnalysisService
    from boxfish.service.application.analysis_request import AnalysisRequest
    from boxfish.service.store.keys import KeySpace

    own = settings.model_copy(update={"queue_name": queue_name, "job_liveness_s": 0.2})
    service = AnalysisService(redis_client, own, KeySpace(own.key_prefix))
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    job, _ = service.submit(AnalysisRequest.for_game(game, time_ms=1000 + uuid.uuid4().int % 999,
                                                     moves=TRIVIAL["moves"]))
    worker = SimpleWorker([service.queue], connection=redis_client)
    job = Job.fetch(job.id, connection=redis_client)
    execution = worker.prepare_execution(job)
    worker.prepare_job_execution(job)
    assert job.get_status(refresh=True) == "started"
    time.sleep(0.3)  # older than the liveness window
    return service, job, execution


def test_a_started_job_without_its_execution_record_is_failed_not_an_error(settings,
                                                                         redis_client):
    # The execution's hash is gone (as when the worker ends the job at that moment, or it
    # expired): the API's check must still fail the job, not raise (a 500).
    service, job, execution = _started_by_a_gone_worker(
        settings, redis_client, f"{settings.queue_name}-no-execution")
    redis_client.delete(execution.key)
    assert service.status(job) == "failed"
    assert "worker" in service.view(job)["error"]
    # With no entry in the started registry at all, the same.
    service, job, execution = _started_by_a_gone_worker(
        settings, redis_client, f"{settings.queue_name}-no-entry")
    redis_client.delete(execution.key)
    redis_client.zrem(job.started_job_registry.key, execution.composite_key)
    assert service.status(job) == "failed"


def test_a_job_whose_worker_is_back_is_not_failed(settings, redis_client):
    # The liveness key is back (its worker refreshed it) between the API's check and its
    # failing the job: the job is left running.
    service, job, _ = _started_by_a_gone_worker(settings, redis_client,
                                                f"{settings.queue_name}-back")
    assert service._abandoned(job)
    redis_client.set(service.keys.analysis_alive(job.id), 1, px=5000)
    service._fail_abandoned(job)
    assert job.get_status(refresh=True) == "started"
    assert service.status(job) == "started"
    # Nor is one that ended meanwhile.
    service, job, _ = _started_by_a_gone_worker(settings, redis_client,
                                                f"{settings.queue_name}-ended")
    job.set_status("finished")
    service._fail_abandoned(job)
    assert job.get_status(refresh=True) == "finished"


def test_a_result_stored_before_time_used_ms_is_shown_with_it(client, redis_client, rq_worker):
    """A job's result from a worker of an earlier version carries only ``time_ms``: it is
    shown with ``time_used_ms`` too (validated against openapi.yaml by the client)."""
    from rq.job import Job
    from rq.results import Result

    request = {**TRIVIAL, "time_ms": 1500}
    job_id = waited(client, client.post("/v1/analyses?wait=10", json=request))["id"]
    job = Job.fetch(job_id, connection=redis_client)
    old = {k: v for k, v in job.return_value().items() if k != "time_used_ms"}
    # the newest entry of the job's results stream is its return value
    Result.create(job, Result.Type.SUCCESSFUL, ttl=600, return_value=old)
    assert "time_used_ms" not in Job.fetch(job_id, connection=redis_client).return_value()
    shown = client.get(f"/v1/analyses/{job_id}").json["result"]
    assert shown["time_used_ms"] == shown["time_ms"] == old["time_ms"]
    assert list(shown).index("time_used_ms") == list(shown).index("time_ms") - 1


def test_time_ms_in_results_is_deprecated_with_its_removal_named():
    """openapi.yaml marks a result's ``time_ms`` deprecated and names the version that drops
    it (``TIME_MS_REMOVED_IN``); ``time_used_ms`` is the field to read."""
    import yaml

    from boxfish.service.application.analysis_request import TIME_MS_REMOVED_IN
    from boxfish.service.http.app import find_openapi

    spec = yaml.safe_load(open(find_openapi()).read())
    fields = spec["components"]["schemas"]["AnalysisResult"]["properties"]
    assert fields["time_ms"]["deprecated"] is True
    assert "time_used_ms" in fields["time_ms"]["description"]
    assert f"removed from results in Boxfish {TIME_MS_REMOVED_IN}" in " ".join(
        fields["time_ms"]["description"].split())
    assert not fields["time_used_ms"].get("deprecated", False)
