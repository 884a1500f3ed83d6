"""The feed of every game, for operators (``GET /v1/feed``): a page of NDJSON, or a live SSE
stream (``Accept: text/event-stream``). See :mod:`service.application.feed_reader`."""

from __future__ import annotations

import json
import logging

from flask import Blueprint, Response, request, stream_with_context

from ...application import feed_reader
from ...errors import FeedPositionInvalid
from ...store.feed import FeedPosition
from ..problems import Problem, invalid_field
from ..sse import KEEPALIVE, sse
from . import ctx, operator_token_required, query_int

log = logging.getLogger(__name__)

bp = Blueprint("feed", __name__)

#: The most items of one NDJSON page.
MAX_FEED_PAGE = 10_000
NDJSON = "application/x-ndjson"


def _position() -> FeedPosition:
    # Last-Event-ID (an SSE client resuming) wins over ?after=.
    raw = request.headers.get("Last-Event-ID") or request.args.get("after", "")
    try:
        return FeedPosition.parse(raw.strip())
    except FeedPositionInvalid as exc:
        raise invalid_field(f"the feed position must be '<partition>:<serial>.<head>' items "
                            f"joined by commas, as an item's position gives it: {exc.reason}",
                            ["query", "after"], exc.reason, "invalid_feed_position") from None


def _partitions() -> list[int] | None:
    raw = request.args.get("partitions")
    if raw is None:
        return None
    try:
        return feed_reader.check_partitions(int(p) for p in raw.split(",") if p.strip())
    except ValueError as exc:
        raise invalid_field(f"query parameter 'partitions' must be partition numbers joined by "
                            f"commas: {exc}", ["query", "partitions"], str(exc),
                            "invalid_partitions") from None


@bp.get("/v1/feed")
@operator_token_required
def read_feed():
    services = ctx()
    position, partitions = _position(), _partitions()
    limit = query_int("limit", 1000, minimum=1, maximum=MAX_FEED_PAGE)
    if request.accept_mimetypes.best_match([NDJSON, "text/event-stream"]) == "text/event-stream":
        return _stream(services, position, partitions, limit)
    items = feed_reader.read_feed(services.recorder, position, partitions, limit)
    end = items[-1].position if items else position
    body = "".join(json.dumps(item.to_dict(), separators=(",", ":")) + "\n" for item in items)
    return Response(body, mimetype=NDJSON, headers={"Feed-Position": str(end)})


def _stream(services, position: FeedPosition, partitions, limit: int) -> Response:
    if not services.sse_slots.acquire(blocking=False):
        raise Problem(503, "too-many-streams", "Too many event streams",
                      "this server holds its maximum of open event streams; retry later",
                      headers={"Retry-After": "5"})

    def events():
        yield KEEPALIVE  # the response starts at once
        try:
            for items in feed_reader.follow(services.recorder, position, partitions,
                                            services.settings.sse_keepalive_s, limit):
                if not items:
                    yield KEEPALIVE
                for item in items:
                    data = item.to_dict()
                    yield sse(data.pop("kind"), data, str(item.position))
        except Exception:  # the response has started: end it; the reader resumes
            log.warning("the feed's stream ended by an error", exc_info=True)

    response = Response(stream_with_context(events()), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(services.sse_slots.release)
    return response
