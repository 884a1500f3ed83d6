"""Prometheus metrics, one registry per app (so tests can build many apps).

``http_requests_total`` / ``http_request_duration_seconds`` by endpoint (the URL rule, not the
raw path) and status; ``boxfish_move_appends_total`` and ``boxfish_analysis_requests_total`` by
outcome; ``boxfish_analysis_queue_length``, ``boxfish_state_cache_entries`` and the store of exact
values' ``boxfish_exact_store_*`` (entries, bytes, hits, misses, writes, evictions) read at
scrape time.

With several gunicorn processes (``boxfish serve --http-workers N`` sets
``PROMETHEUS_MULTIPROC_DIR``), prometheus-client's multiprocess mode keeps the counters in
shared files and a scrape sums every process; otherwise each app has its own registry.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from flask import Flask, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily


class _ScrapeGauges:
    def __init__(self, read: Callable[[], dict[str, float]]) -> None:
        self.read = read

    def collect(self):
        try:
            values = self.read()
        except Exception:  # a scrape must not fail because Redis is down
            values = {}
        for name, (doc, value) in values.items():
            yield GaugeMetricFamily(name, doc, value=value)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._route_labels: dict[str, str] = {}
        self.requests = Counter("http_requests_total", "HTTP requests",
                                ["method", "endpoint", "status"], registry=self.registry)
        self.latency = Histogram("http_request_duration_seconds", "HTTP request latency",
                                 ["method", "endpoint"], registry=self.registry,
                                 buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1,
                                          2.5, 5, 10))
        self.appends = Counter("boxfish_move_appends_total", "Move appends by outcome",
                               ["outcome"], registry=self.registry)
        self.analyses = Counter("boxfish_analysis_requests_total",
                                "Analysis requests by outcome (new, joined, store, rejected)",
                                ["outcome"], registry=self.registry)
        self.reviews = Counter("boxfish_review_requests_total",
                               "Review requests by outcome (new, joined, rejected)",
                               ["outcome"], registry=self.registry)

    def add_scrape_gauges(self, read: Callable[[], dict]) -> None:
        """``read()`` returns ``{name: (doc, value)}``, called at each scrape."""
        self._gauges = _ScrapeGauges(read)
        self.registry.register(self._gauges)

    def render(self) -> bytes:
        """The text exposition of every metric (of all processes in multiprocess mode)."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            if getattr(self, "_gauges", None) is not None:
                registry.register(self._gauges)
            return generate_latest(registry)
        return generate_latest(self.registry)

    def route_label(self, rule: str) -> str:
        """The ``endpoint`` label of a URL rule: its template without converter names
        (``/v1/games/<game_id:game_id>`` is ``/v1/games/<game_id>``, as every other route
        names a game); one per rule, kept for the app's life."""
        label = self._route_labels.get(rule)
        if label is None:
            label = self._route_labels[rule] = re.sub(r"<(?:[^<>:]+:)?([^<>:]+)>", r"<\1>",
                                                      rule)
        return label

    def init_app(self, app: Flask) -> None:
        @app.before_request
        def _start():
            g.metrics_start = time.perf_counter()

        @app.after_request
        def _record(response):
            endpoint = (self.route_label(request.url_rule.rule) if request.url_rule is not None
                        else "unmatched")
            self.requests.labels(request.method, endpoint, str(response.status_code)).inc()
            start = g.get("metrics_start")
            if start is not None:
                self.latency.labels(request.method, endpoint).observe(
                    time.perf_counter() - start)
            return response
