"""What the client returns: small frozen records of the API's JSON, each keeping the whole
JSON document as ``raw`` (fields this version does not name are there); and
:class:`GameReset`, which ``events`` yields when the game's log is no longer the history it
handed out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _move(value):
    return list(value) if value is not None else None


def etag_position(etag: str | None) -> str | None:
    """The log position an ``ETag`` header names (``"3.5f0c2a9e41b7d803"`` ->
    ``3.5f0c2a9e41b7d803``; a weak ``W/`` prefix dropped); None without one."""
    if not etag:
        return None
    etag = etag.strip()
    return (etag[2:] if etag.startswith("W/") else etag).strip('"') or None


@dataclass(frozen=True)
class Game:
    """A game's state (``GET /v1/games/{id}``; from ``create_game``, with its ``token``).

    ``to_move`` is the side to move (0 or 1; None once the game is finished, as a
    :class:`Move` has it), ``status`` ``in_progress`` or ``finished``
    (``finished``: the property), ``result`` (finished games) ``{"winner", "points"}``,
    ``legal_moves`` every move that can be played now, as lists (``[x, y, o]`` or ``[row,
    col]``; empty once the game is over; None from a server too old to send them); the game's
    own fields (``lines``, ``board``, ...) are in ``raw``. ``token`` is the secret write token,
    shown only once, by ``create_game`` (None otherwise). ``position`` names the log position
    of this state, ``<serial>.<head>`` (the head a hash of the whole history up to the serial;
    the bare serial at serial 0): the answer's ``ETag``, or
    the id of the stream's ``game`` event; pass it as ``events(game_id, after=position)`` to
    follow the game from this very state (None: the server named none)."""

    id: str
    game: str
    serial: int
    to_move: int | None
    status: str
    scores: list | None
    result: dict | None
    token: str | None = None
    legal_moves: list | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)
    position: str | None = field(default=None, compare=False)

    @property
    def finished(self) -> bool:
        """The game is over."""
        return self.status == "finished"

    @classmethod
    def from_json(cls, data: dict, position: str | None = None) -> Game:
        return cls(id=data["id"], game=data["game"], serial=data["serial"],
                   to_move=None if data["status"] == "finished" else data["to_move"],
                   status=data["status"], scores=data.get("scores"),
                   result=data.get("result"), token=data.get("write_token"),
                   legal_moves=([_move(m) for m in data["legal_moves"]]
                                if data.get("legal_moves") is not None else None), raw=data,
                   position=position)


@dataclass(frozen=True)
class Move:
    """A move of a game's log: its ``serial``, the ``move``, the ``player`` who made it and how
    many boxes (or blocks) it ``completed``. From ``play`` and ``events``, also what it left:
    the ``scores``, the side ``to_move`` next (None once finished) and the game's ``status``
    (``scores`` and ``status`` are None in the entries of ``moves``, which the server sends
    without them; ``to_move`` too from an older server).
    ``replayed``: ``play`` got the answer of an earlier attempt of the same move (the move was
    stored once). ``position``: the log position after this move (``<serial>.<head>``, see
    :attr:`Game.position`), to resume a later ``events`` call from: from ``play`` the one the
    server answered, from ``events`` the event's id (None from ``moves``)."""

    serial: int
    move: list
    player: int
    completed: int
    scores: list | None = None
    to_move: int | None = None
    status: str | None = None
    replayed: bool = False
    raw: dict = field(default_factory=dict, repr=False, compare=False)
    position: str | None = field(default=None, compare=False)

    @property
    def finished(self) -> bool:
        """The move ended the game."""
        return self.status == "finished"

    @classmethod
    def from_json(cls, data: dict, replayed: bool = False,
                  position: str | None = None) -> Move:
        return cls(serial=data["serial"], move=_move(data["move"]), player=data["player"],
                   completed=data["completed"], scores=data.get("scores"),
                   to_move=data.get("to_move"), status=data.get("status"), replayed=replayed,
                   raw=data, position=position or data.get("position"))


