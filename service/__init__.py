"""Boxfish service: the HTTP API, the event-sourced move store and the job queue, one folder a
layer. Each folder, and what of the service it may import:

* ``runtime/``: processes, the outermost layer (the ``boxfish`` command, the supervisor, the
  embedded Redis): anything.
* ``http/``: the only code that speaks HTTP (imports Flask, Werkzeug, gunicorn): the app
  factory (:func:`service.http.app.create_app`), views, bodies, models, problems: application,
  store, pictures.
* ``application/``: games, analyses, engine seats, webhooks, the wiring of them: store.
* ``store/``: the event log (the recorders, events, keys), the Redis connections: nothing.
* ``pictures/``: board rendering (no Flask, no Redis): nothing.
* ``config.py`` (settings) and ``errors.py`` (the domain errors), shared by every layer:
  nothing, and no Flask or Redis.

No folder speaks both HTTP and Redis (imports redis or rq): ``http/`` answers the domain errors
with problems (:mod:`service.http.errors`) and reaches Redis only through the layers below.
The workers (``boxfish.workers``) import application and store, never ``http``; the engine
imports nothing of the service, the workers or the client. ``tests/test_layers.py`` checks it.
"""
