"""Security headers on every answer of the app, and request paths with an encoded slash refused.

:data:`SECURITY_HEADERS` are added by a WSGI middleware around the whole app
(:class:`SecurityHeaders`), so no answer the app gives goes without them: JSON, problems (500s
included), event streams, ``/metrics``, ``/openapi.yaml``, 304s and redirects. A response
that sets one of them itself keeps its own value. The API serves nothing to be framed, and
no HTML but the pages (:mod:`service.http.views.pages`), which set a policy of their own, so the
default Content-Security-Policy allows nothing. (gunicorn's own answers to requests it
refuses before the app runs are not the app's; see :mod:`service.http.gunicorn_conf`.)

A request whose path has a percent-encoded slash (``%2F``) is a 404 problem: WSGI servers
decode it in ``PATH_INFO``, so ``/v1/games/{id}%2Fmoves`` would otherwise reach the route of
``/v1/games/{id}/moves``. No id contains a slash, so such a path never names a resource. The
undecoded path is ``environ["RAW_URI"]`` (gunicorn, Werkzeug) or ``environ["REQUEST_URI"]``
(Werkzeug's development server, most other servers).
"""

from __future__ import annotations

from flask import Flask, request

from ..errors import NotFound

SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
    ("Referrer-Policy", "no-referrer"),
)


class SecurityHeaders:
    """WSGI middleware: :data:`SECURITY_HEADERS` on every response of ``wsgi_app``."""

    def __init__(self, wsgi_app) -> None:
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        def start(status, headers, exc_info=None):
            present = {name.lower() for name, _ in headers}
            headers = list(headers) + [(name, value) for name, value in SECURITY_HEADERS
                                       if name.lower() not in present]
            return start_response(status, headers, exc_info)

        return self.wsgi_app(environ, start)


def raw_path(environ) -> str | None:
    """The request target's path as the client sent it (not decoded), if the server says."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        return None
    return raw.split("?", 1)[0]


def init_app(app: Flask) -> None:
    """Refuse encoded slashes (before any other hook or view runs) and wrap ``app.wsgi_app`` in
    :class:`SecurityHeaders`. Call it last in the app factory, so the headers also go on
    answers of middleware installed before."""

    def _no_encoded_slash():
        path = raw_path(request.environ)
        if path is not None and "%2f" in path.lower():
            raise NotFound("no such resource: the path has an encoded slash (%2F)")

    # First of all hooks: such a request is nothing, not even a request to count or to look
    # a game up for (the rate limiter's hook would do both).
    app.before_request_funcs.setdefault(None, []).insert(0, _no_encoded_slash)

    app.wsgi_app = SecurityHeaders(app.wsgi_app)
