"""The exact data (``boxfish.engine.dots.learn``): its values against the independent reference
solver, its determinism, resumption after a stop or a torn line, and the command."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest

from boxfish.engine.dots.learn import store
from boxfish.engine.dots.learn.data import Job, main, run
from boxfish.engine.dots.learn.sources import SOURCES, generate
from tests.engine.dots.reference import reference_move_values

MODULE = "boxfish.engine.dots.learn.data"


def _job(tmp_path, w=3, h=3, undrawn=(9, 13, 17), per_count=2, seed=1, **kw) -> Job:
    return Job(w, h, tuple(undrawn), per_count, seed, tmp_path, workers=0, **kw)


def _lines(path) -> list[dict]:
    """A file's header and records, without the fields that depend on the run."""
    head, rows = store.read(path)
    return [head] + [{k: v for k, v in r.items() if k not in store.RUN_FIELDS} for r in rows]


def _files(job: Job) -> dict[str, list[dict]]:
    return {s: _lines(job.path(s)) for s in job.sources}


@pytest.mark.parametrize("w,h,undrawn", [(3, 3, (8, 12, 16, 20)), (2, 4, (8, 12, 16, 20)),
                                         (3, 4, (12, 16, 20, 24))])
def test_values_are_the_reference_solvers(tmp_path, w, h, undrawn):
    """Every source's positions: the value and every move's value are the reference's."""
    job = _job(tmp_path, w, h, undrawn)
    out = run(job)
    assert out.solved == len(undrawn) * 2 * len(SOURCES) and out.unsolved == 0
    nl = (h + 1) * w + h * (w + 1)
    for source in SOURCES:
        head, rows = store.read(job.path(source))
        assert head == store.header(w, h, source, 1, job.params_of(source))
        assert sorted((r["u"], r["i"]) for r in rows) == sorted(
            (u, i) for u in undrawn for i in range(2))
        for r in rows:
            drawn = store.drawn_of(r)
            assert nl - drawn.bit_count() == r["u"] == len(r["values"])
            truth = reference_move_values(w, h, drawn)
            assert store.move_values(r, nl) == truth, (source, r)
            assert r["value"] == max(truth.values())


def test_the_same_seed_gives_the_same_records(tmp_path):
    a, b = _job(tmp_path / "a"), _job(tmp_path / "b")
    run(a)
    run(b)
    assert _files(a) == _files(b)
    other = _job(tmp_path / "c", seed=2)
    run(other)
    for s in SOURCES:
        assert [r["drawn"] for r in _files(other)[s][1:]] != [r["drawn"] for r in _files(a)[s][1:]]


def test_a_position_depends_on_its_name_alone(tmp_path):
    """A run of other counts and more positions per count makes the same positions where the
    two overlap."""
    small = _job(tmp_path / "a", undrawn=(13,), per_count=1)
    big = _job(tmp_path / "b", undrawn=(9, 13), per_count=3)
    run(small)
    run(big)
    for s in SOURCES:
        [one] = _files(small)[s][1:]
        assert one in _files(big)[s][1:]
        assert one["drawn"] == hex(generate(s, 3, 3, 1, 13, 0).drawn)


def test_a_stopped_run_resumes_to_the_same_files(tmp_path):
    whole = _job(tmp_path / "whole")
    run(whole)
    parts = _job(tmp_path / "parts")
    written = []
    out = run(parts, stop=lambda: len(written) >= 5,
              on_record=lambda s, r, o: written.append(r))
    assert out.stopped and out.solved == 5 and out.todo == 3 * 2 * 3 - 5
    out = run(parts)
    assert not out.stopped and out.solved == 3 * 2 * 3 - 5
    assert _files(parts) == _files(whole)
    assert run(parts).solved == 0  # nothing left


def test_a_torn_last_line_is_cut_off_and_solved_again(tmp_path):
    whole = _job(tmp_path / "whole")
    run(whole)
    torn = _job(tmp_path / "torn")
    path = torn.path("safe")
    path.parent.mkdir(parents=True)
    lines = whole.path("safe").read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:17])  # a crash mid-record
    head, rows = store.read(path)
    assert head["source"] == "safe" and len(rows) == 2  # the torn line is skipped
    out = run(torn)
    assert out.solved == 3 * 2 * 3 - 2
    assert _files(torn) == _files(whole)
    # a torn header alone: the file starts again
    path.write_bytes(lines[0][:10])
    run(torn)
    assert _lines(path) == _lines(whole.path("safe"))


