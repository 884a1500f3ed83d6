"""The opening explorer: the moves played from a position of the first moves of finished
games (docs/explorer.md).

``GET /v1/explorer?game=dots-and-boxes&width=W&height=H&moves=[[x,y,o],...]`` (``moves``: a
JSON list of moves as the API writes them, from the start; none or ``[]``: the start;
``game=extreme-tictactoe`` takes no size): ``200`` with the moves played from that position,
most played first, in its orientation. A read, rate-limited as reads are."""

from __future__ import annotations

from flask import Blueprint, request

from boxfish.engine import game_names, load_game

from ..problems import invalid_field
from . import ctx, query_board_size, query_moves, replayed

bp = Blueprint("explorer", __name__)

DEFAULT_GAME = "dots-and-boxes"


def _board_size(name: str) -> int:
    """A Dots-and-Boxes board's ``width`` or ``height`` (required for that game only, so its
    absence is a position not named: ``invalid_position``)."""
    if request.args.get(name) is None:
        raise invalid_field(f"{name} is required for {DEFAULT_GAME}", ["query", name],
                            "required for dots-and-boxes", "missing", "invalid_position")
    return query_board_size(name)


@bp.get("/v1/explorer")
def get_explorer():
    name = request.args.get("game", DEFAULT_GAME)
    if name not in game_names():
        known = ", ".join(game_names())
        raise invalid_field(f"unknown game {name!r}; known: {known}", ["query", "game"],
                            known, "literal_error", "unknown_game")
    if name == DEFAULT_GAME:
        game = load_game(name, width=_board_size("width"), height=_board_size("height"))
    else:
        game = load_game(name)
    state = replayed(game, query_moves(), ["query", "moves"])
    explorer = ctx().explorer
    return {"game": name, "params": game.params(), "serial": state.serial,
            "to_move": None if state.is_terminal() else state.to_move,
            "max_moves": explorer.max_moves, **explorer.query(state)}
