"""One answer, one scale through the path bot authors take (issue 38): the Python client
against a real ``boxfish serve``. Timed analyses of 5x5 positions where no proof fits list
every move on one scale: the best move first with the highest value, every estimate from the
answer's one iteration (its ``depth``), every proven bound within reach of the value."""

from __future__ import annotations

import random

from boxfish.client import Client
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search.board import tables
from tests.service.test_timed_analyses_served import served  # noqa: F401 (the fixture)

T = tables(5, 5)
#: the issue's opening (a 1 s answer led with -3 over 55 moves at +3) and its position of 46
#: undrawn lines (45 of 46 other moves listed above the best)
OPENING = [(2, 2, 1), (3, 1, 2), (3, 1, 1), (4, 6, 1)]
UNDRAWN_46 = "010010000100000000000010000100100100011001000011110000000000"


def _lines(drawn: int) -> str:
    return "".join("1" if drawn >> i & 1 else "0" for i in range(T.nl))


def _positions() -> list[dict]:
    base = {"game": "dots-and-boxes", "width": 5, "height": 5}
    out = [{**base, "moves": [list(m) for m in OPENING]},
           {**base, "lines": UNDRAWN_46, "to_move": 0}]
    rng = random.Random(3838)
    for i in range(4):
        undrawn = rng.randint(44, 54)
        p = (safe_play(rng, 5, 5, undrawn) if i % 2 == 0
             else biased_play(rng, 5, 5, undrawn, 0.85))
        out.append({**base, "lines": _lines(p.drawn), "to_move": p.to_move})
    return out


def test_served_answers_list_every_move_on_one_scale(served):  # noqa: F811
    with Client(served) as client:
        for position in _positions():
            for time_ms in (200, 1000):
                a = client.analyse(position=position, time_ms=time_ms, wait=10, timeout=120)
                moves = a.moves
                legal = (T.nl - len(position["moves"]) if "moves" in position
                         else position["lines"].count("0"))
                assert len(moves) == legal
                assert list(a.best_move) == moves[0]["move"]
                assert a.value == moves[0]["value"]
                assert all(m["value"] <= moves[0]["value"] for m in moves), (position, [
                    (m["move"], m["value"], m["bound"]) for m in moves])
                estimates = {m["depth"] for m in moves if m["bound"] == "estimate"}
                assert len(estimates) <= 1, estimates
                if not a.exact:  # an exact answer's depth is the lines left
                    assert estimates <= {a.depth}, (estimates, a.depth)
                for m in moves:
                    assert (m["depth"] is None) == (m["bound"] != "estimate")
                    assert m["lower"] is None or m["lower"] <= m["value"]
                    assert m["upper"] is None or m["value"] <= m["upper"]
