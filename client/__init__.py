"""The Python client of the Boxfish API: ``from boxfish.client import Client``.

:class:`Client` (sync, on ``httpx``) and :class:`AsyncClient` (its asyncio twin, the same
methods as coroutines) create games, play moves (idempotent and retried),
read states and move lists, follow a game's event stream (resuming across restarts, and
telling with a :class:`GameReset` when a store failover rewrote the history it yielded),
run analyses and game reviews, export and import game records and register webhooks;
:func:`verify_webhook` checks a delivery's signature.
Errors are typed from the server's problem+json bodies (:mod:`boxfish.client.errors`).
This package does not import the service: it is what a bot author installs.
"""

from .async_client import AsyncClient
from .client import Client
from .errors import (
    AnalysisFailed,
    BoxfishError,
    Busy,
    ConnectionFailed,
    Forbidden,
    IllegalMove,
    InvalidRecord,
    InvalidRequest,
    NotFound,
    NothingToReview,
    ReviewFailed,
    SerialConflict,
    Unauthorized,
    WebhookVerificationError,
)
from .types import Analysis, Game, GameReset, Move, Review, Webhook
from .webhooks import verify_webhook

__all__ = [
    "Analysis", "AnalysisFailed", "AsyncClient", "BoxfishError", "Busy", "Client",
    "ConnectionFailed", "Forbidden", "Game", "GameReset", "IllegalMove", "InvalidRecord",
    "InvalidRequest", "Move", "NotFound", "NothingToReview", "Review", "ReviewFailed",
    "SerialConflict", "Unauthorized", "Webhook", "WebhookVerificationError", "verify_webhook",
]
