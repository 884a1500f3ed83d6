"""The HTTP layer: the only code of the service that speaks HTTP (Flask, Werkzeug, gunicorn).

The app factory (:mod:`.app`), the blueprints (:mod:`.views`), request bodies and their
pydantic models, RFC 9457 problems and the answer to each domain error (:mod:`.errors`),
metrics, the rate-limiting hook, security headers, server-sent events, the gunicorn worker and
its settings, the WSGI entry point, the pages' templates and static files. It calls the
application services and speaks no Redis itself.
"""
