"""The domain event of the move store and its stored form.

A :class:`MoveEvent` records one accepted move together with what it did (who played it, how
many boxes/blocks it completed, the scores and side to move afterwards). Only ``serial`` and
``move`` are needed to rebuild a game (``engine.replay``); the rest lets the API answer list,
stream and idempotent-retry requests without replaying.

The stored form is one compact JSON object per event (see :meth:`MoveEvent.to_json`); the
Redis recorder keeps it in the single field ``e`` of a Stream entry whose id is ``<serial>-0``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MoveEvent:
    serial: int
    move: tuple
    player: int
    completed: int
    scores: tuple | None
    to_move: int | None
    status: str  # "in_progress" | "finished"
    at: int  # server time, milliseconds since the epoch

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def to_json(self) -> str:
        return json.dumps({
            "s": self.serial, "m": list(self.move), "p": self.player, "c": self.completed,
            "sc": list(self.scores) if self.scores is not None else None,
            "tm": self.to_move, "st": self.status, "at": self.at,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> MoveEvent:
        d = json.loads(text)
        return cls(serial=d["s"], move=tuple(d["m"]), player=d["p"], completed=d["c"],
                   scores=tuple(d["sc"]) if d["sc"] is not None else None, to_move=d["tm"],
                   status=d["st"], at=d["at"])

    def summary(self) -> dict:
        """The entry of ``GET /v1/games/{id}/moves``."""
        return {"serial": self.serial, "move": list(self.move), "player": self.player,
                "completed": self.completed}

    def response(self) -> dict:
        """The body of a successful ``POST /v1/games/{id}/moves`` (also the SSE ``move`` data)."""
        return {**self.summary(),
                "scores": list(self.scores) if self.scores is not None else None,
                "to_move": self.to_move, "status": self.status}
