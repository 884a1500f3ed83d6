"""The games application service: create games, rebuild their state, append moves.

Generic over the engine's Game protocol: a game is whatever ``engine.load_game(name, **params)``
returns; moves are parsed with ``game.parse_move`` and shown with ``state.to_dict()``.

Appending a move: idempotency key lookup -> serial check -> legality check by the engine
against the state at the current serial -> the recorder's atomic compare-and-append, whose
serial and head check guarantees that the state the move was checked against was still the
current one.

Every cached state carries the head of the log it was built to (:func:`next_head`, a chain, so
it names the whole history). A failover may lose the last moves of a game and let others be
appended at their serials: a state whose head is not the log's is never used, to answer
(:meth:`GameService.state_at` compares it with the meta's head) nor to judge a move (the
append carries it and the recorder refuses it with :class:`StaleHead`); the game's cached
states are then dropped and rebuilt from the log.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Iterable

from cachetools import LRUCache

from boxfish import engine
from boxfish.engine import IllegalMove

from ..errors import (
    GameIdTaken,
    IdempotencyKeyReused,
    SeatTaken,
    SerialConflict,
    StaleHead,
)
from ..store.events import MoveEvent
from ..store.game_meta import EngineSeat, GameMeta
from ..store.recorder import Appended, Recorder, next_head, replay_head
from .state_cache import StateCache

log = logging.getLogger(__name__)

#: How often an append without an explicit serial is retried after losing a race.
APPEND_RETRIES = 8


def _urlsafe_not_dash(nbytes: int) -> str:
    """``secrets.token_urlsafe(nbytes)`` that does not begin with ``-``, so that it can follow
    a command-line option (``--game ID``) without being read as one."""
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token


def new_game_id() -> str:
    return _urlsafe_not_dash(9)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(meta: GameMeta, token: str) -> bool:
    """Whether ``token`` is the game's write token (compared in constant time)."""
    return hmac.compare_digest(token_hash(token), meta.token_sha256)


