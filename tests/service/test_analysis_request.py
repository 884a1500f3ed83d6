"""The analysis request (``service/analysis_request.py``): its canonical form, its digest (the
job key), the state it describes, and that the API and the worker see the same value."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from boxfish import engine
from boxfish.service.application.analysis_request import AnalysisRequest
from boxfish.service.http.app import create_app

from .conftest import CheckedClient

DOTS = engine.load_game("dots-and-boxes", width=2, height=1)
MOVES = [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]
JSON_FORM = {"game": "dots-and-boxes", "params": {"width": 2, "height": 1}, "moves": MOVES,
             "lines": None, "to_move": None, "scores": None, "time_ms": 1000, "multipv": None}


def test_the_json_form_is_the_canonical_request_of_before():
    request = AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES)
    dumped = request.model_dump(mode="json")
    assert dumped == JSON_FORM and list(dumped) == list(JSON_FORM)  # same keys, same order
    # The digest is the SHA-256 of that JSON with sorted keys, as the job keys always were,
    # so jobs and results keyed before keep being found.
    text = json.dumps(JSON_FORM, sort_keys=True, separators=(",", ":"))
    assert request.digest() == hashlib.sha256(text.encode()).hexdigest()
    assert request.digest() == "fe814096451d5cbe1d87ea1fa68eaddfe9740fc8faae2ed6e09c01da5f48a42d"


def test_identical_requests_hash_the_same():
    built = AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES)
    same = [
        AnalysisRequest.model_validate(JSON_FORM),
        AnalysisRequest.model_validate(dict(reversed(list(JSON_FORM.items())))),
        AnalysisRequest.model_validate({k: v for k, v in JSON_FORM.items()
                                        if k not in ("lines", "to_move", "scores")}),
        AnalysisRequest.for_game(DOTS, time_ms=1000, moves=tuple(map(tuple, MOVES))),
        AnalysisRequest.model_validate(built),
    ]
    for other in same:
        assert other == built and other.digest() == built.digest() and hash(other) == hash(built)
    assert len({built, *same}) == 1
    different = [
        AnalysisRequest.for_game(DOTS, time_ms=1001, moves=MOVES),
        AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES, multipv=2),
        AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES[:3]),
        AnalysisRequest.for_game(engine.load_game("dots-and-boxes", width=1, height=2),
                                 time_ms=1000, moves=MOVES),
    ]
    assert len({built.digest(), *(r.digest() for r in different)}) == 1 + len(different)


def test_one_position_has_one_form():
    lines = AnalysisRequest.for_game(DOTS, time_ms=5, lines="1111000")
    assert (lines.moves, lines.to_move, lines.scores) == (None, 0, (0, 0))
    assert lines == AnalysisRequest.for_game(DOTS, time_ms=5, lines="1111000", to_move=0,
                                             scores=[0, 0])
    start = AnalysisRequest.for_game(DOTS, time_ms=5)
    assert (start.moves, start.lines) == ((), None)
    with pytest.raises(ValidationError, match="either moves or lines, not both"):
        AnalysisRequest.for_game(DOTS, time_ms=5, moves=[], lines="1111000")
    with pytest.raises(ValidationError, match="to_move and scores go with lines"):
        AnalysisRequest.for_game(DOTS, time_ms=5, moves=MOVES, scores=[1, 0])
    with pytest.raises(ValidationError):
        AnalysisRequest.model_validate({**JSON_FORM, "colour": 1})
    with pytest.raises(ValidationError):
        AnalysisRequest.model_validate({**JSON_FORM, "time_ms": 0})
    with pytest.raises(ValidationError):  # frozen
        start.time_ms = 10


def test_build_state_is_the_position_described():
    state = AnalysisRequest.for_game(DOTS, time_ms=5, moves=MOVES).build_state()
    want = DOTS.new_state()
    for m in MOVES:
        want.play(tuple(m))
    assert state.to_lines() == want.to_lines() and state.serial == 4
    from_lines = AnalysisRequest.for_game(DOTS, time_ms=5, lines=want.to_lines(),
                                          to_move=1).build_state()
    assert from_lines.to_lines() == want.to_lines()
    assert (from_lines.to_move, tuple(from_lines.scores)) == (1, (0, 0))
    with pytest.raises(ValueError, match="exceed"):  # scores reach the engine as given
        AnalysisRequest.for_game(DOTS, time_ms=5, lines=want.to_lines(),
                                 scores=[0, 1]).build_state()
    xttt = engine.load_game("extreme-tictactoe")
    assert AnalysisRequest.for_game(xttt, time_ms=5, moves=[[0, 0]]).build_state().serial == 1


def test_build_state_raises_the_engines_errors():
    with pytest.raises(engine.ReplayError):  # a ValueError
        AnalysisRequest.for_game(DOTS, time_ms=5, moves=[[1, 1, 1], [1, 1, 1]]).build_state()
    with pytest.raises(engine.IllegalMove):
        AnalysisRequest.for_game(DOTS, time_ms=5, moves=[[1, 1]]).build_state()
    with pytest.raises(ValueError):
        AnalysisRequest.for_game(DOTS, time_ms=5, lines="012").build_state()
    xttt = engine.load_game("extreme-tictactoe")
    with pytest.raises(ValueError, match="cannot be given as lines"):
        AnalysisRequest.for_game(xttt, time_ms=5, lines="0").build_state()


def test_the_api_and_the_worker_see_the_same_request(settings, redis_client, spec, new_game,
                                                      work_here, spy_runner):
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-same-request"})
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": MOVES,
            "time_ms": 777, "multipv": 2}
    submitted = client.post("/v1/analyses", json=body)
    assert submitted.status_code == 202
    expected = AnalysisRequest.for_game(DOTS, time_ms=777, multipv=2, moves=MOVES)
    assert AnalysisRequest.model_validate(submitted.json["request"]) == expected

    # The stored-game route builds the same request for the same position: it joins the job.
    gid, auth, _ = new_game(width=2, height=1)
    for m in MOVES:
        client.post(f"/v1/games/{gid}/moves", json={"move": m}, headers=auth)
    stored = client.post(f"/v1/games/{gid}/analyses", json={"time_ms": 777, "multipv": 2})
    assert stored.json["id"] == submitted.json["id"]
    assert stored.json["request"] == submitted.json["request"]

    work_here(own.queue_name)
    assert spy_runner.seen == [expected]
    done = client.get(f"/v1/analyses/{submitted.json['id']}").json
    assert done["status"] == "finished" and done["request"] == submitted.json["request"]


def test_a_request_without_core_keeps_its_json_form_and_digest():
    pinned = "fe814096451d5cbe1d87ea1fa68eaddfe9740fc8faae2ed6e09c01da5f48a42d"
    plain = AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES, core=None)
    assert plain.core is None and "core" not in plain.model_dump(mode="json")
    assert "core" not in json.loads(plain.model_dump_json())
    assert plain.digest() == pinned
    assert AnalysisRequest.model_validate({**JSON_FORM, "core": None}).digest() == pinned

    chosen = {core: AnalysisRequest.for_game(DOTS, time_ms=1000, moves=MOVES, core=core)
              for core in ("c", "python")}
    for core, request in chosen.items():
        dumped = request.model_dump(mode="json")
        assert dumped == {**JSON_FORM, "core": core} and list(dumped)[-1] == "core"
        text = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
        assert request.digest() == hashlib.sha256(text.encode()).hexdigest()
        assert AnalysisRequest.model_validate(dumped) == request  # the worker's read-back
        assert request != plain
    assert len({pinned, *(r.digest() for r in chosen.values())}) == 3
    for bad in ("rust", "C", 1):
        with pytest.raises(ValidationError):
            AnalysisRequest.model_validate({**JSON_FORM, "core": bad})


def test_core_problem_says_why_a_core_cannot_run():
    from boxfish.engine.dots.search import compiled
    from boxfish.service.application.analysis_request import core_problem

    xttt = engine.load_game("extreme-tictactoe")
    big = engine.load_game("dots-and-boxes", width=10, height=10)
    small = engine.load_game("dots-and-boxes", width=3, height=3)
    for game in (xttt, big, small, DOTS):
        assert core_problem(game, None) is None and core_problem(game, "python") is None
    assert "only the Python search" in core_problem(xttt, "c")
    if not compiled.available():
        assert core_problem(small, "c") == compiled.UNAVAILABLE_REASON
        pytest.skip("the compiled core is not built")
    assert core_problem(big, "c") == ("the compiled core takes boards of up to 128 lines; "
                                      "10x10 has 220")
    assert core_problem(small, "c") is None and core_problem(DOTS, "c") is None
    for w, h in ((7, 7), (8, 7), (12, 4), (1, 20)):  # 8x7: 127 lines
        assert core_problem(engine.load_game("dots-and-boxes", width=w, height=h), "c") is None
    assert "8x8 has 144" in core_problem(engine.load_game("dots-and-boxes", width=8, height=8),
                                         "c")
