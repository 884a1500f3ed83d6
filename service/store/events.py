"""The domain event of the move store and its stored form.

A :class:`MoveEvent` records one accepted move together with what it did (who played it, how
many boxes/blocks it completed, the scores and side to move afterwards). Only ``serial`` and
``move`` are needed to rebuild a game (``engine.replay``); the rest lets the API answer list,
stream and idempotent-retry requests without replaying.

The stored form is one compact JSON object per event (see :meth:`MoveEvent.to_json`); the
Redis recorder keeps it in the field ``e`` of a Stream entry whose id is ``<serial>-0``, and
the log's head after it (:func:`service.store.recorder.next_head`) in the field ``h``. The head
is not part of the event's JSON: it is the log's, read back as :attr:`MoveEvent.head`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


def position_tag(serial: int, head: str) -> str:
    """The name of a position of a game's log, as its ``ETag`` and its event stream's event
    ids show it: ``<serial>.<head>`` (e.g. ``3.5f0c2a9e41b7d803``), so that a log rewritten to
    another history at the same serial (a failover that lost moves, others appended at their
    serials) has other names. The bare serial at serial 0 (there is one empty log)."""
    return str(serial) if serial == 0 else f"{serial}.{head}"


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
    #: The log's head after this event, as the store read it back (None: an event not read
    #: from a log). Not compared.
    head: str | None = field(default=None, compare=False)

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
    def from_json(cls, text: str | bytes, head: str | None = None) -> MoveEvent:
        """The event stored as ``text``, with the log's ``head`` after it if given."""
        d = json.loads(text)
        return cls(serial=d["s"], move=tuple(d["m"]), player=d["p"], completed=d["c"],
                   scores=tuple(d["sc"]) if d["sc"] is not None else None, to_move=d["tm"],
                   status=d["st"], at=d["at"], head=head)

    def summary(self) -> dict:
        """The move itself: its serial, move, player and the boxes it completed."""
        return {"serial": self.serial, "move": list(self.move), "player": self.player,
                "completed": self.completed}

    def entry(self) -> dict:
        """The entry of ``GET /v1/games/{id}/moves``: the :meth:`summary` and the side
        ``to_move`` after the move (None once the game is over)."""
        return {**self.summary(), "to_move": self.to_move}

    def response(self) -> dict:
        """The body of a successful ``POST /v1/games/{id}/moves`` (also the SSE ``move`` data),
        with the log ``position`` after the move when its head is known (read from a log)."""
        out = {**self.summary(),
               "scores": list(self.scores) if self.scores is not None else None,
               "to_move": self.to_move, "status": self.status}
        if self.head is not None:
            out["position"] = position_tag(self.serial, self.head)
        return out
