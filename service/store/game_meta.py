"""A game's metadata as the store keeps it: :class:`GameMeta`, with its :class:`EngineSeat`.

The static fields (game, parameters, token hash, creation time, engine seat) are set when the
game is created and never change; ``serial``, ``status`` and ``head`` follow its log.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineSeat:
    """The engine plays ``seat`` (0 moves first) of a game, searching ``time_ms`` per move."""

    seat: int
    time_ms: int

    def to_dict(self) -> dict:
        return {"seat": self.seat, "time_ms": self.time_ms}

    @classmethod
    def from_dict(cls, data: dict) -> EngineSeat:
        return cls(seat=int(data["seat"]), time_ms=int(data["time_ms"]))


@dataclass(frozen=True, slots=True)
class GameMeta:
    game_id: str
    game: str
    params: dict
    token_sha256: str
    created_at: int  # ms since the epoch
    serial: int = 0
    status: str = "in_progress"
    #: The identity of the log position ``serial`` (:func:`service.store.recorder.next_head`;
    #: ``""`` at serial 0).
    head: str = ""
    #: The side the engine plays, set when the game is created and never changed; None: both
    #: sides are played by clients.
    engine: EngineSeat | None = None
