"""``boxfish solve`` and :class:`boxfish.engine.dots.solve.Solve`: long solves that survive a
restart. Values come from the independent reference solver, never from the engine."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import pytest

from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.solve import CheckpointMismatch, Solve
from tests.engine.dots.reference import reference_move_values, reference_value

BOXFISH = os.path.join(os.path.dirname(sys.executable), "boxfish")


def _solve_cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([BOXFISH, "solve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_solve_values_and_root_moves_match_the_reference():
    """Positions from both generators: the value, the best move and every root move's bounds
    hold against the reference solver."""
    rng = random.Random(23)
    positions = [safe_play(rng, 3, 4, 22).drawn, biased_play(rng, 3, 4, 24, 0.8).drawn,
                 safe_play(rng, 4, 4, 26).drawn, biased_play(rng, 4, 4, 26, 0.7).drawn]
    for w, h, drawn in zip((3, 3, 4, 4), (4, 4, 4, 4), positions, strict=True):
        p = Solve(w, h, drawn, threads=2).run()
        assert p.done
        assert p.value == reference_value(w, h, drawn)
        truth = reference_move_values(w, h, drawn)
        assert truth[p.best_line] == p.value
        for r in p.settled:
            assert r.lower <= truth[r.line] <= r.upper, (w, h, drawn, r)
        assert {r.line for r in p.settled} == set(truth)


def test_a_checkpoint_of_another_position_is_refused(tmp_path):
    ckpt = tmp_path / "a.ckpt"
    rng = random.Random(5)
    drawn = safe_play(rng, 3, 3, 14).drawn
    assert Solve(3, 3, drawn, checkpoint=str(ckpt)).run().done
    with pytest.raises(CheckpointMismatch):
        Solve(3, 4, 0, checkpoint=str(ckpt))
    with pytest.raises(CheckpointMismatch):
        Solve(3, 3, 0, checkpoint=str(ckpt))
    (tmp_path / "junk").write_bytes(b"not a checkpoint\n\x00\x01")
    with pytest.raises(CheckpointMismatch):
        Solve(3, 3, drawn, checkpoint=str(tmp_path / "junk"))


# The empty 3x4 board, computed once by the reference solver (too long for a test; on the
# loaded 2-core machine): a tie, 474,171,894 nodes, 169 s of CPU, 435 s of wall time; its
# best move 1,3,1 (line 6) is worth 0 too, 102,107,246 nodes, 36 s of CPU. Its positions of
# 22-24 undrawn lines are checked live above.
REFERENCE_3X4 = 0
REFERENCE_3X4_BEST = (1, 3, 1)


def test_a_3x4_solve_interrupted_at_seeded_points_resumes_to_the_reference_value(tmp_path):
    """The issue's test: ``boxfish solve 3 4`` stopped by SIGINT or SIGTERM at points drawn
    from a fixed seed and started again with the same checkpoint gives the reference
    solver's value, as a fresh solve does (whose bounds on the reference's best move hold its
    value), and the resumed run searches fewer nodes than the fresh one.

    A run is stopped after 0-2 of its progress lines (the solve runs in slices of a second
    and reports and stops between them), the first run right after it says it has begun, so
    that it stops at the end of its first slice, whatever the machine's load: the solve takes
    several (2 s on an idle machine, 13 s on a loaded one)."""
    fresh = _solve_cli("3", "4", "--json", "--threads", "1", "--progress", "0")
    out, err = fresh.communicate(timeout=600)
    assert fresh.returncode == 0, err
    fresh_result = json.loads(out)
    assert fresh_result["value"] == REFERENCE_3X4
    root = {tuple(r["move"]): (r["lower"], r["upper"]) for r in fresh_result["root_moves"]}
    lower, upper = root[REFERENCE_3X4_BEST]  # (None: unbounded on that side)
    assert (lower is None or lower <= REFERENCE_3X4) and \
        (upper is None or REFERENCE_3X4 <= upper), (lower, upper)

    rng = random.Random(3401)
    ckpt = tmp_path / "3x4.ckpt"
    stops = 0
    for lines in [0, rng.randint(0, 2), rng.randint(0, 2)]:
        run = _solve_cli("3", "4", "--json", "--threads", "1", "--progress", "0.2",
                         "--checkpoint", str(ckpt))
        # the first line says the solve has begun (before it, the interpreter is starting)
        first = run.stderr.readline()
        assert first.startswith("boxfish solve: 3x4, 31 lines to draw"), first
        assert ("(new)" in first) == (stops == 0), first
        for _ in range(lines):
            line = run.stderr.readline()
            if not line.startswith("root moves") or " 31/31 settled" in line:
                break  # done (or its last line): nothing left to stop
        sig = rng.choice((signal.SIGINT, signal.SIGTERM))
        run.send_signal(sig)
        out, err = run.communicate(timeout=120)
        if run.returncode == 0:
            break  # it finished before the signal: nothing left to resume
        assert run.returncode == 128 + sig, err
        assert "checkpoint saved" in err
        assert ckpt.exists()
        stops += 1
    assert stops >= 1
    resumed = _solve_cli("3", "4", "--json", "--threads", "1", "--progress", "0",
                         "--checkpoint", str(ckpt))
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    assert result["value"] == fresh_result["value"] == REFERENCE_3X4
    assert result["nodes"] < fresh_result["nodes"]
    assert result["nodes_total"] >= result["nodes"]


def test_progress_names_the_root_moves_settled(tmp_path):
    run = _solve_cli("3", "3", "--progress", "0.2", "--threads", "1")
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert "value" in out
    lines = [ln for ln in err.splitlines() if ln.startswith("root moves")]
    assert lines and "M nodes" in lines[-1] and "table" in lines[-1]
    last = lines[-1]
    n_root = int(last.split()[2].split("/")[1])
    assert last.startswith(f"root moves {n_root}/{n_root} settled")


def test_proven_entries_round_trip_and_bad_records_are_refused():
    s = Solve(3, 3, 0, threads=1)
    first = s.run()
    assert first.done
    data = s.caches.compiled.export_proven()
    assert data and len(data) % 24 == 0
    fresh = Solve(3, 3, 0, threads=1)
    fresh.caches.compiled.import_proven(data)
    records = sorted(data[i:i + 24] for i in range(0, len(data), 24))
    back = fresh.caches.compiled.export_proven()
    assert sorted(back[i:i + 24] for i in range(0, len(back), 24)) == records
    again = fresh.run()
    assert again.value == first.value
    assert again.nodes < first.nodes // 2
    with pytest.raises(ValueError):
        fresh.caches.compiled.import_proven(b"\x00" * 23)
    with pytest.raises(ValueError):
        fresh.caches.compiled.import_proven(b"\x00" * 24)  # depth 0: not a proven entry


def test_a_signal_while_the_checkpoint_loads_stops_the_solve_and_saves(tmp_path):
    """SIGTERM (or SIGINT) that arrives while a checkpoint is still being read is not lost
    and does not kill the process: the solve stops as soon as it can be saved, with 143."""
    ckpt = tmp_path / "3x4.ckpt"
    begun = Solve(3, 4, 0, checkpoint=str(ckpt), threads=1)
    p = begun.run(on_progress=lambda _p: begun.stop(), progress_s=0.0)
    assert p.saved and not p.done
    for sig in (signal.SIGTERM, signal.SIGINT):
        # the signal is sent from inside the checkpoint's loading
        script = (
            "import os, signal, sys\n"
            "from boxfish.engine.dots import solve\n"
            "from boxfish.engine import solve_cli\n"
            "load = solve.Solve._load\n"
            "def slow_load(self, path):\n"
            f"    os.kill(os.getpid(), {int(sig)})\n"
            "    load(self, path)\n"
            "solve.Solve._load = slow_load\n"
            f"sys.exit(solve_cli.main(['3', '4', '--threads', '1', '--progress', '0', "
            f"'--checkpoint', {str(ckpt)!r}]))\n")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 128 + sig, run.stderr
        assert "resumed from" in run.stderr and "checkpoint saved" in run.stderr, run.stderr


def _stopped_after_each_search(w: int, h: int, ckpt) -> Solve:
    """A :class:`Solve` from ``ckpt`` that is asked to stop after each of its searches, so
    that each :meth:`Solve.run` saves right after one search: the one that proves a root move,
    too."""
    solve = Solve(w, h, 0, checkpoint=str(ckpt), threads=1)
    search = solve.searcher.child_value

    def then_stop(*args, **kwargs):
        value = search(*args, **kwargs)
        solve.stop()
        return value

    solve.searcher.child_value = then_stop
    return solve


def test_a_root_move_proven_just_before_a_stop_counts_as_settled(tmp_path, capsys):
    """The issue's case: a solve stopped right after the search that proved a root move
    resumed saying "0 root moves settled" (the move was saved as the current one, with equal
    bounds). Every stop now saves every proven move as settled, and ``boxfish solve`` says
    so when it resumes."""
    from boxfish.engine import solve_cli

    ckpt = tmp_path / "2x2.ckpt"
    for _ in range(200):
        p = _stopped_after_each_search(2, 2, ckpt).run()
        if p.settled or p.done:
            break
        lo, hi = p.current_bounds
        assert lo < hi, p  # the move searched is not proven yet
    assert not p.done and len(p.settled) == 1, p
    assert p.current is None or p.current_bounds[0] < p.current_bounds[1], p
    header = json.loads(ckpt.read_bytes().split(b"\n", 1)[0])
    assert len(header["settled"]) == 1, header
    capsys.readouterr()
    assert solve_cli.main(["2", "2", "--checkpoint", str(ckpt), "--progress", "0",
                           "--threads", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert f"resumed from {ckpt} (1 root moves settled)" in err, err
    assert json.loads(out)["value"] == reference_value(2, 2, 0)


def test_a_checkpoint_saved_right_after_a_proof_resumes_with_that_move_settled(tmp_path):
    """A checkpoint of the earlier version (a proven move saved as the current one) loads
    with that move settled."""
    ckpt = tmp_path / "old.ckpt"
    solve = _stopped_after_each_search(2, 2, ckpt)
    solve.run()
    first = solve.order[0]
    header = json.loads(ckpt.read_bytes().split(b"\n", 1)[0])
    value = reference_move_values(2, 2, 0)[first]
    header.update(settled=[], current=first, current_bounds=[value, value])
    entries = ckpt.read_bytes().split(b"\n", 1)[1]
    ckpt.write_bytes(json.dumps(header).encode() + b"\n" + entries)
    resumed = Solve(2, 2, 0, checkpoint=str(ckpt), threads=1)
    assert resumed.resumed and list(resumed.settled) == [first]
    assert resumed.current_line is None
    assert resumed.run().value == reference_value(2, 2, 0)
