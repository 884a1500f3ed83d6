"""Reviews: review a stored game (every move's loss, judgement and the players' accuracy) and
read the review (:class:`service.application.reviews.ReviewService`)."""

from __future__ import annotations

from flask import Blueprint

from ...errors import QueueFull
from ..models import ReviewFields
from . import check_id, ctx, json_body, time_ms_limit, wait_param

bp = Blueprint("reviews", __name__)


def _answer(job, wait: float) -> tuple[dict, str]:
    """The review's view after waiting up to ``wait`` seconds for it to end, and its status."""
    reviews = ctx().reviews
    status = reviews.wait(job, wait) if wait else reviews.status(job)
    return reviews.view(job, status), status


@bp.post("/v1/games/<game_id>/reviews")
def create_review(game_id: str):
    """202 with the new review (200 if it ended within ``?wait=``); 404 for no such game, 409
    ``nothing-to-review`` for a game without moves, 422 for a ``time_ms`` over the maximum."""
    services = ctx()
    meta = services.games.meta(check_id(game_id, "game"))
    data = ReviewFields.model_validate(json_body(optional=True))
    time_ms = time_ms_limit(data.time_ms, ["time_ms"])
    wait = wait_param()
    events = services.recorder.read(meta.game_id, after=0, upto=meta.serial)
    try:
        job, how = services.reviews.submit(meta.game_id, services.games.game_of(meta), events,
                                      time_ms)
    except QueueFull:
        services.metrics.reviews.labels("rejected").inc()
        raise
    services.metrics.reviews.labels(how).inc()
    view, status = _answer(job, wait)
    code = 200 if status in ("finished", "failed") else 202
    return view, code, {"Location": f"/v1/reviews/{job.id}"}


@bp.get("/v1/reviews/<review_id>")
def get_review(review_id: str):
    job = ctx().reviews.get(check_id(review_id, "review"))
    return _answer(job, wait_param())[0]
