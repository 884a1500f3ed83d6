"""Boxfish service: the HTTP API, the event-sourced move store and the job queue, one folder a
layer. Each folder, and what of the service it may import:

* ``runtime/``: processes, the outermost layer (the ``boxfish`` command, the supervisor, the
  embedded Redis): anything.
* ``http/``: the only code that speaks HTTP (imports Flask, Werkzeug, gunicorn): the app
  factory (:func:`service.http.app.create_app`), views, bodies, models, problems, metrics, rate
  limiting, security headers, SSE, gunicorn: application, store, pictures.
* ``application/``: games, analyses, engine seats, webhooks, the wiring of them: store.
* ``store/``: the event log (the recorders, events, keys), the Redis connections, the rate
  limits' counters: nothing.
* ``pictures/``: board rendering: nothing.
* ``config.py`` (settings) and ``errors.py`` (the domain errors), shared by every layer:
  nothing.

No folder speaks both HTTP and Redis (imports redis or rq): ``http/`` answers the domain
errors with problems (:mod:`service.http.errors`) and reaches Redis only through the layers
below; ``pictures/``, ``config.py`` and ``errors.py`` speak neither. The workers
(``boxfish.workers``) never import ``http``; the engine imports nothing of the service, the
workers or the client. ``tests/test_layers.py`` checks every rule here.
"""
