"""Verifying a webhook delivery (Standard Webhooks: ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``, ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``), with the
``standardwebhooks`` package (no dependencies of its own)."""

from __future__ import annotations

import binascii
from collections.abc import Mapping

from standardwebhooks.webhooks import EmptyWebhookSecretError, Webhook
from standardwebhooks.webhooks import WebhookVerificationError as _Refused

from .errors import WebhookVerificationError


def verify_webhook(secret: str, headers: Mapping[str, str], body: bytes | str):
    """The delivery's JSON payload, once its signature verifies.

    ``secret`` is the webhook's ``whsec_...`` secret (from ``add_webhook``), ``headers`` the
    delivery's headers (any mapping; names in any case), ``body`` its raw body, exactly as
    received. Raises :class:`~boxfish.client.errors.WebhookVerificationError` when a header is
    missing or malformed, no ``v1`` signature matches (constant-time compare), or the
    timestamp is more than 5 minutes away from now (a replayed or delayed delivery)."""
    try:
        webhook = Webhook(secret)
    except (ValueError, EmptyWebhookSecretError) as exc:
        raise WebhookVerificationError(f"unreadable webhook secret: {exc}") from None
    try:
        return webhook.verify(body, {str(k): str(v) for k, v in headers.items()})
    except _Refused as exc:
        raise WebhookVerificationError(str(exc)) from None
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:  # malformed headers/body
        raise WebhookVerificationError(f"malformed webhook delivery: {exc}") from None
