"""Webhooks: a game's registrations, their deliveries log, and the events they are sent.

Deliveries follow `Standard Webhooks <https://www.standardwebhooks.com/>`_: the body is
``{"type", "timestamp", "data"}``; the headers are ``webhook-id`` (the message id, the same for
every attempt of one message: the receiver's idempotency key), ``webhook-timestamp`` (seconds
since the epoch, of the attempt) and ``webhook-signature`` (``v1,`` and the base64 HMAC-SHA256,
keyed with the base64-decoded secret after ``whsec_``, of ``<id>.<timestamp>.<body>``).

A game's registrations live with the game, in the move store
(:mod:`service.store.webhook_registrations`: under the game's hash tag, on its master,
replicated with its log), so that they are lost only with the game. The deliveries logs, the
markers and the analysis callbacks are in the job queue's Redis (``Backend.queue_redis``),
under the keys of :mod:`service.store.keys`: they belong to the deliveries, which are RQ jobs
there, on their own queue (``BOXFISH_WEBHOOK_QUEUE_NAME``), run by
:mod:`workers.webhook_delivery`; each message is enqueued once (RQ's unique enqueue of its
first attempt's job, then a marker per message id: a replayed append, or a callback seen by
both the API and the worker, enqueues nothing more; see :meth:`Webhooks.enqueue_once`).

Message ids are deterministic: ``msg_<webhook id>_<serial>_<type>`` for a game's events,
``msg_<analysis id>_<n>`` for the n-th callback (from 0) of an analysis.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime

import redis
from rq import Queue
from rq.exceptions import DuplicateJobError

from ..config import Settings
from ..errors import WebhookLimit
from ..store.events import MoveEvent
from ..store.game_meta import GameMeta
from ..store.keys import KeySpace
from ..store.webhook_registrations import WebhookRegistrations
from .games import GameListener

#: The RQ job that delivers one attempt (see :func:`workers.webhook_delivery.deliver`).
DELIVER_FUNCTION = "boxfish.workers.webhook_delivery.deliver"

MOVE_APPENDED = "move.appended"
GAME_FINISHED = "game.finished"
#: The events of a game's webhook that names none.
GAME_EVENTS = (MOVE_APPENDED, GAME_FINISHED)
#: A finished review of the game: only to the webhooks that ask for it.
REVIEW_FINISHED = "review.finished"
#: The events a game's webhook may subscribe to.
SUBSCRIBABLE_EVENTS = (*GAME_EVENTS, REVIEW_FINISHED)
ANALYSIS_FINISHED = "analysis.finished"
ANALYSIS_FAILED_EVENT = "analysis.failed"

SECRET_PREFIX = "whsec_"
#: Attempt records kept per webhook (newest first).
DELIVERIES_KEPT = 100
#: Seconds an RQ delivery job may run beyond the attempt's own timeouts.
JOB_MARGIN_S = 30


def iso_time(ms: int | float) -> str:
    """``ms`` (milliseconds since the epoch) as ISO 8601 UTC with milliseconds."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def new_secret() -> str:
    """A signing secret: ``whsec_`` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_bytes(secret: str) -> bytes:
    """The key of a ``whsec_<base64>`` secret. Raises ValueError on another form."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"the secret must start with {SECRET_PREFIX!r}")
    return base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)


