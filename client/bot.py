"""The reference bot (``boxfish bot``): plays one seat of a game with the server's analyses.

It reads the game's state, then follows its event stream; whenever its seat is to move (in
Dots and Boxes completing a box gives the same side another move) it asks for the analysis
of the game at the serial it knows (``POST /v1/games/{id}/analyses`` with ``at``) and plays
the best move with ``serial`` = that serial + 1. A SerialConflict (another writer moved) makes
it read the state again. It survives the API restarting under it: the client retries its
requests, and the event stream resumes from the last position it saw (``<serial>.<head>``).

It survives a store failover that lost moves, too: the stream starts from the state's position
(its ETag), so the server checks every resumption against the log, and when the log no longer
has the history the bot followed, the stream yields a :class:`~boxfish.client.GameReset`; the
bot then takes the serial, the side to move and the status of the log's state (logging "the
game's history was rewritten") and goes on: it moves at once if its seat is to move there.
Its own moves come back on the stream only after it has played them, so when its turn ends it
reads the state and, if the log is at its last move, follows from that state's position (so a
later loss of its moves is a reset too); a log already short of its moves is taken at once. A
move of its own replaced at its serial by another writer's before the stream had it (the log
having moved on by then) shows up as that serial's move: the bot takes it in place of its own.

Exit status: 0 when the game is finished; 2 when the server refuses for good (401, 403, 404:
a wrong token or game); 1 on any other error (the server unreachable after the client's
retries, a move refused). One line per move goes to stderr, and one per retry or
reconnection of the client (its INFO lines, which a library keeps quiet by default).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from .client import Client
from .errors import BoxfishError, Forbidden, NotFound, SerialConflict, Unauthorized
from .types import GameReset


class Bot:
    """Plays ``seat`` (0 or 1) of ``game_id`` through ``api`` (a :class:`Client` holding the
    game's write token), each move searched for ``time_ms``; ``out`` gets the log lines."""

    def __init__(self, api: Client, game_id: str, seat: int, time_ms: int,
                 out: TextIO = sys.stderr) -> None:
        self.api = api
        self.game_id = game_id
        self.seat = seat
        self.time_ms = time_ms
        self.out = out

    def _say(self, text: str) -> None:
        print(f"boxfish bot (seat {self.seat}): {text}", file=self.out, flush=True)

    def run(self) -> None:
        """Play until the game is finished (the log's state, after any reset). Raises the
        client's errors."""
        game = self.api.state(self.game_id)
        serial, to_move, finished = game.serial, game.to_move, game.finished
        # From the state's position (its ETag): the server checks it is still the log's.
        stream = self.api.events(self.game_id, after=game.position or serial)
        mine = None  # the last move this bot played
        try:
            while not finished:
                if to_move == self.seat:
                    played = self._play(serial)
                    if played is None:  # someone else moved: start again from the store
                        game = self.api.state(self.game_id)
                        serial, to_move, finished = game.serial, game.to_move, game.finished
                        continue
                    mine = played
                    serial, to_move, finished = played.serial, played.to_move, played.finished
                    if to_move != self.seat and not finished:
                        # The turn is over: follow from the position the bot's moves made.
                        stream, game = self._anchor(stream, serial)
                        if game is not None:
                            serial, to_move, finished = game.serial, game.to_move, game.finished
                    continue
                event = next(stream, None)
                if event is None:  # the stream ended: the game is over
                    game = self.api.state(self.game_id)
                    serial, to_move, finished = game.serial, game.to_move, game.finished
                    continue
                if isinstance(event, GameReset):
                    self._rewritten(event)
                    serial, to_move, finished = event.serial, event.to_move, event.finished
                    continue
                if event.serial < serial or (event.serial == serial and (
                        mine is None or mine.serial != serial or mine.move == event.move)):
                    continue  # a move this bot made (or read) already
                if event.serial == serial:
                    self._say(f"serial {serial} is not the move this bot played ({mine.move}) "
                              f"but seat {event.player}'s {event.move}: the store lost it")
                else:
                    self._say(f"serial {event.serial}: seat {event.player} played "
                              f"{event.move}")
                serial, to_move, finished = event.serial, event.to_move, event.finished
        finally:
            stream.close()
        game = self.api.state(self.game_id)
        self._say(f"game over at serial {game.serial}: scores {game.scores}, "
                  f"result {game.result}")

    def _anchor(self, stream, serial: int):
        """After the bot's turn ended at ``serial`` (its own move): read the state; if the log
        is there, follow it from the state's position (``<serial>.<head>``), so that a later
        loss of the bot's own moves, which the stream had not handed out yet, is a reset too;
        if the log is short of it (its moves lost already), take the log's state. Returns the
        stream to follow and the state to go on from (None: go on as the bot was; the log
        has moved on, and the stream brings the moves)."""
        game = self.api.state(self.game_id)
        if game.serial > serial or game.position is None:
            return stream, None
        if game.serial < serial:
            self._rewritten(game)
        stream.close()
        return self.api.events(self.game_id, after=game.position), game

    def _rewritten(self, state) -> None:
        """Log that the log no longer has the history the bot followed; ``state``: the log's
        (a GameReset or a Game)."""
        self._say(f"the game's history was rewritten (the store lost moves): the log is at "
                  f"serial {state.serial}, "
                  f"{'over' if state.finished else f'seat {state.to_move} to move'}; going on "
                  f"from there")

    def _play(self, serial: int):
        """Play the best move at ``serial``; the stored move, or None on a serial conflict."""
        analysis = self.api.analyse(game_id=self.game_id, at=serial, time_ms=self.time_ms)
        if analysis.best_move is None:
            return None  # no move here: the position is over, re-read it
        try:
            played = self.api.play(self.game_id, analysis.best_move, serial=serial + 1)
        except SerialConflict as exc:
            self._say(f"serial {serial + 1} taken (the game is at {exc.current_serial}); "
                      "re-reading the game")
            return None
        self._say(f"serial {played.serial}: played {played.move} (value {analysis.value:g}, "
                  f"{analysis.bound}){' [replayed]' if played.replayed else ''}")
        return played


def run_bot(url: str, game_id: str, token: str, seat: int, time_ms: int,
            out: TextIO = sys.stderr) -> int:
    """``boxfish bot``: play the seat to the game's end; the exit status (see the module)."""
    logging.basicConfig(level=logging.WARNING, stream=out,
                        format=f"boxfish bot (seat {seat}): %(message)s")
    logging.getLogger("boxfish.client").setLevel(logging.INFO)  # its retries, reconnections
    try:
        with Client(url, token=token, retries=8) as api:
            Bot(api, game_id, seat, time_ms, out).run()
    except (Unauthorized, Forbidden, NotFound) as exc:
        print(f"boxfish bot (seat {seat}): refused: {exc}", file=out)
        return 2
    except BoxfishError as exc:
        print(f"boxfish bot (seat {seat}): {type(exc).__name__}: {exc}", file=out)
        return 1
    return 0
