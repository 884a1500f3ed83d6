"""Webhooks of a game: register one (its secret shown once), list them, delete one, read the
deliveries log of one. Every route needs the game's write token: a webhook is the game
owner's configuration, and its URL may be private to them."""

from __future__ import annotations

from flask import Blueprint

from ...application.webhooks import GAME_EVENTS, public_view
from ...errors import NotFound
from ...store.game_meta import GameMeta
from ..models import CreateWebhook
from . import check_id, checked_url, ctx, json_body, write_token_required

bp = Blueprint("webhooks", __name__)


def _hook(game_id: str, webhook_id: str) -> dict:
    hook = ctx().webhooks.get(game_id, check_id(webhook_id, "webhook"))
    if hook is None:
        raise NotFound(f"no webhook {webhook_id!r} of this game")
    return hook


@bp.post("/v1/games/<game_id>/webhooks")
@write_token_required
def create_webhook(meta: GameMeta):
    data = CreateWebhook.model_validate(json_body())
    url = checked_url(data.url, ["url"])
    hook = ctx().webhooks.create(meta.game_id, url, data.events or list(GAME_EVENTS))
    return hook, 201, {"Location": f"/v1/games/{meta.game_id}/webhooks/{hook['id']}"}


@bp.get("/v1/games/<game_id>/webhooks")
@write_token_required
def list_webhooks(meta: GameMeta):
    return {"webhooks": [public_view(h) for h in ctx().webhooks.list(meta.game_id)]}


@bp.get("/v1/games/<game_id>/webhooks/<webhook_id>")
@write_token_required
def get_webhook(meta: GameMeta, webhook_id: str):
    return public_view(_hook(meta.game_id, webhook_id))


@bp.delete("/v1/games/<game_id>/webhooks/<webhook_id>")
@write_token_required
def delete_webhook(meta: GameMeta, webhook_id: str):
    if not ctx().webhooks.delete(meta.game_id, check_id(webhook_id, "webhook")):
        raise NotFound(f"no webhook {webhook_id!r} of this game")
    return "", 204


@bp.get("/v1/games/<game_id>/webhooks/<webhook_id>/deliveries")
@write_token_required
def list_deliveries(meta: GameMeta, webhook_id: str):
    hook = _hook(meta.game_id, webhook_id)
    return {"webhook": hook["id"], "deliveries": ctx().webhooks.deliveries(hook["id"])}
