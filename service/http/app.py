"""The Flask app factory: the service's parts (:func:`service.application.wiring.build`) with
the HTTP side's own (blueprints, error handlers, metrics, rate limits, security headers)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, fields
from pathlib import Path

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from ..application import wiring
from ..config import Settings
from ..store import connections
from ..store.recorder import Recorder
from . import security
from .errors import register_error_handlers
from .metrics import Metrics
from .ratelimit import RateLimiter


@dataclass
class Services(wiring.Backend):
    """Everything a view needs, built once per app (``app.extensions["boxfish"]``): the parts
    of :func:`service.application.wiring.build` and the HTTP side's own."""

    metrics: Metrics
    sse_slots: threading.BoundedSemaphore


def find_openapi() -> str | None:
    """openapi.yaml shipped in the package (a link to the repository root's copy in a source
    checkout), at the repository root, or in the working directory."""
    for candidate in (Path(__file__).resolve().parent / "openapi.yaml",
                      Path(__file__).resolve().parents[2] / "openapi.yaml",
                      Path(os.getcwd()) / "openapi.yaml"):
        if candidate.is_file():
            return str(candidate)
    return None


def create_app(settings: Settings | None = None,
               connection: connections.StoreConnection | None = None,
               recorder: Recorder | None = None,
               queue_connection: connections.QueueConnection | None = None) -> Flask:
    """Build the app on the parts of :func:`service.application.wiring.build` (which says what
    ``connection``, ``recorder`` and ``queue_connection`` default to). Raises
    :class:`~service.errors.ConfigurationError` when the service cannot start with these
    settings."""
    settings = settings or Settings()
    backend = wiring.build(settings, connection, recorder, queue_connection)
    metrics = Metrics()
    services = Services(**{f.name: getattr(backend, f.name) for f in fields(backend)},
                        metrics=metrics,
                        sse_slots=threading.BoundedSemaphore(settings.sse_max_streams))

    app = Flask(__name__)
    app.url_map.merge_slashes = False  # a doubled slash is a 404 problem, not an HTML redirect
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["BOXFISH_OPENAPI_PATH"] = find_openapi()
    app.json.sort_keys = False
    app.extensions["boxfish"] = services

    from .views import (
        GameIdConverter,
        analyses,
        explorer,
        feed,
        games,
        moves,
        ops,
        pages,
        pictures,
        positions,
        reviews,
    )
    from .views import webhooks as webhook_views
    app.url_map.converters["game_id"] = GameIdConverter
    for module in (games, moves, analyses, reviews, positions, explorer, pictures,
                   webhook_views, feed, ops, pages):
        app.register_blueprint(module.bp)
    register_error_handlers(app)
    metrics.init_app(app)
    RateLimiter(settings, backend.queue_redis).init_app(app)

    def gauges():
        return {"boxfish_analysis_queue_length": ("Analysis jobs waiting",
                                                  services.analyses.queue_length()),
                "boxfish_webhook_queue_length": ("Webhook deliveries waiting (retries "
                                                 "scheduled for later not counted)",
                                                 services.webhooks.queue.count),
                "boxfish_state_cache_entries": ("Game states in this process's cache",
                                                len(services.games.cache)),
                **exact_store_gauges()}

    def exact_store_gauges():
        if services.exact_values is None:
            return {}
        st = services.exact_values.store.stats()
        return {f"boxfish_exact_store_{name}": (doc, st[name]) for name, doc in (
            ("entries", "Exact values stored"),
            ("bytes", "Bytes the store of exact values takes in Redis"),
            ("hits", "Lookups that found an exact value"),
            ("misses", "Lookups that found none"),
            ("writes", "Exact values written"),
            ("evictions", "Exact values evicted to keep the budget"))}
    metrics.add_scrape_gauges(gauges)
    security.init_app(app)  # last: its headers go on every answer of what is installed before
    if settings.trusted_proxy_hops:
        # the client's address and scheme as the trusted proxies forwarded them (the Host is
        # kept: nothing builds absolute URLs, and a proxy that passes a client's
        # X-Forwarded-Host on would let it choose one)
        hops = settings.trusted_proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)
    return app
