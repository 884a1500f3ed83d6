"""The error type of the API: an RFC 9457 problem, and the builders of the usual ones.

Views (the HTTP edge) raise :class:`Problem`; the layers below them raise the domain errors of
:mod:`service.errors`, which :mod:`service.http.errors` maps to their problems in one table.
"""

from __future__ import annotations

PROBLEM_BASE = "urn:boxfish:problem:"
#: The media type of every problem.
PROBLEM_JSON = "application/problem+json"


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


def field_error(loc: list, msg: str, type_: str) -> dict:
    """One entry of a 422's ``errors``, in pydantic's shape: where (``loc``, the path of
    the field: ``["engine", "time_ms"]``, ``["query", "at"]``), what is wrong (``msg``), and
    the kind (``type_``: pydantic's names, ``less_than_equal``, ``int_parsing``, ...)."""
    return {"loc": loc, "msg": msg, "type": type_}


def invalid_field(detail: str, loc: list, msg: str, type_: str,
                  reason: str = "invalid_request") -> Problem:
    """A 422 about one field: :func:`invalid` with the one :func:`field_error`."""
    return invalid(detail, [field_error(loc, msg, type_)], reason)


def check_at_most(value: int, limit: int, loc: list, detail: str,
                  reason: str = "limit_exceeded") -> int:
    """``value`` if it is at most ``limit``; else the 422 (``detail``, ``reason``) whose one
    error at ``loc`` says ``at most <limit>`` (``less_than_equal``)."""
    if value > limit:
        raise invalid_field(detail, loc, f"at most {limit}", "less_than_equal", reason)
    return value
