"""Boxfish service: the event-sourced move store, the HTTP API and the analysis job queue.

Layers, from the edge inwards: ``views`` (Flask blueprints, thin) -> ``games`` / ``analysis_queue``
(application services) -> ``recorder`` (the event store: in-memory or Redis) and RQ.
Only the views and :mod:`service.errors` speak HTTP: the layers below raise the domain
errors defined in :mod:`service.errors`, which answers each with its problem.
The engine never imports anything from here. The app factory is
:func:`service.app.create_app`.
"""