def test_a_damaged_line_or_other_data_is_refused(tmp_path):
    job = _job(tmp_path, undrawn=(9,), per_count=1, sources=("selfplay",))
    run(job)
    other = _job(tmp_path, undrawn=(9,), per_count=1, sources=("selfplay",), selfplay_nodes=500)
    assert other.path("selfplay") == job.path("selfplay")
    with pytest.raises(store.FormatError, match="other data"):
        run(other)  # other positions would join the file
    path = job.path("selfplay")
    path.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(store.FormatError, match=":3: not a JSON line"):
        store.read(path)


def test_an_unsolved_position_is_tried_again_with_a_larger_cap(tmp_path):
    """4x4 at 30 undrawn: about a million nodes, far more than a millisecond's search."""
    capped = _job(tmp_path, 4, 4, (30,), 1, sources=("safe",), cap=0.001)
    out = run(capped)
    assert out.unsolved == 1
    [rec] = store.read(capped.path("safe"))[1]
    assert rec["value"] is None and rec["values"] is None and rec["cap"] == 0.001
    assert run(capped).todo == 0  # not again within the same cap
    out = run(_job(tmp_path, 4, 4, (30,), 1, sources=("safe",)))
    assert out.solved == 1
    first, second = store.read(capped.path("safe"))[1]
    assert first == rec and second["value"] is not None
    assert store.latest([first, second]) == {(30, 0): second}
    lo, hi = first["lower"], first["upper"]
    assert (lo is None or lo <= second["value"]) and (hi is None or second["value"] <= hi)


def test_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(store.ENV, str(tmp_path / "x"))
    assert store.default_dir() == tmp_path / "x"
    monkeypatch.delenv(store.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store.default_dir() == tmp_path / "cache" / "boxfish" / "exact"
    assert store.data_path(tmp_path, 5, 4, "safe", 3) == tmp_path / "5x4" / "safe-seed3.jsonl"


def _cli(*args: str, **kw):
    return subprocess.Popen([sys.executable, "-m", MODULE, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_the_command_end_to_end(tmp_path):
    p = _cli("--board", "2x2", "--undrawn", "3-6,8", "--per-count", "2", "--seed", "5",
             "--dir", str(tmp_path))
    _out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "30 solved, 0 unsolved" in err
    for s in SOURCES:
        head, rows = store.read(tmp_path / "2x2" / f"{s}-seed5.jsonl")
        assert head["seed"] == 5 and len(rows) == 10
    p = _cli("--report", "--dir", str(tmp_path))
    report, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "2x2 selfplay seed 5" in report
    assert [ln.split()[:3] for ln in report.splitlines() if ln.split()[:1] == ["all"]] == [
        ["all", "10", "0"]] * 3


def test_main_reports_an_empty_folder(tmp_path, capsys):
    assert main(["--report", "--dir", str(tmp_path)]) == 0
    assert "no data under" in capsys.readouterr().out


def _records(path) -> int:
    try:
        return len(store.read(path)[1])
    except FileNotFoundError:
        return 0


def test_the_command_stops_cleanly_on_sigterm(tmp_path):
    """Stopped while its worker solves: exit 143, no worker left, whole records only, and a
    second run goes on from there."""
    args = ("--board", "4x4", "--undrawn", "26-30", "--per-count", "20", "--sources", "safe",
            "--dir", str(tmp_path), "--table-gb", "0.25")
    p = _cli(*args)
    path = tmp_path / "4x4" / "safe-seed1.jsonl"
    deadline = time.monotonic() + 120
    while _records(path) < 2 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = psutil.Process(p.pid).children(recursive=True)
    assert workers
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "(stopped)" in err
    _gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive
    assert path.read_bytes().endswith(b"\n")
    head, rows = store.read(path)
    done = len(rows)
    assert head["source"] == "safe" and 2 <= done < 100 and len(store.latest(rows)) == done
    p = _cli(*args[:5], "1", *args[6:], "-q")  # a smaller run: what is done is skipped
    _out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert len(store.read(path)[1]) == max(done, 5)
