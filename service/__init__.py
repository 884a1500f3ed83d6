"""Boxfish service: the event-sourced move store, the HTTP API and the analysis job queue.

Layers, from the edge inwards: ``views`` (Flask blueprints, thin) -> ``games`` / ``analyses``
(application services) -> ``recorder`` (the event store: in-memory or Redis) and RQ.
The engine never imports anything from here. The app factory is
:func:`service.app.create_app`.
"""