def fingerprint(body: dict) -> str:
    """A digest of a request body, independent of key order and whitespace."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


#: A head as the store keeps it (:func:`next_head`): 16 lowercase hex digits.
HEAD_RE = re.compile(r"[0-9a-f]{16}")


def status_of(state) -> str:
    return "finished" if state.is_terminal() else "in_progress"


def game_view(game_id: str, game, state) -> dict:
    """The JSON shown for a game: its id, parameters and ``state.to_dict()``; ``to_move`` is
    None once the game is over, as in the answer of the move that ended it."""
    view = {"id": game_id, "game": game.name, **game.params(), **state.to_dict()}
    view["serial"] = state.serial
    view["status"] = status_of(state)
    if state.is_terminal():
        view["to_move"] = None
    return view


def move_event(state, played, now_ms: int) -> MoveEvent:
    scores = getattr(state, "scores", None)
    if scores is None:  # a game whose State has no scores property shows them in to_dict
        scores = state.to_dict().get("scores")
    return MoveEvent(serial=played.serial, move=tuple(played.move), player=played.player,
                     completed=played.completed,
                     scores=tuple(scores) if scores is not None else None,
                     to_move=None if state.is_terminal() else state.to_move,
                     status=status_of(state), at=now_ms)


class GameListener:
    """Told of what happens to games, after it is stored (webhooks, the engine seat).

    Called in the thread that created the game or appended the move, after the store
    acknowledged it and before the client is answered; a listener must be quick (enqueue
    work, do not do it) and must not raise: an exception is logged and swallowed, since the
    move is stored whatever a listener does. ``move_appended`` is called for a replayed
    append too (``replayed=True``: a retry of an append whose answer the client did not
    get, which may have died before its listeners ran), so what a listener enqueues must be
    idempotent, keyed by game and serial. The base class does nothing."""

    def game_created(self, meta: GameMeta) -> None:
        """A game was stored (serial 0)."""

    def move_appended(self, meta: GameMeta, event: MoveEvent, replayed: bool,
                      webhooks: tuple[dict, ...] | None = None) -> None:
        """``event`` is in the log of ``meta``'s game (``meta``'s static fields only).
        ``webhooks``: the game's webhook registrations as the store read them in the step
        that appended ``event`` (:attr:`Appended.webhooks`), or None when not
        read (a replay): then a listener that needs them reads them itself."""


class GameService:
    def __init__(self, recorder: Recorder, cache: StateCache,
                 listeners: Iterable[GameListener] = ()) -> None:
        self.recorder = recorder
        self.cache = cache
        self.listeners: list[GameListener] = list(listeners)
        self._lock = threading.Lock()
        #: game id -> metadata seen last, as many games as the state cache holds states.
        self._static: LRUCache[str, GameMeta] = LRUCache(cache.max_entries)

    # -- games ---------------------------------------------------------------------------

    def create(self, game, engine_seat: EngineSeat | None = None, *,
               game_id: str | None = None, token: str | None = None) -> tuple[GameMeta, str]:
        """Store a new game of ``game`` (an engine Game), with the side the engine plays if
        any; returns its metadata and the secret write token (only its SHA-256 is stored).
        An id that is taken already (:class:`~service.errors.GameIdTaken`) is drawn again;
        the recorder's other errors are raised. ``game_id`` and ``token``: this id and write
        token instead of random ones (an import's, :mod:`.records`); a taken id then raises
        GameIdTaken."""
        token = token if token is not None else _urlsafe_not_dash(24)
        while True:
            meta = GameMeta(game_id=game_id or new_game_id(), game=game.name,
                            params=game.params(), token_sha256=token_hash(token),
                            created_at=int(time.time() * 1000), engine=engine_seat)
            try:
                self.recorder.create_game(meta)
                break
            except GameIdTaken:  # practically never, for a random id
                if game_id is not None:
                    raise
                continue
        self.cache.put(meta.game_id, 0, game.new_state(), "")
        self._remember(meta)
        self._tell("game_created", meta)
        return meta, token

    def _tell(self, what: str, *args) -> None:
        for listener in self.listeners:
            try:
                getattr(listener, what)(*args)
            except Exception:  # the game or move is stored: answer it
                log.exception("game listener %r failed on %s", listener, what)

    def meta(self, game_id: str) -> GameMeta:
        """The game's metadata, read from the store (current serial and status)."""
        meta = self.recorder.get_meta(game_id)
        self._remember(meta)
        return meta

    def static_meta(self, game_id: str) -> GameMeta:
        """The game's metadata as cached in this process: only the fields that never change
        (game, params, token hash) are to be trusted, not ``serial`` or ``status``."""
        with self._lock:
            meta = self._static.get(game_id)  # a read marks it recently used
        return meta if meta is not None else self.meta(game_id)

    def _remember(self, meta: GameMeta) -> None:
        with self._lock:
            self._static[meta.game_id] = meta

    @staticmethod
    def game_of(meta: GameMeta):
        return engine.load_game(meta.game, **meta.params)

    def state_at(self, meta: GameMeta, serial: int | None = None):
        """The (shared, do not mutate) state of the game after ``serial`` moves (default: the
        serial in ``meta``, which must then have been read from the store: its head is
        checked); replays only the events after the nearest cached state. Raises
        :class:`SerialConflict` if the log is shorter than ``serial``."""
        if serial is None or serial == meta.serial:
            return self._entry_at(meta, meta.serial, meta.head)[0]
        return self._entry_at(meta, serial, None)[0]

    def _entry_at(self, meta: GameMeta, serial: int, known_head: str | None):
        """``(state, head)`` at ``serial``. ``known_head``: the log's head at ``serial`` if
        known (from metadata just read): a cached state or base with another head is stale and
        the game's cached states are dropped."""
        game_id = meta.game_id
        hit = self.cache.entry(game_id, serial)
        if hit is not None:
            if known_head is None or hit[1] == known_head:
                return hit
            self.cache.drop(game_id)  # built to a history the log no longer has
        game = self.game_of(meta)
        for base in (self.cache.nearest_entry(game_id, serial), None):
            start, state, head = ((base[0], base[1].copy(), base[2]) if base
                                  else (0, game.new_state(), ""))
            events = self.recorder.read(game_id, after=start, upto=serial)
            state = engine.replay(game, ((e.serial, e.move) for e in events), state=state)
            head = replay_head(head, events)
            if state.serial != serial:
                self.cache.drop(game_id, above=state.serial)
                self.cache.put(game_id, state.serial, state, head)
                raise SerialConflict(state.serial)
            if known_head is not None and head != known_head:
                if base is not None:  # the base was stale: rebuild from the start of the log
                    self.cache.drop(game_id)
                    continue
                # The whole log replayed: this is the true state; the store names it.
                head = known_head
            break
        self.cache.put(game_id, serial, state, head)
        return state, head

    # -- moves ---------------------------------------------------------------------------

    def append(self, meta: GameMeta, raw_move, serial: int | None,
               idempotency_key: str | None, body_fingerprint: str,
               refuse_seat: int | None = None) -> Appended:
        """Validate and append one move (see :meth:`_append`), then tell the listeners.
        ``refuse_seat``: a side whose moves are refused here (:class:`SeatTaken` when it is to
        move in the log's current state): the engine's seat, for a client's append."""
        appended = self._append(meta, raw_move, serial, idempotency_key, body_fingerprint,
                                refuse_seat)
        self._tell("move_appended", meta, appended.event, appended.replayed, appended.webhooks)
        return appended

    def _append(self, meta: GameMeta, raw_move, serial: int | None,
                idempotency_key: str | None, body_fingerprint: str,
                refuse_seat: int | None = None) -> Appended:
        """Validate and append one move to the game of ``meta`` (its static fields are used).

        One Redis round trip in the common case: the state at the expected serial - 1 comes
        from the cache, and the append script checks that it is still the current one. The
        expected serial is the client's ``serial`` or, without one, the newest serial this
        process has seen (retried on conflict). Raises IllegalMove, SerialConflict,
        SeatTaken, IdempotencyKeyReused, GameNotFound.
        """
        game = self.game_of(meta)
        game_id = meta.game_id
        try:
            move = game.parse_move(raw_move)
            for _ in range(APPEND_RETRIES):
                appended = self._try_append(meta, move, serial, idempotency_key,
                                            body_fingerprint, refuse_seat)
                if appended is not None:
                    return appended
            raise SerialConflict(self.recorder.get_meta(game_id).serial)
        except (IllegalMove, SerialConflict, SeatTaken) as exc:
            # A retry of an append that succeeded meets the move already drawn, the serial
            # taken or the engine to move: answer from the idempotency record if there is one.
            if idempotency_key is not None:
                replay = self._replay_idempotent(game_id, idempotency_key, body_fingerprint)
                if replay is not None:
                    return replay
            if isinstance(exc, IllegalMove) and serial is not None:
                current = self.recorder.get_meta(game_id).serial
                if serial != current + 1:  # the serial is wrong as well: that comes first
                    raise SerialConflict(current) from exc
            raise

    def _try_append(self, meta: GameMeta, move, serial: int | None,
                    idempotency_key: str | None, body_fingerprint: str,
                    refuse_seat: int | None) -> Appended | None:
        """One try of :meth:`_append`: judge the move against this process's state at the
        expected serial - 1 and append it. None when that state turned out not to be the
        log's current one (the cache now holds the log's: try again); the refusals are
        raised."""
        game_id = meta.game_id
        expected = serial if serial is not None else self._next_serial(game_id)
        try:
            # meta is the static metadata: its serial and head are not the log's.
            base, head = self._entry_at(meta, expected - 1, None)
        except SerialConflict as exc:  # the log is shorter than the client thinks
            raise SerialConflict(self.recorder.get_meta(game_id).serial) from exc
        if refuse_seat is not None and not base.is_terminal() and base.to_move == refuse_seat:
            # Refused only if this is the log's current state, as an illegal move is.
            current = self._moved_on(meta, expected, head)
            if current is None:
                raise SeatTaken(expected - 1, refuse_seat)
            if serial is not None:
                raise SerialConflict(current.serial)
            self._catch_up(meta, current)
            return None
        state = base.copy()
        try:
            played = state.play(move)
        except IllegalMove:
            current = self._moved_on(meta, expected, head)
            if current is None or (serial is not None and current.serial != expected - 1):
                raise  # (a wrong serial is answered by _append as the conflict it also is)
            self._catch_up(meta, current)
            return None
        event = move_event(state, played, int(time.time() * 1000))
        return self._store(meta, expected, state, event, head, serial is not None,
                           idempotency_key, body_fingerprint)

    def _next_serial(self, game_id: str) -> int:
        """The serial a move without one is appended at: after the newest this process has
        seen."""
        latest = self.cache.latest(game_id)
        return (latest if latest is not None else self.meta(game_id).serial) + 1

    def _moved_on(self, meta: GameMeta, expected: int, head: str) -> GameMeta | None:
        """The game's metadata now if its log is not at ``expected - 1`` with ``head`` (the
        state this process judged the move against): another API process appended, or this
        state has a history the log lost in a failover. None if it is: the judgement
        stands."""
        current = self.recorder.get_meta(meta.game_id)
        if current.serial == expected - 1 and current.head == head:
            return None
        return current

    def _catch_up(self, meta: GameMeta, current: GameMeta) -> None:
        """Drop the game's states beyond the log (lost in a failover) and build the current
        one, to judge the move again."""
        self.cache.drop(meta.game_id, above=current.serial)
        self._entry_at(meta, current.serial, current.head)

    def _store(self, meta: GameMeta, expected: int, state, event: MoveEvent, head: str,
               serial_given: bool, idempotency_key: str | None,
               body_fingerprint: str) -> Appended | None:
        """The recorder's compare-and-append of ``event`` (``state`` after it) at
        ``expected``, on the log position ``head``. None when the log is not there: another
        writer got there first (a conflict, raised when the client gave the serial) or a
        failover lost moves that this state has (a stale head); the cache is brought up to
        date first."""
        game_id = meta.game_id
        try:
            appended = self.recorder.append(game_id, expected, event, idempotency_key,
                                            body_fingerprint, expected_head=head)
        except StaleHead:
            # The serial is right but this process's state is not the log's (a failover lost
            # moves, others took their serials): forget the game's states, rebuild from the
            # log and judge the move again.
            self.cache.drop(game_id)
            return None
        except SerialConflict as exc:
            self.cache.drop(game_id, above=exc.current_serial)  # lost in a failover
            if serial_given:
                raise
            # Another writer got there first: learn the current state and retry.
            self._entry_at(meta, exc.current_serial, None)
            return None
        if not appended.replayed:
            self.cache.put(game_id, event.serial, state, next_head(head, event))
        return appended

    def _replay_idempotent(self, game_id: str, key: str, body_fingerprint: str):
        rec = self.recorder.lookup_idempotency(game_id, key)
        if rec is None:
            return None
        fp, done = rec
        if fp != body_fingerprint:
            raise IdempotencyKeyReused(done)
        event = self.recorder.read(game_id, after=done - 1, upto=done)[0]
        return Appended(event, replayed=True)

    def head_at(self, meta: GameMeta, serial: int) -> str:
        """The log's head at ``serial`` (0 to ``meta.serial``; ``meta`` read from the store):
        ``meta.head`` at its own serial, ``""`` at 0, else the chain replayed from the log's
        events 1 to ``serial`` (:func:`replay_head`; one read of at most ``max_moves``
        events). Raises :class:`SerialConflict` if the log is shorter than ``serial`` (it
        changed since ``meta`` was read)."""
        if serial == 0:
            return ""
        if serial == meta.serial:
            return meta.head
        events = self.recorder.read(meta.game_id, after=0, upto=serial)
        if len(events) != serial:
            raise SerialConflict(len(events))
        return replay_head("", events)

    def moves(self, meta: GameMeta, after: int = 0) -> list[MoveEvent]:
        """The moves after serial ``after`` up to ``meta.serial``: a snapshot that agrees with
        the serial read with it, however many moves are appended meanwhile."""
        if after >= meta.serial:  # a follower that is up to date: no second look-up
            return []
        return self.recorder.read(meta.game_id, after=after, upto=meta.serial)

