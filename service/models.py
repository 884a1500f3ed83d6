"""Request bodies at the HTTP edge (pydantic): unknown fields are refused, ints are strict and
at most 64 bits (:data:`MAX_INT`).

The ``game`` field picks the game; each game's parameters have a model in
:data:`GAME_PARAMS` (a game the engine knows but this table does not takes no parameters).
Moves stay raw JSON here: ``Game.parse_move`` judges them, so a bad move gets the engine's
``reason`` (``malformed`` / ``out_of_range``).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, create_model

#: The largest integer the API takes anywhere (body fields, query parameters, headers): a signed
#: 64-bit integer, what most clients' JSON integers are and what a Redis stream id (a serial)
#: holds. Larger ones are 422 problems, never passed on to the store.
MAX_INT = 2**63 - 1

#: A strict integer of at most 64 bits (signed).
Int64 = Annotated[StrictInt, Field(ge=-MAX_INT - 1, le=MAX_INT)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class NoParams(Strict):
    pass


class DotsParams(Strict):
    width: StrictInt = Field(ge=1, le=20)
    height: StrictInt = Field(ge=1, le=20)


#: Per-game parameter models. Board-size limits of the configuration are checked on top.
GAME_PARAMS: dict[str, type[Strict]] = {
    "dots-and-boxes": DotsParams,
    "extreme-tictactoe": NoParams,
}


class GameChoice(BaseModel):
    """Only the ``game`` field, read first to pick the full model."""

    model_config = ConfigDict(extra="allow", strict=True)
    game: StrictStr


class CreateGameFields(Strict):
    game: StrictStr


class AppendMove(Strict):
    move: Any = Field(description="the move as a JSON list of ints; judged by the game")
    serial: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)


class AnalysisLimits(Strict):
    time_ms: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)
    multipv: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)


class AnalysisFields(AnalysisLimits):
    game: StrictStr
    moves: list[Any] | None = None
    lines: StrictStr | None = None
    to_move: Literal[0, 1] | None = None
    scores: list[Int64] | None = Field(default=None, min_length=2, max_length=2)


class GameAnalysis(AnalysisLimits):
    at: StrictInt | None = Field(default=None, ge=0, le=MAX_INT)


@cache
def with_params(base: type[Strict], game: str) -> type[Strict]:
    """``base``'s fields plus the parameters of ``game``, as one strict model."""
    params = GAME_PARAMS.get(game, NoParams)
    return create_model(f"{params.__name__}{base.__name__}", __base__=(base, params))


def param_names(game: str) -> list[str]:
    return list(GAME_PARAMS.get(game, NoParams).model_fields)
