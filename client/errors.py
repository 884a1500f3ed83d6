"""The errors of :mod:`boxfish.client`, typed from the server's RFC 9457 problem bodies.

Every answer of the API that is an error is ``application/problem+json`` with ``type``
(``urn:boxfish:problem:<name>``, or ``about:blank`` for plain HTTP errors), ``title``,
``status``, ``detail`` and extension members (``reason``, ``current_serial``, ``errors``,
...). :func:`error_from_response` turns one into the matching subclass of
:class:`BoxfishError`; the whole body stays reachable as ``.problem``.
"""

from __future__ import annotations

import email.utils
import time

PROBLEM_BASE = "urn:boxfish:problem:"


class BoxfishError(Exception):
    """An error answer of the API (or, with ``status`` None, no answer at all).

    ``status`` is the HTTP status, ``problem`` the problem+json body as a dict (empty if the
    server sent none), ``type``/``title``/``detail``/``reason`` its members (``reason`` None
    when absent)."""

    def __init__(self, status: int | None, problem: dict | None = None,
                 message: str | None = None) -> None:
        self.status = status
        self.problem = dict(problem or {})
        self.type: str = self.problem.get("type", "about:blank")
        self.title: str = self.problem.get("title", "")
        self.detail: str = self.problem.get("detail", "") or message or self.title
        self.reason: str | None = self.problem.get("reason")
        super().__init__(message or f"{status} {self.slug or self.title}: {self.detail}")

    @property
    def slug(self) -> str:
        """The problem type's name (``illegal-move``, ...), empty for ``about:blank``."""
        return self.type[len(PROBLEM_BASE):] if self.type.startswith(PROBLEM_BASE) else ""


class IllegalMove(BoxfishError):
    """422 ``illegal-move``: the engine refused the move; ``reason`` says why
    (``already_drawn``, ``out_of_range``, ``occupied``, ``game_over``, ``malformed``, ...)."""


class InvalidRequest(BoxfishError):
    """422 other than an illegal move (``reason`` ``invalid_request``, ``limit_exceeded``,
    ``idempotency_key_reused``, ...; ``errors`` in ``problem`` for validation errors)."""


class InvalidRecord(InvalidRequest):
    """422 ``invalid-record``: an imported record refused (nothing was created); ``reason``
    says why (``syntax``, ``truncated``, ``header``, ``notation``, ``illegal_move``, ``turn``,
    ``result``, ``too_large``), ``move_number`` at which move (None: at none), ``line`` the
    record's line and ``move_reason`` the engine's reason for an illegal move (None when the
    server named none)."""

    def __init__(self, status, problem=None, message=None) -> None:
        super().__init__(status, problem, message)
        self.move_number: int | None = self.problem.get("move_number")
        self.line: int | None = self.problem.get("line")
        self.move_reason: str | None = self.problem.get("move_reason")


class SerialConflict(BoxfishError):
    """409: the move's ``serial`` is not the game's current serial + 1; ``current_serial`` is
    the game's serial now. In a game against the engine, a move posted while the engine is
    to move is one too, with ``reason`` ``engine_seat`` (wait for the engine's move)."""

    def __init__(self, status, problem=None, message=None) -> None:
        super().__init__(status, problem, message)
        self.current_serial: int | None = self.problem.get("current_serial")


class NotFound(BoxfishError):
    """404: no such game or analysis (or no move index for this game)."""


class Unauthorized(BoxfishError):
    """401: the write token is missing or not a Bearer token."""


class Forbidden(BoxfishError):
    """403: the write token belongs to another game."""


class Busy(BoxfishError):
    """503 (the store is unavailable, the analysis queue full, too many event streams, a move
    not yet replicated) or 429 (rate limited), still so after the client's retries.
    ``retry_after``: the seconds the server asked to wait (None if it named none)."""

    def __init__(self, status, problem=None, message=None,
                 retry_after: float | None = None) -> None:
        super().__init__(status, problem, message)
        self.retry_after = retry_after


class ConnectionFailed(BoxfishError):
    """No answer: the connection failed (refused, dropped, timed out) on every attempt. The
    last transport error is the ``__cause__``; ``status`` is None."""


class AnalysisFailed(BoxfishError):
    """The analysis job failed on the server; ``detail`` is its ``error`` (e.g. its worker
    died). ``status`` is the HTTP status of the answer that reported it (200)."""


class NothingToReview(BoxfishError):
    """409 ``nothing-to-review``: a review of a game that has no moves yet."""


class ReviewFailed(BoxfishError):
    """The review job failed on the server; ``detail`` is its ``error``."""


class WebhookVerificationError(Exception):
    """A webhook delivery whose signature, or timestamp, does not verify."""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header's delay in seconds (delta-seconds or an HTTP date), None
    if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_response(status: int, body: object, headers) -> BoxfishError:
    """The typed error for an error answer: ``body`` is its parsed JSON (or anything else
    when it was not JSON), ``headers`` its headers (for ``Retry-After``)."""
    problem = body if isinstance(body, dict) else {}
    slug = BoxfishError(status, problem).slug
    if status in (429, 503):
        return Busy(status, problem, retry_after=retry_after_seconds(headers.get("Retry-After")))
    if status == 422:
        cls = {"illegal-move": IllegalMove, "invalid-record": InvalidRecord}.get(slug,
                                                                              InvalidRequest)
        return cls(status, problem)
    if status == 409 and slug == "nothing-to-review":
        return NothingToReview(status, problem)
    if status == 409 and slug == "review-failed":
        return ReviewFailed(status, problem)
    if status == 409 and slug in ("review-not-finished", "review-of-another-history"):
        return BoxfishError(status, problem)  # a picture's review: not a move's serial
    cls = {409: SerialConflict, 404: NotFound, 401: Unauthorized, 403: Forbidden}.get(status,
                                                                                   BoxfishError)
    return cls(status, problem)
