"""The analysis request: one position and its search limits, the value the API enqueues and a
worker runs.

:class:`AnalysisRequest` is defined here, on the service side, and imported by both the API
(:mod:`service.http.views.analyses`, :mod:`service.application.analyses`) and the worker
(:mod:`workers.analysis_job`). This module imports only pydantic and the engine, so a worker
loads it without Flask.

A request is canonical: a position is either ``moves`` (the game's moves from the start, as lists
of ints) or ``lines`` with ``to_move`` and ``scores`` (never both, never a mix), so one position
and one set of limits have one value, one JSON form and one :meth:`~AnalysisRequest.digest`.
The digest names the job key; identical requests share one job and its result.

The job carries the request's JSON form, ``request.model_dump(mode="json")`` (plain lists and
ints, shown as is by ``GET /v1/analyses/{id}``); the worker reads it back with
``AnalysisRequest.model_validate``.

``core`` (``"c"``, ``"python"`` or None: the engine's choice) picks the search. The JSON form
leaves it out when it is None, so a request without one has the JSON form, and the digest,
that it had before ``core`` existed: jobs and results keyed then are still found, and a worker
of the version before still reads the jobs that do not choose a core.
:func:`core_problem` says why a core cannot run a request (the API refuses it up front).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_serializer,
    model_validator,
)

from boxfish import engine

#: The fields that describe the position (the rest are the game and the limits).
POSITION_FIELDS = ("moves", "lines", "to_move", "scores")

#: A search ``engine.analyse`` can be asked for (None: its own choice).
Core = Literal["c", "python"]


#: The version of Boxfish that drops ``time_ms`` from analysis results (deprecated: it is
#: ``time_used_ms``, named so that it is not taken for the request's limit ``time_ms``).
TIME_MS_REMOVED_IN = "0.2.0"


def with_time_used(result: dict | None) -> dict | None:
    """An analysis result (``Analysis.to_dict()``'s fields) with ``time_used_ms``, the search
    time it took in milliseconds, beside the deprecated ``time_ms`` (the same number) that a
    result stored before ``time_used_ms`` existed carries alone. Anything else is returned
    as it is."""
    if not isinstance(result, dict) or "time_ms" not in result or "time_used_ms" in result:
        return result
    out: dict = {}
    for key, value in result.items():
        if key == "time_ms":
            out["time_used_ms"] = value
        out[key] = value
    return out


def core_problem(game, core: str | None) -> str | None:
    """Why ``core`` cannot run an analysis of ``game`` (an engine Game), or None if it can:
    ``"c"`` runs only Dots and Boxes of up to ``engine.dots.search.compiled.MAX_LINES`` lines, and
    only where the compiled core was built (the engine's own check, ``compiled.resolve``).
    None and ``"python"`` run everywhere."""
    if core != "c":
        return None
    if game.name != "dots-and-boxes":
        return f"{game.name} has only the Python search (core 'python')"
    from boxfish.engine.dots.search.board import tables
    from boxfish.engine.dots.search.compiled import resolve

    try:
        resolve(core, tables(game.params()["width"], game.params()["height"]))
    except ValueError as exc:
        return str(exc)
    return None


def canonical_position(moves=None, lines=None, to_move=None, scores=None) -> dict:
    """The position fields in canonical form: with ``lines``, ``to_move`` and ``scores``
    default to 0 and (0, 0); without, ``moves`` defaults to none played. Raises ValueError (the
    message is meant for the client) if both forms are mixed."""
    if lines is not None:
        if moves is not None:
            raise ValueError("give either moves or lines, not both")
        return {"moves": None, "lines": lines, "to_move": 0 if to_move is None else to_move,
                "scores": (0, 0) if scores is None else scores}
    if to_move is not None or scores is not None:
        raise ValueError("to_move and scores go with lines; with moves they follow from the "
                         "moves")
    return {"moves": [] if moves is None else moves, "lines": None, "to_move": None,
            "scores": None}


class AnalysisRequest(BaseModel):
    """Analyse one position of ``game`` (with ``params``) for ``time_ms``, showing ``multipv``
    moves (None: the engine's default), with the search ``core`` (None: the engine's choice;
    left out of the JSON form, and so of the digest, when None)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    game: StrictStr
    params: dict[str, Any] = Field(default_factory=dict)
    moves: tuple[tuple[StrictInt, ...], ...] | None = None
    lines: StrictStr | None = None
    to_move: Literal[0, 1] | None = None
    scores: tuple[StrictInt, StrictInt] | None = None
    time_ms: StrictInt = Field(ge=1)
    multipv: StrictInt | None = Field(default=None, ge=1)
    core: Core | None = None

    @model_validator(mode="before")
    @classmethod
    def _canonical(cls, data):
        if isinstance(data, dict):
            data = {**data, **canonical_position(**{k: data.get(k) for k in POSITION_FIELDS})}
        return data

    @model_serializer(mode="wrap")
    def _json_form(self, handler):
        """Every field, but ``core`` only when one is chosen (see the module docstring)."""
        data = handler(self)
        if isinstance(data, dict) and data.get("core") is None:
            data.pop("core", None)
        return data

    @classmethod
    def for_game(cls, game, *, time_ms: int, multipv: int | None = None,
                 core: str | None = None, **position) -> AnalysisRequest:
        """The request for a position of ``game`` (an engine Game), given as keyword arguments
        of :func:`canonical_position`."""
        return cls(game=game.name, params=game.params(), time_ms=time_ms, multipv=multipv,
                   core=core, **position)

    def build_state(self):
        """The engine state this request describes. Raises the engine's ValueError (a position
        that cannot be, or a move that cannot be replayed: ``engine.ReplayError``) or
        ``engine.IllegalMove`` (a malformed move)."""
        game = engine.load_game(self.game, **self.params)
        if self.lines is not None:
            if not hasattr(game, "from_lines"):
                raise ValueError(f"{game.name} positions cannot be given as lines; send moves")
            return game.from_lines(self.lines, to_move=self.to_move, scores=self.scores)
        moves = (game.parse_move(list(m)) for m in self.moves)
        return engine.replay(game, enumerate(moves, start=1))

    def digest(self) -> str:
        """The SHA-256 (hex) of the request's JSON form with sorted keys: equal requests have
        equal digests. It names the job key, so identical requests share one job. The JSON
        form has no ``core`` when it is None, so a request without one keeps the digest it
        had before ``core`` existed; ``"c"`` and ``"python"`` make jobs of their own."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def __hash__(self) -> int:  # the params dict makes pydantic's field hash fail
        return hash(self.digest())
