"""The review job (``workers/review_job.py``) in process: it searches the positions from the
last back to the first, all with one search cache, and reports its progress."""

from __future__ import annotations

import boxfish.workers.review_job as rj
from boxfish import engine
from boxfish.service.application.reviews import ReviewRequest


def test_positions_are_searched_from_the_last_back_with_one_cache(monkeypatch):
    game = engine.load_game("dots-and-boxes", width=2, height=2)
    moves = [[1, 1, 1], [1, 2, 1], [1, 3, 1], [1, 1, 2], [2, 1, 2]]
    seen, progress = [], []
    analyse = engine.analyse

    def recording(state, **kwargs):
        seen.append((state.serial, kwargs["cache"]))
        return analyse(state, **kwargs)

    monkeypatch.setattr(rj.engine, "analyse", recording)
    request = ReviewRequest(game_id="g", game=game.name, params=game.params(),
                            position="5.0123456789abcdef", moves=moves, time_ms=200)
    out = rj.review(request, on_progress=lambda done, total: progress.append((done, total)))
    assert [serial for serial, _ in seen] == [5, 4, 3, 2, 1, 0]  # the game goes on after 5
    assert len({id(cache) for _, cache in seen}) == 1 and seen[0][1] is not None
    assert progress == [(k, 6) for k in range(7)]
    assert [m["serial"] for m in out["moves"]] == [1, 2, 3, 4, 5]
