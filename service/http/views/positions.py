"""Positions: the exact value of a position from the store of exact values, with no search.

``GET /v1/positions?game=dots-and-boxes&width=W&height=H&lines=...`` (an OpenSpiel line string,
as analyses take) or ``&moves=[[x,y,o],...]`` (JSON): ``200`` with the stored values, ``404``
when none is stored. It never queues a search, so a bot may ask it freely (a read, rate-limited
as reads are)."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, request

from boxfish.engine import load_game

from ...errors import NotFound
from ..problems import invalid, invalid_field
from . import ctx, query_board_size, query_moves, replayed

bp = Blueprint("positions", __name__)

GAME = "dots-and-boxes"


def _state(game):
    lines, moves = request.args.get("lines"), request.args.get("moves")
    if (lines is None) == (moves is None):
        raise invalid("give either lines or moves (not both)", reason="invalid_position")
    if lines is not None:
        try:
            return game.from_lines(lines)
        except ValueError as exc:
            raise invalid(str(exc), reason="invalid_position") from None
    return replayed(game, query_moves(), ["query", "moves"])


@bp.get("/v1/positions")
def get_position():
    name = request.args.get("game", GAME)
    if name != GAME:
        raise invalid_field(f"only {GAME} values are stored, not {name!r}", ["query", "game"],
                            GAME, "literal_error", "unsupported_game")
    width, height = query_board_size("width"), query_board_size("height")
    game = load_game(GAME, width=width, height=height)
    state = _state(game)
    exact = ctx().exact_values
    stored = None
    if exact is not None and not state.is_terminal():
        stored = exact.lookup(width, height, state.drawn)
    if stored is None:
        raise NotFound("no exact value is stored for this position")
    return {"game": GAME, "params": {"width": width, "height": height},
            "to_move": state.to_move, "value": stored.value, "exact": True,
            "moves": [{"move": list(game.action_to_move(ln)), "value": v}
                      for ln, v in stored.moves],
            "all_moves": stored.all, "engine": stored.engine,
            "proof_ms": round(stored.proof_s * 1000),
            "stored_at": datetime.fromtimestamp(stored.stored_at, UTC).isoformat(),
            "source": "store"}
