"""The error type of the API: an RFC 9457 problem.

Views and services raise :class:`Problem`; :mod:`service.errors` turns it (and every other
exception) into an ``application/problem+json`` response.
"""

from __future__ import annotations

PROBLEM_BASE = "urn:boxfish:problem:"


class Problem(Exception):
    """An error response: ``status``, a short ``slug`` naming the problem type, a ``title``
    (the same for every occurrence of the type; an empty slug means ``about:blank``, for plain
    HTTP errors), a ``detail`` for this occurrence and extension
    members (``reason``, ``current_serial``, ``errors``, ...)."""

    def __init__(self, status: int, slug: str, title: str, detail: str = "",
                 headers: dict | None = None, **extensions) -> None:
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail or title
        self.headers = headers or {}
        self.extensions = extensions
        super().__init__(f"{status} {slug}: {self.detail}")

    @property
    def type(self) -> str:
        return PROBLEM_BASE + self.slug if self.slug else "about:blank"

    def to_dict(self) -> dict:
        return {"type": self.type, "title": self.title, "status": self.status,
                "detail": self.detail, **self.extensions}


def invalid(detail: str, errors: list | None = None, reason: str = "invalid_request") -> Problem:
    """A 422 for a request that is well-formed JSON but not acceptable."""
    ext = {"reason": reason}
    if errors is not None:
        ext["errors"] = errors
    return Problem(422, "invalid-request", "Invalid request", detail, **ext)
