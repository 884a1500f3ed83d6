"""Operations: liveness, readiness, Prometheus metrics, the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST

from ...application.operations import readiness
from ...errors import NotFound
from ..problems import Problem
from . import ctx

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
def healthz():
    """The process is up and serving (no dependency checked)."""
    return {"status": "ok"}


@bp.get("/readyz")
def readyz():
    """Ready for traffic: Redis answers PING and at least one analysis worker is alive. The
    webhook workers are counted too (``webhook_workers``), not required: without one the API
    still serves, and deliveries wait in their queue."""
    try:
        workers, webhook_workers = readiness(ctx())
    except Exception as exc:  # any store failure means not ready
        raise Problem(503, "not-ready", "Not ready", f"Redis is not reachable: {exc}",
                      headers={"Retry-After": "2"}, redis=False, workers=0) from None
    if workers < 1:
        raise Problem(503, "not-ready", "Not ready", "no analysis worker is alive",
                      headers={"Retry-After": "2"}, redis=True, workers=0)
    return {"status": "ready", "redis": True, "workers": workers,
            "webhook_workers": webhook_workers}


@bp.get("/metrics")
def metrics():
    return Response(ctx().metrics.render(), mimetype=CONTENT_TYPE_LATEST)


@bp.get("/openapi.yaml")
def openapi():
    path = current_app.config["BOXFISH_OPENAPI_PATH"]
    if path is None:
        raise NotFound("openapi.yaml is not installed here")
    with open(path, "rb") as f:
        return Response(f.read(), mimetype="application/yaml")
