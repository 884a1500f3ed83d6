"""The webhook delivery job, and the RQ callbacks of analysis jobs that announce their end.

:func:`deliver` makes one attempt of one message (an RQ job on the webhook queue, run by
``boxfish worker --webhooks``, whose RQ scheduler runs the retries): it checks the URL again
(:func:`service.application.webhook_urls.check_url`: what a name resolves to can change),
POSTs the signed body without following redirects, records the attempt in the deliveries log
of the webhook or of the analysis's callbacks, and:

* 2xx: ``delivered``;
* 410: ``disabled``: the webhook is marked inactive and gets no more deliveries (a callback:
  ``failed``);
* 429, 5xx, a network error or a timeout: ``retrying``, with the next attempt scheduled after
  an exponential backoff with full jitter, or the receiver's ``Retry-After`` if longer (both
  capped); ``failed`` when it was the last of ``webhook_max_attempts``;
* anything else (a 3xx, another 4xx, a URL refused): ``failed``, not retried.

State between jobs (the settings, the HTTP client's connection pool, and the games' webhook
registrations in the move store) belongs to a :class:`Deliverer`, one per worker process, made
on first use by :func:`process_deliverer`.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import time
import traceback
from email.utils import parsedate_to_datetime

import httpx

from boxfish.service.application.analyses import error_text
from boxfish.service.application.webhook_urls import UrlRefused, check_url
from boxfish.service.application.webhooks import (
    Webhooks,
    analysis_event,
    review_event,
    signed_headers,
)
from boxfish.service.config import Settings
from boxfish.service.store import connections
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.webhook_registrations import (
    RedisWebhookRegistrations,
    WebhookRegistrations,
)

log = logging.getLogger(__name__)

USER_AGENT = "boxfish-webhooks/1"


def retry_delay(attempt: int, base_s: float, cap_s: float, retry_after_s: float | None,
                rand=random.random) -> float:
    """Seconds before attempt ``attempt + 1``: a random time up to ``base_s`` *
    2^(attempt-1) (full jitter), or ``retry_after_s`` if longer, at most ``cap_s``."""
    backoff = rand() * min(cap_s, base_s * 2 ** (attempt - 1))
    if retry_after_s is not None:
        backoff = max(backoff, retry_after_s)
    return min(backoff, cap_s)


def parse_retry_after(value: str | None, now_s: float) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta seconds or an HTTP date), None for
    none or a malformed one."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now_s)
    except (TypeError, ValueError):
        return None


class Deliverer:
    """Makes delivery attempts with ``settings`` (timeouts, attempts, backoff, whether private
    addresses may be called) and one HTTP client (redirects are not followed).
    ``registrations``: the games' webhook registrations (default: those on ``settings``' move
    store, made on first need; analysis callbacks need none)."""

    def __init__(self, settings: Settings, rand=random.random,
                 registrations: WebhookRegistrations | None = None) -> None:
        self.settings = settings
        self.keys = KeySpace(settings.key_prefix)
        self.rand = rand
        self._registrations = registrations
        self.client = httpx.Client(follow_redirects=False,
                                   timeout=httpx.Timeout(settings.webhook_timeout_s),
                                   headers={"user-agent": USER_AGENT})

    def registrations(self) -> WebhookRegistrations:
        """The games' webhook registrations (made on first call; raises the store's errors
        and ``ConfigurationError`` then, the job failing and its retry trying again)."""
        if self._registrations is None:
            settings = self.settings
            store = connections.store_connection(
                settings, connections.store_is_cluster(settings))
            self._registrations = RedisWebhookRegistrations(store, self.keys)
        return self._registrations

    def deliver(self, connection, target: dict, message_id: str, body: str,
                attempt: int) -> str:
        """One attempt (see the module docstring); returns its outcome (``cancelled`` when
        the target is gone: nothing is sent or recorded)."""
        settings = self.settings
        webhooks = Webhooks.from_settings(connection, settings, self.keys,
                                          self.registrations() if "webhook" in target
                                          else None)
        destination = webhooks.destination(target)
        if destination is None:
            return "cancelled"
        url, secret = destination
        started = time.time()
        status_code = None
        error = None
        retry_after = None
        try:
            check_url(url, settings.webhook_allow_private)
            headers = signed_headers(secret, message_id, body, started)
            with self.client.stream("POST", url, content=body.encode(),
                                    headers=headers) as response:
                status_code = response.status_code
                retry_after = parse_retry_after(response.headers.get("retry-after"),
                                                time.time())
            if 200 <= status_code < 300:
                outcome = "delivered"
            elif status_code == 410 and "webhook" in target:
                outcome = "disabled"
            elif status_code == 429 or status_code >= 500:
                outcome = "retrying"
            else:
                outcome = "failed"
                error = ("redirects are not followed" if 300 <= status_code < 400
                         else "the receiver refused the message")
        except UrlRefused as exc:
            outcome, error = "failed", f"{exc.reason}: {exc}"
        except httpx.TimeoutException as exc:
            outcome, error = "retrying", f"timeout: {type(exc).__name__}"
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            outcome, error = "retrying", f"{type(exc).__name__}: {exc}"
        ended = time.time()
        next_at = None
        if outcome == "retrying":
            if attempt >= settings.webhook_max_attempts:
                outcome = "failed"
                error = error or f"no success in {attempt} attempts"
            else:
                next_at = ended + retry_delay(attempt, settings.webhook_backoff_s,
                                              settings.webhook_max_backoff_s, retry_after,
                                              self.rand)
        if outcome == "disabled":
            webhooks.disable(target["game"], target["webhook"],
                             f"the receiver answered 410 Gone to {message_id}")
        self._record(webhooks, target, message_id, body, attempt, outcome, status_code,
                     error, started, ended, next_at)
        if next_at is not None:
            webhooks.enqueue_attempt(target, message_id, body, attempt + 1, at_s=next_at)
        return outcome

    @staticmethod
    def _record(webhooks: Webhooks, target: dict, message_id: str, body: str, attempt: int,
                outcome: str, status_code: int | None, error: str | None, started: float,
                ended: float, next_at: float | None) -> None:
        from boxfish.service.application.webhooks import iso_time

        event = json.loads(body)
        record = {"message_id": message_id, "type": event.get("type"),
                  "serial": event.get("data", {}).get("serial"), "attempt": attempt,
                  "outcome": outcome, "status_code": status_code, "error": error,
                  "at": iso_time(started * 1000), "duration_ms": round((ended - started) * 1000),
                  "next_attempt_at": iso_time(next_at * 1000) if next_at is not None else None}
        if "webhook" in target:
            webhooks.record(target["webhook"], record)
        else:
            webhooks.record_callback(target["analysis"], {**record, "callback": target["index"]})
        log.info("webhook delivery %s", json.dumps(record))


@functools.cache
def process_deliverer() -> Deliverer:
    """This process's deliverer, made on first use from ``Settings()`` (the environment) and
    kept for the life of the process; ``process_deliverer.cache_clear()`` drops it."""
    return Deliverer(Settings())


def deliver(target: dict, message_id: str, body: str, attempt: int = 1) -> str:
    """The RQ job: one attempt of one message (see :meth:`Deliverer.deliver`)."""
    from rq import get_current_job

    return process_deliverer().deliver(get_current_job().connection, target, message_id,
                                       body, attempt)


# -- the RQ callbacks of analysis jobs ----------------------------------------------------


def _analysis_view(job, status: str, result=None, error: str | None = None) -> dict:
    """The job as GET /v1/analyses/{id} shows it once ended."""
    view = {"id": job.id, "status": status, "progress": job.meta.get("progress"),
            "result": result, "error": error}
    if job.args:
        view["request"] = job.args[0]
    return view


def _announce(job, connection, view: dict) -> None:
    try:
        Webhooks.from_job_meta(connection, job.meta["callbacks"]).analysis_ended(
            job.id, analysis_event(view))
    except Exception:  # RQ would count a raising callback as the job failing
        log.exception("analysis %s: its callbacks could not be enqueued", job.id)


def analysis_succeeded(job, connection, result, *args, **kwargs) -> None:
    """``on_success`` of an analysis job: ``analysis.finished`` to its callbacks."""
    _announce(job, connection, _analysis_view(job, "finished", result=result))


def analysis_failed(job, connection, exc_type, exc_value, tb, *args, **kwargs) -> None:
    """``on_failure`` of an analysis job (also run by RQ for a job whose worker died):
    ``analysis.failed`` to its callbacks."""
    text = "".join(traceback.format_exception(exc_type, exc_value, tb)) if exc_type else ""
    _announce(job, connection, _analysis_view(job, "failed", error=error_text(text)))


# -- the RQ callback of review jobs -----------------------------------------------------------


def review_succeeded(job, connection, result, *args, **kwargs) -> None:
    """``on_success`` of a review job: ``review.finished`` to the game's webhooks that ask for
    it (their registrations are in the move store: this process's deliverer's)."""
    from boxfish.service.application.reviews import ReviewService

    try:
        request = ReviewService.request_of(job)
        if request is None:
            return
        view = {"id": job.id, "game_id": request.game_id, "position": request.position,
                "time_ms": request.time_ms, "players": (result or {}).get("players")}
        hooks = Webhooks.from_job_meta(connection, job.meta["callbacks"])
        hooks.registrations = process_deliverer().registrations()
        hooks.announce_review(request.game_id, job.id, review_event(view))
    except Exception:  # RQ would count a raising callback as the job failing
        log.exception("review %s: its webhooks could not be enqueued", job.id)
