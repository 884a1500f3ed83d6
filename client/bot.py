"""The reference bot (``boxfish bot``): plays one seat of a game with the server's analyses.

It reads the game's state, then follows its event stream; whenever its seat is to move (in
Dots and Boxes completing a box gives the same side another move) it asks for the analysis
of the game at the serial it knows (``POST /v1/games/{id}/analyses`` with ``at``) and plays
the best move with ``serial`` = that serial + 1. A SerialConflict (another writer moved) makes
it read the state again. It survives the API restarting under it: the client retries its
requests, and the event stream resumes from the last serial it saw.

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
        """Play until the game is finished. Raises the client's errors."""
        game = self.api.state(self.game_id)
        serial, to_move, finished = game.serial, game.to_move, game.finished
        stream = self.api.events(self.game_id, after=serial)
        try:
            while not finished:
                if to_move == self.seat:
                    played = self._play(serial)
                    if played is None:  # someone else moved: start again from the store
                        game = self.api.state(self.game_id)
                        serial, to_move, finished = game.serial, game.to_move, game.finished
                        continue
                    serial, to_move, finished = played.serial, played.to_move, played.finished
                    continue
                move = next(stream, None)
                if move is None:  # the stream ended: the game is over
                    game = self.api.state(self.game_id)
                    serial, to_move, finished = game.serial, game.to_move, game.finished
                    continue
                if move.serial <= serial:
                    continue  # a move this bot made (or read) already
                self._say(f"serial {move.serial}: seat {move.player} played {move.move}")
                serial, to_move, finished = move.serial, move.to_move, move.finished
        finally:
            stream.close()
        game = self.api.state(self.game_id)
        self._say(f"game over at serial {game.serial}: scores {game.scores}, "
                  f"result {game.result}")

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