def sign(secret: str, message_id: str, timestamp: int, body: str) -> str:
    """The ``webhook-signature`` header of ``body`` (Standard Webhooks ``v1``)."""
    mac = hmac.new(secret_bytes(secret), f"{message_id}.{timestamp}.{body}".encode(),
                   hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def signed_headers(secret: str, message_id: str, body: str, now_s: float) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt at ``now_s`` (seconds since the epoch)."""
    timestamp = int(now_s)
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(secret, message_id, timestamp, body),
            "content-type": "application/json"}


def envelope(event_type: str, data: dict, at_ms: int | float) -> str:
    """The body of a delivery: ``{"type", "timestamp", "data"}`` as compact JSON."""
    return json.dumps({"type": event_type, "timestamp": iso_time(at_ms), "data": data},
                      separators=(",", ":"))


def winner(scores) -> int | None:
    """The player with the higher score, None for a draw (or a game without scores)."""
    if not scores or len(scores) != 2 or scores[0] == scores[1]:
        return None
    return 0 if scores[0] > scores[1] else 1


def move_events(game_id: str, event: MoveEvent) -> list[tuple[str, str]]:
    """``(type, body)`` of each event a stored move makes: ``move.appended``, and
    ``game.finished`` when the move ends the game."""
    scores = list(event.scores) if event.scores is not None else None
    out = [(MOVE_APPENDED, envelope(MOVE_APPENDED, {
        "game": game_id, "serial": event.serial, "move": list(event.move),
        "player": event.player, "completed": event.completed, "scores": scores,
        "to_move": event.to_move, "status": event.status}, event.at))]
    if event.finished:
        out.append((GAME_FINISHED, envelope(GAME_FINISHED, {
            "game": game_id, "serial": event.serial, "scores": scores,
            "status": event.status, "winner": winner(event.scores)}, event.at)))
    return out


def analysis_event(view: dict, at_ms: int | float | None = None) -> str | None:
    """The body of the event of an ended analysis (``view``: as GET /v1/analyses/{id} shows
    it), or None while it has not ended."""
    kind = {"finished": ANALYSIS_FINISHED, "failed": ANALYSIS_FAILED_EVENT}.get(view["status"])
    if kind is None:
        return None
    return envelope(kind, view, time.time() * 1000 if at_ms is None else at_ms)


def review_event(view: dict, at_ms: int | float | None = None) -> str:
    """The body of ``review.finished`` (``view``: the finished review as GET
    /v1/reviews/{id} shows it): the game, the review's id, the log position reviewed, the
    time per position, each player's totals and the review's URL (its moves are there)."""
    return envelope(REVIEW_FINISHED, {
        "game": view["game_id"], "review": view["id"], "position": view["position"],
        "time_ms": view["time_ms"], "players": view["players"],
        "url": f"/v1/reviews/{view['id']}"}, time.time() * 1000 if at_ms is None else at_ms)


def public_view(hook: dict) -> dict:
    """A registration as listed: everything but the secret."""
    return {k: v for k, v in hook.items() if k != "secret"}


class Webhooks:
    """Registrations (in ``registrations``, the move store), deliveries logs, analysis
    callbacks, and enqueueing deliveries (on the job queue's Redis ``connection``).
    ``retention_s`` is how long the per-message and per-callback keys live (long enough for
    every retry of a message, and every replay of an append). Without ``registrations`` (an
    analysis job's callbacks in a worker) the registration methods raise ``RuntimeError``."""

    def __init__(self, connection: redis.Redis, keys: KeySpace, *, queue_name: str,
                 timeout_s: float, max_per_game: int, retention_s: int,
                 registrations: WebhookRegistrations | None = None) -> None:
        self.redis = connection
        self.keys = keys
        self.registrations = registrations
        self.queue = Queue(queue_name, connection=connection)
        self.timeout_s = timeout_s
        self.max_per_game = max_per_game
        self.retention_s = retention_s

    @classmethod
    def from_settings(cls, connection: redis.Redis, settings: Settings, keys: KeySpace,
                      registrations: WebhookRegistrations | None = None) -> Webhooks:
        return cls(connection, keys, queue_name=settings.webhook_queue_name,
                   timeout_s=settings.webhook_timeout_s,
                   max_per_game=settings.webhook_max_per_game,
                   retention_s=max(settings.result_ttl_s, settings.failure_ttl_s,
                                   settings.idempotency_ttl_s) + 3600,
                   registrations=registrations)

    def job_meta(self) -> dict:
        """What an analysis job carries (``meta["callbacks"]``) for its RQ callbacks to build
        this object in the worker (:meth:`from_job_meta`)."""
        return {"prefix": self.keys.prefix, "queue": self.queue.name,
                "timeout_s": self.timeout_s, "retention_s": self.retention_s}

    @classmethod
    def from_job_meta(cls, connection: redis.Redis, meta: dict) -> Webhooks:
        return cls(connection, KeySpace(meta["prefix"]), queue_name=meta["queue"],
                   timeout_s=meta["timeout_s"], max_per_game=0,
                   retention_s=meta["retention_s"])

    # -- registrations -------------------------------------------------------------------

    def _registrations(self) -> WebhookRegistrations:
        if self.registrations is None:
            raise RuntimeError("webhook registrations need the move store")
        return self.registrations

    def create(self, game_id: str, url: str, events: list[str]) -> dict:
        """Register a webhook of ``game_id``; returns it with its ``secret``. Raises
        :class:`~service.errors.WebhookLimit` when the game has ``max_per_game`` already."""
        hook = {"id": "wh_" + secrets.token_hex(8), "url": url, "events": list(events),
                "active": True, "created_at": iso_time(time.time() * 1000),
                "disabled_reason": None, "disabled_at": None, "secret": new_secret()}
        if not self._registrations().add(game_id, hook, self.max_per_game):
            raise WebhookLimit(self.max_per_game)
        return hook

    def list(self, game_id: str) -> list[dict]:
        """The game's webhooks (with their secrets), oldest first."""
        hooks = self._registrations().list(game_id)
        return sorted(hooks, key=lambda h: (h["created_at"], h["id"]))

    def get(self, game_id: str, webhook_id: str) -> dict | None:
        return self._registrations().get(game_id, webhook_id)

    def delete(self, game_id: str, webhook_id: str) -> bool:
        """Remove a webhook and its deliveries log; False if there was none. Deliveries
        already queued for it end without an attempt."""
        removed = self._registrations().delete(game_id, webhook_id)
        if removed:
            self.redis.delete(self.keys.webhook_deliveries(webhook_id))
        return removed

    def disable(self, game_id: str, webhook_id: str, reason: str) -> None:
        """Mark a webhook inactive (no more deliveries to it), if it is still registered."""
        self._registrations().update(game_id, webhook_id, {
            "active": False, "disabled_reason": reason,
            "disabled_at": iso_time(time.time() * 1000)})

    # -- deliveries log ------------------------------------------------------------------

    def record(self, webhook_id: str, attempt: dict) -> None:
        """Add an attempt record to the webhook's deliveries log (newest first, capped)."""
        self._log(self.keys.webhook_deliveries(webhook_id), attempt)

    def deliveries(self, webhook_id: str) -> list[dict]:
        """The webhook's attempt records, newest first."""
        return self._read_log(self.keys.webhook_deliveries(webhook_id))

    def record_callback(self, job_id: str, attempt: dict) -> None:
        """Add an attempt record (with its ``callback``: the callback's index) to the
        deliveries log of analysis ``job_id``'s callbacks (newest first, capped; it lives
        ``retention_s`` after its last record, as the callbacks themselves)."""
        self._log(self.keys.analysis_callback_deliveries(job_id), attempt, self.retention_s)

    def callback_deliveries(self, job_id: str) -> list[dict]:
        """The attempt records of analysis ``job_id``'s callbacks, newest first."""
        return self._read_log(self.keys.analysis_callback_deliveries(job_id))

    def _log(self, key: str, attempt: dict, ttl_s: int | None = None) -> None:
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.lpush(key, json.dumps(attempt))
            pipe.ltrim(key, 0, DELIVERIES_KEPT - 1)
            if ttl_s is not None:
                pipe.expire(key, ttl_s)
            pipe.execute()

    def _read_log(self, key: str) -> list[dict]:
        return [json.loads(v) for v in self.redis.lrange(key, 0, -1)]

    # -- enqueueing ----------------------------------------------------------------------

    @staticmethod
    def job_id(message_id: str, attempt: int) -> str:
        return f"whd-{hashlib.sha256(message_id.encode()).hexdigest()[:40]}-{attempt}"

    def enqueue_attempt(self, target: dict, message_id: str, body: str, attempt: int,
                        at_s: float | None = None) -> bool:
        """Enqueue attempt ``attempt`` of a message, now or at ``at_s`` (seconds since the
        epoch, rounded up to RQ's scheduler's whole seconds, so never early). An attempt
        enqueued now is enqueued atomically only if its job does not exist (RQ's unique
        enqueue); returns False when it did."""
        kwargs = dict(job_id=self.job_id(message_id, attempt),
                      job_timeout=int(4 * self.timeout_s) + JOB_MARGIN_S, result_ttl=0,
                      failure_ttl=self.retention_s,
                      description=f"webhook {message_id} attempt {attempt}")
        args = (DELIVER_FUNCTION, target, message_id, body, attempt)
        if at_s is not None:
            self.queue.enqueue_at(datetime.fromtimestamp(math.ceil(at_s), UTC), *args,
                                  **kwargs)
            return True
        try:
            self.queue.enqueue(*args, unique=True, **kwargs)
        except DuplicateJobError:
            return False
        return True

    def enqueue_once(self, target: dict, message_id: str, body: str) -> bool:
        """Enqueue the first attempt of a message unless it was enqueued before; True if
        enqueued now. Never lost, rarely doubled: the marker of an enqueued message (kept
        ``retention_s``) is set only after its job is, and the job is enqueued only if it
        does not exist; a process that dies between the two leaves no marker, so a replay of
        the append enqueues the message again once its first job has ended (a second
        delivery with the same ``webhook-id``, which receivers deduplicate)."""
        marker = self.keys.webhook_enqueued(message_id)
        if self.redis.exists(marker):
            return False
        enqueued = self.enqueue_attempt(target, message_id, body, 1)
        self.redis.set(marker, 1, ex=self.retention_s)
        return enqueued

    def announce_move(self, game_id: str, event: MoveEvent,
                      registrations: tuple[dict, ...] | None = None) -> int:
        """Enqueue the deliveries a stored move makes to the game's active webhooks that
        subscribe to them; returns how many were enqueued now. ``registrations``: the game's
        registrations as the store read them in the step that appended the move
        (:attr:`service.store.recorder.Appended.webhooks`), used instead of a read of the
        store's; None: read them."""
        if registrations is None:
            hooks = self.list(game_id)
        else:
            hooks = sorted(registrations, key=lambda h: (h["created_at"], h["id"]))
        hooks = [h for h in hooks if h["active"]]
        if not hooks:
            return 0
        enqueued = 0
        for event_type, body in move_events(game_id, event):
            for hook in hooks:
                if event_type in hook["events"]:
                    message_id = f"msg_{hook['id']}_{event.serial}_{event_type}"
                    target = {"game": game_id, "webhook": hook["id"]}
                    enqueued += self.enqueue_once(target, message_id, body)
        return enqueued

    def announce_review(self, game_id: str, review_id: str, body: str) -> int:
        """Enqueue ``review.finished`` (``body``: :func:`review_event`'s) to the game's active
        webhooks that subscribe to it; returns how many were enqueued now (once per webhook
        and review, whatever the retries)."""
        enqueued = 0
        for hook in self.list(game_id):
            if hook["active"] and REVIEW_FINISHED in hook["events"]:
                enqueued += self.enqueue_once({"game": game_id, "webhook": hook["id"]},
                                              f"msg_{hook['id']}_{review_id}", body)
        return enqueued

    def destination(self, target: dict) -> tuple[str, str] | None:
        """``(url, secret)`` of a delivery's target, or None when it is gone (a deleted or
        disabled webhook, an expired callback)."""
        if "webhook" in target:
            hook = self.get(target["game"], target["webhook"])
            if hook is None or not hook["active"]:
                return None
            return hook["url"], hook["secret"]
        raw = self.redis.lindex(self.keys.analysis_callbacks(target["analysis"]),
                                target["index"])
        if raw is None:
            return None
        callback = json.loads(raw)
        return callback["url"], callback["secret"]

    # -- analysis callbacks --------------------------------------------------------------

    def add_callback(self, job_id: str, url: str, secret: str,
                     ended: Callable[[], str | None]) -> int:
        """Register a callback of analysis ``job_id``; returns its index. If the job has ended
        (its event recorded by :meth:`analysis_ended`, or else ``ended()``: the body of its
        event as RQ sees it now, None while it runs), its delivery is enqueued now."""
        key = self.keys.analysis_callbacks(job_id)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(key, json.dumps({"url": url, "secret": secret}))
            pipe.expire(key, self.retention_s)
            index = pipe.execute()[0] - 1
        # Pushed first, read second; analysis_ended writes first and reads second: whichever
        # comes last sees the other, so the callback is enqueued at least once (and,
        # through enqueue_once, once).
        body = self.redis.get(self.keys.analysis_ended(job_id))
        body = body.decode() if body is not None else ended()
        if body is not None:
            self._send_callback(job_id, index, body)
        return index

    def analysis_ended(self, job_id: str, body: str) -> int:
        """Record the event of an ended analysis and enqueue it to each of its callbacks;
        returns how many were enqueued now."""
        self.redis.set(self.keys.analysis_ended(job_id), body, ex=self.retention_s)
        count = self.redis.llen(self.keys.analysis_callbacks(job_id))
        return sum(self._send_callback(job_id, i, body) for i in range(count))

    def _send_callback(self, job_id: str, index: int, body: str) -> bool:
        return self.enqueue_once({"analysis": job_id, "index": index},
                                 f"msg_{job_id}_{index}", body)


class WebhookListener(GameListener):
    """Enqueues the webhook deliveries of each stored move (see
    :meth:`Webhooks.announce_move`); idempotent, so a replayed append enqueues nothing
    again."""

    def __init__(self, webhooks: Webhooks) -> None:
        self.webhooks = webhooks

    def move_appended(self, meta: GameMeta, event: MoveEvent, replayed: bool,
                      webhooks: tuple[dict, ...] | None = None) -> None:
        self.webhooks.announce_move(meta.game_id, event, webhooks)