@dataclass(frozen=True)
class GameReset:
    """What ``events`` yields, among the moves, when the game's log is no longer the history
    the stream had handed out: a Redis failover lost moves it had yielded (and others may have
    taken their serials), which the server finds from the ``<serial>.<head>`` the stream
    resumed with, or notices on the open stream (its event ``game``).

    ``game`` is the log's whole current state (a :class:`Game`, ``position`` set). One head
    cannot tell which of the moves yielded were lost, so whatever was built from them
    (a board, a move list, the side to move) must be rebuilt from ``game`` (and
    ``moves(game_id)`` for the list). The stream goes on with the moves after ``game.serial``
    (none if ``game`` is finished: then it ends). ``serial``, ``to_move``, ``status``,
    ``finished``, ``scores`` and ``position`` are those of ``game``, as a :class:`Move` has
    them, so a loop that only tracks these (``serial, to_move = m.serial, m.to_move``) takes a
    reset in its stride; a loop that reads ``m.move`` or ``m.player`` must check
    ``isinstance(m, GameReset)``."""

    game: Game

    @property
    def serial(self) -> int:
        return self.game.serial

    @property
    def to_move(self) -> int | None:
        """The side to move (None once the game is over, as for a :class:`Move`)."""
        return self.game.to_move

    @property
    def status(self) -> str:
        return self.game.status

    @property
    def finished(self) -> bool:
        return self.game.finished

    @property
    def scores(self) -> list | None:
        return self.game.scores

    @property
    def position(self) -> str | None:
        return self.game.position


@dataclass(frozen=True)
class Analysis:
    """A finished analysis (``GET /v1/analyses/{id}`` when ``status`` is ``finished``).

    ``best_move`` (None when the position is over), its ``value`` for the side to move,
    ``bound`` (``exact``, ``lower``, ``upper`` or ``estimate``), ``exact``, the principal
    variation ``pv``, the ranked ``moves`` (dicts with ``move``, ``value``, ``exact``, ``bound``,
    ``lower``, ``upper`` and, for an estimate, the ``depth`` it comes from),
    ``depth`` and ``nodes``; ``lower`` / ``upper``: the proven bounds of the value (None:
    none proven; both equal ``value`` when it is exact); ``time_used_ms``: the search time
    the analysis took, in milliseconds (the result's ``time_used_ms``, or its deprecated
    ``time_ms`` from an older server; None if it has neither); ``id`` is the job's id. The
    engine's whole result is ``raw["result"]``."""

    id: str
    best_move: Any
    value: float
    bound: str
    exact: bool
    pv: list
    moves: list
    depth: int
    nodes: int
    lower: float | None = None
    upper: float | None = None
    time_used_ms: float | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict) -> Analysis:
        result: dict[str, Any] = data["result"]
        return cls(id=data["id"], best_move=_move(result.get("best_move")),
                   value=result["value"], bound=result["bound"], exact=result["exact"],
                   pv=result.get("pv", []), moves=result.get("moves", []),
                   depth=result.get("depth", 0), nodes=result.get("nodes", 0),
                   lower=result.get("lower"), upper=result.get("upper"),
                   time_used_ms=result.get("time_used_ms", result.get("time_ms")), raw=data)


@dataclass(frozen=True)
class Webhook:
    """A webhook of a game (``add_webhook``): its ``id``, the ``url`` deliveries go to, the
    ``events`` it is sent and the ``secret`` (``whsec_...``) to verify them with
    (:func:`boxfish.client.verify_webhook`); the secret is shown only once."""

    id: str
    url: str
    events: list
    secret: str | None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict) -> Webhook:
        return cls(id=data["id"], url=data["url"], events=list(data.get("events", [])),
                   secret=data.get("secret"), raw=data)


@dataclass(frozen=True)
class Review:
    """A finished game review (``GET /v1/reviews/{id}`` once ``finished``).

    ``game_id`` and ``position``, the log position reviewed (``<serial>.<head>``); ``moves``:
    one dict per move of the game (``serial``, ``move``, ``player``, ``value_before``,
    ``value_played``, ``loss``, ``exact``, ``lower``, ``upper``, ``best_moves``,
    ``judgement``); ``players``: per player ``total_loss``, ``accuracy``, ``judgements``.
    The whole answer is ``raw``."""

    id: str
    game_id: str
    game: str
    position: str
    time_ms: int
    moves: list
    players: list
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict) -> Review:
        return cls(id=data["id"], game_id=data["game_id"], game=data["game"],
                   position=data["position"], time_ms=data["time_ms"],
                   moves=data.get("moves") or [], players=data.get("players") or [],
                   raw=data)
