"""The analysis job (``workers/analysis_job.py``): the runner that owns a worker process's search
cache, the job function, and a request's round trip through a real RQ job."""

from __future__ import annotations

import os
import uuid

import pytest
from rq.job import Job

import boxfish.workers.analysis_job as wa
from boxfish import engine
from boxfish.service.application.analyses import AnalysisService
from boxfish.service.application.analysis_request import AnalysisRequest
from boxfish.service.store.keys import KeySpace

# 1x2 boxes with 4 of the 7 lines drawn: a handful of moves left, solved at once.
TRIVIAL_MOVES = [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]


def trivial(time_ms: int = 800, **limits) -> AnalysisRequest:
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    return AnalysisRequest.for_game(game, time_ms=time_ms, moves=TRIVIAL_MOVES, **limits)


def direct(request: AnalysisRequest) -> dict:
    return engine.analyse(request.build_state(), time_ms=request.time_ms).to_dict()


@pytest.fixture
def fresh_runner():
    """Drop this process's runner before and after the test (it reads the settings once)."""
    wa.process_runner.cache_clear()
    yield
    wa.process_runner.cache_clear()


def test_worker_search_cache_follows_the_environment(monkeypatch, fresh_runner):
    monkeypatch.delenv("BOXFISH_SEARCH_CACHE_ENTRIES", raising=False)
    cache = wa.search_cache()
    assert isinstance(cache, engine.SearchCache)
    assert cache.max_entries == wa.DEFAULT_SEARCH_CACHE_ENTRIES
    assert wa.search_cache() is cache  # one per process, kept between jobs

    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "1234")
    assert wa.search_cache().max_entries == 1234

    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "0")
    assert wa.search_cache() is None

    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "lots")
    with pytest.raises(ValueError, match="BOXFISH_SEARCH_CACHE_ENTRIES"):
        wa.search_cache()


def test_the_settings_are_read_once_per_process(monkeypatch, fresh_runner):
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "0")
    runner = wa.process_runner()
    assert wa.process_runner() is runner and runner.search_cache is None
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", "lots")
    assert wa.search_cache() is None  # the runner made at first use stays
    wa.process_runner.cache_clear()
    with pytest.raises(ValueError, match="BOXFISH_SEARCH_CACHE_ENTRIES"):
        wa.process_runner()
    monkeypatch.setenv("BOXFISH_SEARCH_CACHE_ENTRIES", " ")  # empty: the default
    assert wa.search_cache().max_entries == wa.DEFAULT_SEARCH_CACHE_ENTRIES  # nothing kept


def spy_on_analyse(monkeypatch) -> list[dict]:
    """``engine.analyse`` replaced by itself recording the keyword arguments of each call."""
    calls: list[dict] = []
    real = engine.analyse

    def spy(state, **kwargs):
        calls.append(kwargs)
        return real(state, **kwargs)

    monkeypatch.setattr(engine, "analyse", spy)
    return calls


def test_a_runner_owns_its_search_cache_and_passes_it_to_every_search(monkeypatch):
    runner = wa.AnalysisRunner(search_cache_entries=321)
    assert runner.search_cache.max_entries == 321
    assert wa.AnalysisRunner(search_cache_entries=5).search_cache is not runner.search_cache
    assert wa.AnalysisRunner(search_cache_entries=0).search_cache is None
    want = direct(trivial())
    calls = spy_on_analyse(monkeypatch)
    first, second = runner.analyse(trivial()), runner.analyse(trivial(time_ms=801))
    caches = [kwargs["cache"] for kwargs in calls]
    assert len(caches) == 2 and all(c is runner.search_cache for c in caches)
    assert first["exact"] and first["value"] == want["value"] == second["value"]


def test_run_analysis_takes_the_json_form_or_the_model(spy_runner):
    request = trivial(multipv=2)
    from_json = wa.run_analysis(request.model_dump(mode="json"))
    from_model = wa.run_analysis(request)
    assert spy_runner.seen == [request, request]
    assert from_json["value"] == from_model["value"] == direct(request)["value"]
    assert len(from_json["moves"]) == 2


