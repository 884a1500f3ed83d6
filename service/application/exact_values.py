"""Exact values, proven once and answered everywhere: the application side of the store of exact
values (:class:`~service.store.exact_values.ExactValueStore`).

A Dots-and-Boxes position is named by its board and its canonical form under the board's
symmetries (``Tables.canonical``), so mirrored positions share one entry. An entry holds the
exact value for the player to move (the future boxes' margin, whatever the score), the exact
values of the best moves proven with it (lines of the canonical frame; ``all`` when every legal
move is there), the engine's version and the seconds the proof took.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from importlib import metadata

import redis

from boxfish.engine.dots.search.board import tables

from ..store.exact_values import ExactValueStore

GAME = "dots-and-boxes"

log = logging.getLogger(__name__)


def _engine_version() -> str:
    try:
        return metadata.version("boxfish")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "unknown"


#: The version of the engine that proves what this process stores.
ENGINE_VERSION = _engine_version()


@dataclass(frozen=True, slots=True)
class StoredValue:
    """A stored exact value, in the frame of the position asked for: ``value`` for the player
    to move; ``moves``: (line, value) of the best moves proven with it, best first; ``all``:
    every legal move is among them; ``engine``: the version that proved it; ``proof_s``: the
    seconds the proof took; ``stored_at``: when (Unix seconds)."""

    value: int
    moves: tuple[tuple[int, int], ...]
    all: bool
    engine: str
    proof_s: float
    stored_at: float

    def covers(self, multipv: int | None) -> bool:
        """Whether it answers an analysis showing ``multipv`` moves (None: every move)."""
        return self.all or (multipv is not None and multipv <= len(self.moves))


class ExactValues:
    """Reads and writes exact values of Dots-and-Boxes positions in ``store``."""

    def __init__(self, store: ExactValueStore) -> None:
        self.store = store

    @staticmethod
    def _name(width: int, height: int, canonical: int) -> str:
        return f"{GAME}:{width}x{height}:{canonical:x}"

    def lookup(self, width: int, height: int, drawn: int) -> StoredValue | None:
        """The stored value of the position ``drawn`` (lines as bits), or None."""
        t = tables(width, height)
        canonical, s = t.canonical(drawn)
        e = self.store.get(self._name(width, height, canonical))
        if e is None:
            return None
        inv = t.inv[s]
        return StoredValue(value=e["value"], moves=tuple((inv[ln], v) for ln, v in e["moves"]),
                           all=e["all"], engine=e["engine"], proof_s=e["proof_s"],
                           stored_at=e["stored_at"])

    def record(self, width: int, height: int, drawn: int, value: int,
               moves: list[tuple[int, int]], all_moves: bool, proof_s: float,
               engine: str = ENGINE_VERSION) -> int:
        """Store the exact ``value`` of ``drawn`` with ``moves`` ((line, exact value), best
        first; ``all_moves``: every legal move), proven in ``proof_s`` seconds. An entry
        already stored with more moves keeps them. Returns the entries evicted."""
        t = tables(width, height)
        canonical, s = t.canonical(drawn)
        perm = t.syms[s]
        name = self._name(width, height, canonical)
        entry = {"value": int(value), "moves": [[perm[ln], int(v)] for ln, v in moves],
                 "all": bool(all_moves), "engine": engine, "proof_s": round(proof_s, 3),
                 "stored_at": round(time.time(), 3)}
        old = self.store.peek(name)
        if old is not None:
            if old["all"] or (len(old["moves"]) > len(entry["moves"]) and not entry["all"]):
                entry["moves"], entry["all"] = old["moves"], old["all"]
            entry["proof_s"] = max(entry["proof_s"], old["proof_s"])
        return self.store.put(name, entry, entry["proof_s"])

    def record_analysis(self, state, result: dict) -> bool:
        """Store what an analysis of ``state`` (an engine state) proved (``result``:
        ``Analysis.to_dict()``): its value when exact, with the exact moves that lead its
        list. Returns whether it stored anything (only exact Dots-and-Boxes values are)."""
        if result.get("game") != GAME or not result.get("exact"):
            return False
        game = state.game
        params = game.params()
        moves = []
        for m in result.get("moves") or []:
            if not m.get("exact"):
                break
            moves.append((game.move_to_action(tuple(m["move"])), int(m["value"])))
        legal = len(state.legal_moves())
        self.record(params["width"], params["height"], state.drawn, int(result["value"]),
                    moves, len(moves) == legal, (result.get("time_ms") or 0) / 1000)
        return True

    def record_quietly(self, state, result: dict) -> None:
        """:meth:`record_analysis`, logging instead of raising a Redis error: the store is a
        cache, and its loss costs searches only."""
        try:
            self.record_analysis(state, result)
        except redis.RedisError:
            log.warning("could not store an exact value", exc_info=True)
