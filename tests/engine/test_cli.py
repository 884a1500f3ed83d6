"""``boxfish analyse``: engine.cli.main."""

from __future__ import annotations

import json

from boxfish.engine.cli import main


def test_json_output(capsys):
    # --time 0: no limit, solve exactly (the exact value then owes nothing to the clock)
    assert main(["--size", "2x2", "--moves", "1,1,1 2,1,2", "--time", "0", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["exact"] is True and d["best_move"] is not None
    assert len(d["moves"]) == 10


def test_human_output_with_lines(capsys):
    lines = "1" + "0" * 11
    assert main(["--size", "2x2", "--lines", lines, "--to-move", "1", "--time", "0"]) == 0
    out = capsys.readouterr().out
    assert "best move" in out and "(exact)" in out and "moves:" in out and "+---" in out


def test_illegal_move_is_an_error(capsys):
    assert main(["--size", "2x2", "--moves", "1,1,1 1,1,1"]) == 2
    assert "already_drawn" in capsys.readouterr().err


def test_bad_size(capsys):
    assert main(["--size", "five", "--moves", ""]) == 2
