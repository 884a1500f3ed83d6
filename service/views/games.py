"""Games: create one, read its state, read its move index.

The move index of a Dots-and-Boxes game maps x -> y -> orientation -> the serial of the move
that drew that line (``state.index()``); here its keys are strings, as JSON object keys are."""

from __future__ import annotations

from flask import Blueprint, request, url_for

from ..games import game_view
from ..models import CreateGameFields
from ..problems import Problem
from . import check_id, choose_game, ctx, json_body

bp = Blueprint("games", __name__)


def _stringify(obj):
    """JSON objects need string keys: convert the int keys of nested dicts."""
    if isinstance(obj, dict):
        return {str(k): _stringify(v) for k, v in obj.items()}
    return obj


@bp.post("/v1/games")
def create_game():
    _, game = choose_game(json_body(), CreateGameFields)
    meta, token = ctx().games.create(game)
    state = ctx().games.state_at(meta)
    body = {**game_view(meta.game_id, game, state), "write_token": token}
    location = url_for("games.get_game", game_id=meta.game_id)
    return body, 201, {"Location": location, "ETag": f'"{state.serial}"'}


@bp.get("/v1/games/<game_id>")
def get_game(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    etag = f'"{meta.serial}"'
    if request.if_none_match.contains(str(meta.serial)):
        return "", 304, {"ETag": etag}
    state = games.state_at(meta)
    return game_view(meta.game_id, games.game_of(meta), state), 200, {"ETag": etag}


@bp.get("/v1/games/<game_id>/index")
def get_index(game_id: str):
    games = ctx().games
    meta = games.meta(check_id(game_id, "game"))
    state = games.state_at(meta)
    if not hasattr(state, "index"):
        raise Problem(404, "no-index", "No index",
                      f"{meta.game} games have no move index")
    return _stringify(state.index()), 200, {"ETag": f'"{meta.serial}"'}