def test_run_analysis_raises_the_engines_error_for_a_bad_request(spy_runner):
    illegal = {**trivial().model_dump(mode="json"), "moves": [[1, 1, 1], [1, 1, 1]]}
    with pytest.raises(engine.ReplayError):
        wa.run_analysis(illegal)
    xttt_lines = {"game": "extreme-tictactoe", "params": {}, "lines": "0", "time_ms": 10}
    with pytest.raises(ValueError, match="cannot be given as lines"):
        wa.run_analysis(xttt_lines)


def test_a_request_round_trips_through_the_job(settings, redis_client, work_here, spy_runner):
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-round-trip"})
    service = AnalysisService(redis_client, own, KeySpace(own.key_prefix))
    request = trivial(time_ms=700 + uuid.uuid4().int % 99)
    job, how = service.submit(request)
    assert how == "new"

    stored = Job.fetch(job.id, connection=redis_client)
    assert stored.args[0] == request.model_dump(mode="json")  # plain JSON data, not a pickle
    assert AnalysisRequest.model_validate(stored.args[0]) == request
    assert service.request_of(stored) == request
    assert stored.meta["request_hash"] == request.digest()

    work_here(own.queue_name)
    assert spy_runner.seen == [request]  # the worker runs the value the API enqueued
    assert service.status(stored) == "finished"
    view = service.view(stored)
    assert view["request"] == request.model_dump(mode="json")
    assert view["result"]["exact"] and view["result"]["value"] == direct(request)["value"]

    # The request read back from the job is the same request: it joins the finished job.
    again, how = service.submit(AnalysisRequest.model_validate(view["request"]))
    assert (again.id, how) == (job.id, "joined")


def test_the_runner_sizes_the_compiled_table_from_the_settings(monkeypatch, fresh_runner):
    from boxfish.service.config import DEFAULT_SEARCH_TABLE_MB, Settings

    monkeypatch.delenv("BOXFISH_SEARCH_TABLE_MB", raising=False)
    monkeypatch.delenv("BOXFISH_SEARCH_CACHE_ENTRIES", raising=False)
    assert DEFAULT_SEARCH_TABLE_MB == 64
    assert wa.search_cache().table_bytes == 64 << 20

    runner = wa.AnalysisRunner.from_settings(Settings(search_table_mb=3,
                                                      search_cache_entries=4000))
    assert runner.search_cache.table_bytes == 3 << 20
    assert runner.search_cache.max_entries == 4000
    assert wa.AnalysisRunner(search_cache_entries=10).search_cache.table_bytes is None
    assert wa.AnalysisRunner.from_settings(
        Settings(search_cache_entries=0, search_table_mb=3)).search_cache is None

    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_TABLE_MB", "5")
    assert wa.search_cache().table_bytes == 5 << 20
    for bad in ("0", "65537", "lots", "-1"):
        wa.process_runner.cache_clear()
        monkeypatch.setenv("BOXFISH_SEARCH_TABLE_MB", bad)
        with pytest.raises(ValueError, match="search_table_mb"):
            wa.process_runner()
    monkeypatch.setenv("BOXFISH_SEARCH_TABLE_MB", "65536")
    wa.process_runner.cache_clear()
    assert wa.search_cache().table_bytes == 65536 << 20

    # The cache hands the size to the compiled core's table of a board size it searches.
    from boxfish.engine.dots.search import compiled
    if not compiled.available():
        pytest.skip("the compiled core is not built")
    result = runner.analyse(trivial(core="c"))
    assert result["core"] == "c"
    (owner,) = runner.search_cache.owners().values()
    assert owner.table_bytes == 3 << 20


def test_the_runner_runs_the_requests_core(monkeypatch):
    from boxfish.engine.dots.search import compiled

    runner = wa.AnalysisRunner(search_cache_entries=1000)
    want = direct(trivial())
    calls = spy_on_analyse(monkeypatch)
    python = runner.analyse(trivial(core="python"))
    auto = runner.analyse(trivial())
    assert python["core"] == "python" and python["value"] == want["value"]
    assert auto["core"] == ("c" if compiled.available() else "python")
    assert auto["value"] == want["value"]
    cores = [kwargs["core"] for kwargs in calls]
    assert cores[-2:] == ["python", None]
    if compiled.available():
        assert runner.analyse(trivial(core="c"))["core"] == "c" and calls[-1]["core"] == "c"
    # The worker's own check (the API refuses these before they are enqueued).
    xttt = AnalysisRequest.for_game(engine.load_game("extreme-tictactoe"), time_ms=10,
                                    core="c")
    with pytest.raises(ValueError, match="Python search"):
        runner.analyse(xttt)


