"""Request bodies at the HTTP edge (pydantic): unknown fields are refused, ints are strict and
at most 64 bits (:data:`MAX_INT`), and an optional field is left out, never sent as null (it is
None when left out; openapi.yaml has no nullable request field).

The ``game`` field picks the game; each game's parameters have a model in
:data:`GAME_PARAMS` (a game the engine knows but this table does not takes no parameters).
Moves stay raw JSON here: ``Game.parse_move`` judges them, so a bad move gets the engine's
``reason`` (``malformed`` / ``out_of_range``).
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic_core import PydanticCustomError

#: The largest integer the API takes anywhere (body fields, query parameters, headers): a signed
#: 64-bit integer, what most clients' JSON integers are and what a Redis stream id (a serial)
#: holds. Larger ones are 422 problems, never passed on to the store.
MAX_INT = 2**63 - 1

#: A strict integer of at most 64 bits (signed).
Int64 = Annotated[StrictInt, Field(ge=-MAX_INT - 1, le=MAX_INT)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value, info: ValidationInfo):
        """An explicit null for an optional field is refused (a field left out is not
        validated, so it keeps its default None)."""
        if value is None and not cls.model_fields[info.field_name].is_required():
            raise PydanticCustomError("null_value", "Input should not be null; leave the "
                                      "field out instead")
        return value


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


class EngineSeatFields(Strict):
    """The side the engine plays in a new game and its search time per move (None: the
    server's ``default_time_ms``; above ``max_time_ms`` is a 422 ``limit_exceeded``)."""

    # Not Literal[0, 1]: that takes false and true for 0 and 1.
    seat: StrictInt = Field(ge=0, le=1)
    time_ms: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)


class CreateGameFields(Strict):
    game: StrictStr
    engine: EngineSeatFields | None = None


class ImportRecordFields(Strict):
    """``POST /v1/games/import`` as JSON: the ``record`` text in ``format``. An OpenSpiel bare
    action list also names its game: ``width`` and ``height`` (boxes; ``game`` may say
    ``dots-and-boxes``, the one game OpenSpiel's actions are read for); a Boxfish record
    names its own."""

    record: StrictStr
    format: Literal["boxfish", "openspiel"] = "boxfish"
    game: Literal["dots-and-boxes"] | None = None
    width: StrictInt | None = Field(default=None, ge=1, le=20)
    height: StrictInt | None = Field(default=None, ge=1, le=20)


class AppendMove(Strict):
    move: Any = Field(description="the move as a JSON list of ints; judged by the game")
    serial: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)


#: The events a game's webhook may subscribe to
#: (``service.application.webhooks.SUBSCRIBABLE_EVENTS``).
GameEvent = Literal["move.appended", "game.finished", "review.finished"]


class CreateWebhook(Strict):
    url: StrictStr = Field(min_length=1, max_length=2048)
    #: Left out: the game's events (``GAME_EVENTS``: move.appended and game.finished).
    events: list[GameEvent] | None = Field(default=None, min_length=1, max_length=3)

    @field_validator("events")
    @classmethod
    def _distinct(cls, events):
        if events is not None and len(set(events)) != len(events):
            raise PydanticCustomError("unique_items", "each event may be named once")
        return events


#: ``whsec_`` and the base64 of 24 to 64 bytes (openapi.yaml's Callback.secret pattern).
SECRET_RE = re.compile(r"whsec_((?:[A-Za-z0-9+/]{4}){8,20}(?:[A-Za-z0-9+/]{2}==|"
                       r"[A-Za-z0-9+/]{3}=)?|(?:[A-Za-z0-9+/]{4}){21}(?:[A-Za-z0-9+/]{2}==)?)")


class Callback(Strict):
    """Where an analysis's end is delivered: ``url`` (checked like a webhook's) and the
    receiver's signing ``secret``, ``whsec_`` and the base64 of 24 to 64 bytes."""

    url: StrictStr = Field(min_length=1, max_length=2048)
    secret: StrictStr = Field(min_length=6, max_length=200)

    @field_validator("secret")
    @classmethod
    def _secret(cls, secret: str) -> str:
        if not SECRET_RE.fullmatch(secret):
            raise PydanticCustomError("secret_format", "the secret must be 'whsec_' and the "
                                      "base64 of 24 to 64 random bytes")
        try:
            key = base64.b64decode(secret[len("whsec_"):], validate=True)
        except (binascii.Error, ValueError):
            raise PydanticCustomError("secret_format", "the secret after 'whsec_' must be "
                                      "base64") from None
        if not 24 <= len(key) <= 64:  # the pattern says so too; this says it plainly
            raise PydanticCustomError("secret_length", "the secret must be the base64 of 24 "
                                      "to 64 bytes")
        return secret


class AnalysisLimits(Strict):
    time_ms: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)
    multipv: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)
    #: The search to run (None: the engine's choice); one that cannot run the request is a
    #: 422 ``core_unavailable`` (see ``analysis_request.core_problem``).
    core: Literal["c", "python"] | None = None


class AnalysisFields(AnalysisLimits):
    game: StrictStr
    moves: list[Any] | None = None
    lines: StrictStr | None = None
    # Not Literal[0, 1]: that takes false and true for 0 and 1.
    to_move: StrictInt | None = Field(default=None, ge=0, le=1)
    scores: list[Int64] | None = Field(default=None, min_length=2, max_length=2)
    #: Not part of the analysis request (identical requests share one job whatever their
    #: callbacks).
    callback: Callback | None = None


class GameAnalysis(AnalysisLimits):
    at: StrictInt | None = Field(default=None, ge=0, le=MAX_INT)
    callback: Callback | None = None


class ReviewFields(Strict):
    """``POST /v1/games/{id}/reviews``: the search time of each position (the analyses' default
    and maximum)."""

    time_ms: StrictInt | None = Field(default=None, ge=1, le=MAX_INT)


@cache
def with_params(base: type[Strict], game: str) -> type[Strict]:
    """``base``'s fields plus the parameters of ``game``, as one strict model."""
    params = GAME_PARAMS.get(game, NoParams)
    return create_model(f"{params.__name__}{base.__name__}", __base__=(base, params))


def param_names(game: str) -> list[str]:
    return list(GAME_PARAMS.get(game, NoParams).model_fields)
