"""Webhooks of a game: register one (its secret shown once), list them, delete one, read the
deliveries log of one. Every route needs the game's write token: a webhook is the game
owner's configuration, and its URL may be private to them."""

from __future__ import annotations

from flask import Blueprint, request

from ..models import CreateWebhook
from ..problems import Problem, invalid
from ..webhooks import GAME_EVENTS, WebhookLimit, public_view
from . import check_id, checked_url, ctx, json_body, validate

bp = Blueprint("webhooks", __name__)


def _authorized_game(game_id: str) -> str:
    """The id of the game, after checking the request's write token (404, 401, 403)."""
    games = ctx().games
    meta = games.static_meta(check_id(game_id, "game"))
    games.authorize(meta, request.headers.get("Authorization"))
    return meta.game_id


def _hook(game_id: str, webhook_id: str) -> dict:
    hook = ctx().webhooks.get(game_id, check_id(webhook_id, "webhook"))
    if hook is None:
        raise Problem(404, "not-found", "Not found", f"no webhook {webhook_id!r} of this game")
    return hook


@bp.post("/v1/games/<game_id>/webhooks")
def create_webhook(game_id: str):
    game_id = _authorized_game(game_id)
    data = validate(CreateWebhook, json_body())
    url = checked_url(data.url, ["url"])
    try:
        hook = ctx().webhooks.create(game_id, url, data.events or list(GAME_EVENTS))
    except WebhookLimit as exc:
        raise invalid(f"{exc}; delete one first", reason="limit_exceeded") from None
    return hook, 201, {"Location": f"/v1/games/{game_id}/webhooks/{hook['id']}"}


@bp.get("/v1/games/<game_id>/webhooks")
def list_webhooks(game_id: str):
    game_id = _authorized_game(game_id)
    return {"webhooks": [public_view(h) for h in ctx().webhooks.list(game_id)]}


@bp.get("/v1/games/<game_id>/webhooks/<webhook_id>")
def get_webhook(game_id: str, webhook_id: str):
    return public_view(_hook(_authorized_game(game_id), webhook_id))


@bp.delete("/v1/games/<game_id>/webhooks/<webhook_id>")
def delete_webhook(game_id: str, webhook_id: str):
    game_id = _authorized_game(game_id)
    if not ctx().webhooks.delete(game_id, check_id(webhook_id, "webhook")):
        raise Problem(404, "not-found", "Not found", f"no webhook {webhook_id!r} of this game")
    return "", 204


@bp.get("/v1/games/<game_id>/webhooks/<webhook_id>/deliveries")
def list_deliveries(game_id: str, webhook_id: str):
    game_id = _authorized_game(game_id)
    hook = _hook(game_id, webhook_id)
    return {"webhook": hook["id"], "deliveries": ctx().webhooks.deliveries(hook["id"])}