def test_the_runner_searches_on_the_threads_the_settings_give(monkeypatch, fresh_runner):
    """``BOXFISH_SEARCH_THREADS`` reaches every analysis of the worker; unset or empty, a
    worker uses every CPU it may; out of 1..64 it is refused when the runner is made."""
    from boxfish.engine.analysis import usable_cores

    monkeypatch.delenv("BOXFISH_SEARCH_THREADS", raising=False)
    assert wa.process_runner().threads == usable_cores()
    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_THREADS", "3")
    runner = wa.process_runner()
    assert runner.threads == 3
    calls = spy_on_analyse(monkeypatch)
    result = runner.analyse(trivial())
    assert result["exact"] and calls[-1]["threads"] == 3
    wa.process_runner.cache_clear()
    monkeypatch.setenv("BOXFISH_SEARCH_THREADS", " ")
    assert wa.process_runner().threads == usable_cores()
    for bad in ("0", "65", "lots", "-2"):
        wa.process_runner.cache_clear()
        monkeypatch.setenv("BOXFISH_SEARCH_THREADS", bad)
        with pytest.raises(ValueError, match="search_threads"):
            wa.process_runner()
    assert wa.AnalysisRunner(search_cache_entries=10, threads=2).threads == 2


def test_workers_started_together_share_the_cores(monkeypatch):
    """``boxfish serve --workers N`` and ``boxfish worker --workers N`` give each analysis
    worker its share of the CPUs (workers times threads within them) unless
    ``BOXFISH_SEARCH_THREADS`` says otherwise."""
    from boxfish.engine.analysis import usable_cores
    from boxfish.service.config import search_threads_for
    from boxfish.service.runtime.cli import _share_cores

    cores = usable_cores()
    assert search_threads_for(1) == cores
    assert search_threads_for(2) == max(1, cores // 2)
    assert search_threads_for(cores + 1) == 1
    for workers in (1, 2, 3, cores, 2 * cores):
        env: dict = {}
        _share_cores(env, workers)
        threads = int(env["BOXFISH_SEARCH_THREADS"])
        assert threads >= 1 and (threads * workers <= cores or threads == 1)
    for given in ("5", "1"):
        env = {"BOXFISH_SEARCH_THREADS": given}
        _share_cores(env, 2)
        assert env["BOXFISH_SEARCH_THREADS"] == given
    env = {"BOXFISH_SEARCH_THREADS": ""}
    _share_cores(env, 2)
    assert env["BOXFISH_SEARCH_THREADS"] == str(search_threads_for(2))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert search_threads_for(3) == 2 and search_threads_for(2) == 4


def test_search_threads_flag_of_serve_and_worker(monkeypatch, capsys):
    """``--search-threads N`` on ``boxfish serve`` and ``boxfish worker`` is
    ``BOXFISH_SEARCH_THREADS`` for the process and the workers it starts (and so wins over
    sharing the cores); out of 1..64 the command line is refused."""
    from boxfish.service.runtime.cli import _parser, _share_cores, _take_search_threads

    monkeypatch.delenv("BOXFISH_SEARCH_THREADS", raising=False)
    for command in ("serve", "worker"):
        args = _parser().parse_args([command, "--search-threads", "3"])
        _take_search_threads(args)
        env = dict(os.environ)
        _share_cores(env, 2)
        assert env["BOXFISH_SEARCH_THREADS"] == "3"
        wa.process_runner.cache_clear()
        assert wa.process_runner().threads == 3
        monkeypatch.delenv("BOXFISH_SEARCH_THREADS")
        for bad in ("0", "65", "two"):
            with pytest.raises(SystemExit) as exited:
                _parser().parse_args([command, "--search-threads", bad])
            assert exited.value.code == 2
            assert "--search-threads: must be an integer from 1 to 64" in capsys.readouterr().err
    wa.process_runner.cache_clear()
