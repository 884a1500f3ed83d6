"""Game records in the service: a game's log written as a record (export), and a record made
into a new game, move by move through the games service's append (import).

The record format and its parser are the engine's (:mod:`boxfish.engine.records`); here a
record is read in a named format (:data:`FORMATS`) and checked whole, by replay, before
anything is stored, so a record with a bad header or an illegal move creates nothing.

Idempotent imports: with an Idempotency-Key the new game's id and write token are derived
from the key (:func:`import_game_id`, :func:`import_token`), so a retry finds the game the
first attempt made, checks that it is the same record (same game, size and moves: else
:class:`~service.errors.ImportKeyReused`) and appends whatever moves a crash left undone;
each move is appended with the key ``import:<serial>`` and the record's fingerprint, as a
client's idempotent append. Whoever knows the key can therefore compute the token, as
whoever replays the request gets it: a key must be a secret of the client, at least
:data:`MIN_IMPORT_KEY_CHARS` characters (a random UUID).
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass

from boxfish.engine.records import Record, parse_openspiel, parse_record, write_record

from ..errors import GameIdTaken, ImportKeyReused, SerialConflict
from ..store.events import position_tag
from ..store.game_meta import GameMeta
from .games import GameService, fingerprint, token_matches

#: The record formats an import reads: the engine's own, and OpenSpiel's action sequences.
FORMATS = ("boxfish", "openspiel")
#: The fewest characters of an import's Idempotency-Key (the game's token derives from it).
MIN_IMPORT_KEY_CHARS = 16
#: The idempotency key of the move with serial N of an import.
IMPORT_MOVE_KEY = "import:{serial}"


def read_record(text: str, fmt: str = "boxfish", game=None) -> Record:
    """``text`` read in ``fmt`` (:data:`FORMATS`), every move replayed (a checked parse);
    ``game``: the game of a bare OpenSpiel action list. Raises
    :class:`~boxfish.engine.RecordError`; ValueError for an unknown format."""
    if fmt == "boxfish":
        return parse_record(text)
    if fmt == "openspiel":
        return parse_openspiel(text, game)
    raise ValueError(f"unknown record format {fmt!r}; known: {', '.join(FORMATS)}")


def _derived(purpose: str, key: str, length: int) -> str:
    digest = hashlib.sha256(f"boxfish import {purpose}\n{key}".encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()[:length]


def import_game_id(key: str) -> str:
    """The id of the game an import with Idempotency-Key ``key`` makes (16 characters of
    ``[A-Za-z0-9_-]``, starting with ``i``)."""
    return "i" + _derived("game", key, 15)


def import_token(key: str) -> str:
    """The write token of the game an import with Idempotency-Key ``key`` makes."""
    return "t" + _derived("token", key, 31)


def export_record(games: GameService, meta: GameMeta,
                  serial: int | None = None) -> tuple[str, str]:
    """The record of the game of ``meta`` (read from the store) up to ``serial`` (default:
    its serial), and the log position it was taken at (``<serial>.<head>``,
    :func:`~service.store.events.position_tag`). The record's headers: ``GameId``, ``Date``
    (the game's creation, UTC), ``Position`` (that log position), the engine's seat as a
    player if it has one; then the moves. Raises :class:`SerialConflict` if the log is
    shorter than ``serial``."""
    serial = meta.serial if serial is None else serial
    events = games.recorder.read(meta.game_id, after=0, upto=serial) if serial else []
    if len(events) != serial:
        raise SerialConflict(len(events))
    position = position_tag(serial, events[-1].head if events else "")
    headers = {"GameId": meta.game_id,
               "Date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(meta.created_at / 1000)),
               "Position": position}
    if meta.engine is not None:
        headers[f"Player{meta.engine.seat}"] = (f"Boxfish engine ({meta.engine.time_ms} ms a "
                                                "move)")
    return write_record(games.game_of(meta), [e.move for e in events],
                        headers=headers), position


@dataclass(frozen=True, slots=True)
class Imported:
    """An imported game: its metadata (read from the store after the last append), its
    write token, and whether this was a retry that found the game made already."""

    meta: GameMeta
    token: str
    replayed: bool


def import_record(games: GameService, record: Record, key: str | None = None) -> Imported:
    """Make ``record`` (read by :func:`read_record`: checked) a new game: create it, then
    append its moves one by one through :meth:`GameService.append`, each checked as a played
    move is. With an Idempotency-Key ``key`` the game's id and token derive from it (see the
    module): a retry returns the game, appending the moves a crash left undone; raises
    :class:`ImportKeyReused` when the key made a game of another record."""
    if record.state is None:
        raise ValueError("import only a checked record (read_record)")
    game = record.game
    moves = [list(m) for m in record.moves]
    body_fp = fingerprint({"game": game.name, "params": game.params(), "moves": moves})
    replayed = False
    if key is None:
        meta, token = games.create(game)
    else:
        token = import_token(key)
        try:
            meta, token = games.create(game, game_id=import_game_id(key), token=token)
        except GameIdTaken:
            meta = games.meta(import_game_id(key))
            _check_same(games, meta, game, token, moves, body_fp)
            replayed = True
    for serial in range(meta.serial + 1, len(moves) + 1):
        games.append(meta, moves[serial - 1], serial,
                     IMPORT_MOVE_KEY.format(serial=serial) if key else None,
                     body_fp if key else "")
    return Imported(games.meta(meta.game_id), token, replayed)


def _check_same(games: GameService, meta: GameMeta, game, token: str, moves: list,
                body_fp: str) -> None:
    """The game an earlier import with this key made is of this record (its game, size and
    token; its log's first moves the record's, and the record's fingerprint on its first
    imported move while the idempotency record lasts); else ImportKeyReused."""
    if (meta.game != game.name or meta.params != game.params()
            or not token_matches(meta, token)):
        raise ImportKeyReused(meta.game_id)
    if meta.serial and moves:
        done = games.recorder.lookup_idempotency(meta.game_id,
                                                 IMPORT_MOVE_KEY.format(serial=1))
        if done is not None and done[0] != body_fp:
            raise ImportKeyReused(meta.game_id)
    log = [list(e.move) for e in games.moves(meta, 0)]
    n = min(len(log), len(moves))
    if log[:n] != moves[:n]:
        raise ImportKeyReused(meta.game_id)
