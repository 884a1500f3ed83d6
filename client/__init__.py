"""The Python client of the Boxfish API: ``from boxfish.client import Client``.

:class:`Client` (sync, on ``httpx``) creates games, plays moves (idempotent and retried),
reads states and move lists, follows a game's event stream (resuming across restarts),
runs analyses and registers webhooks; :func:`verify_webhook` checks a delivery's signature.
Errors are typed from the server's problem+json bodies (:mod:`boxfish.client.errors`).
This package does not import the service: it is what a bot author installs.
"""

from .client import Client
from .errors import (
    AnalysisFailed,
    BoxfishError,
    Busy,
    ConnectionFailed,
    Forbidden,
    IllegalMove,
    InvalidRequest,
    NotFound,
    SerialConflict,
    Unauthorized,
    WebhookVerificationError,
)
from .types import Analysis, Game, Move, Webhook
from .webhooks import verify_webhook

__all__ = [
    "Analysis", "AnalysisFailed", "BoxfishError", "Busy", "Client", "ConnectionFailed",
    "Forbidden", "Game", "IllegalMove", "InvalidRequest", "Move", "NotFound",
    "SerialConflict", "Unauthorized", "Webhook", "WebhookVerificationError", "verify_webhook",
]
