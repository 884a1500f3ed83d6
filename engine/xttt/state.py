"""An Extreme Tic-Tac-Toe position: bitboards, incremental Zobrist hash and an undo stack.

The rules are the Extreme Tic-Tac-Toe rules, numbered as in the project's rules document (the
rule numbers below refer to them). Two ways in, the same in both games (see
:mod:`engine.game`): ``play(move)`` validates its input and raises :class:`IllegalMove` without
changing anything; ``legal_actions()`` / ``play_unchecked(action)`` / ``undo_unchecked()`` are
the unchecked fast path the search uses. An action id is a cell, ``row * 16 + col`` (see
:mod:`engine.xttt.tables`), what ``XtttGame.move_to_action`` returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from ..errors import IllegalMove
from ..game import Move, Played, State
from .tables import (
    BLOCK_VALUE,
    CELL_BIT,
    CELL_BLOCK,
    CELL_LOCAL,
    DRAWN,
    FULL,
    IS_WIN,
    OPEN,
    STATUS_NAMES,
    WIN_POINTS,
    free_cells,
)
from .zobrist import BONUS_KEY, CELL_KEYS, SIDE_KEY, TARGET_KEYS, full_hash

# Values of ``XtttState.over``: None while the game goes on, 0 / 1 for a pattern win by that
# player, FULL_BOARD when every block is decided without a pattern win (rule 12).
FULL_BOARD = 2


class Ending(StrEnum):
    """How a finished game ended (compares equal to, and serialises as, its string)."""

    PATTERN = "pattern"  #: a big-board pattern (rule 11)
    DRAW = "draw"        #: every block decided without one (rule 12)


def coerce_move(move: object) -> tuple[int, int]:
    """``move`` as a ``(row, col)`` tuple of ints 0..15.

    Raises IllegalMove ``malformed`` unless it is a list or tuple of exactly two ints (bools are
    not ints), ``out_of_range`` when a coordinate is off the board.
    """
    if not isinstance(move, (list, tuple)) or len(move) != 2 or \
            any(type(v) is not int for v in move):
        raise IllegalMove("malformed", move, "expected [row, col], two ints 0..15")
    r, c = move
    if not (0 <= r < 16 and 0 <= c < 16):
        raise IllegalMove("out_of_range", move, "row and col must be in 0..15")
    return r, c


class XtttState(State):
    """A mutable position: the engine's State protocol with moves ``(row, col)``, 0..15, and
    action ids ``row * 16 + col`` (``XtttGame.move_to_action`` / ``action_to_move``):

    * ``legal_moves()``, ``check(move)``, ``play(move) -> Played`` (``completed`` 1 when the move
      won a block, ``turn_passed`` False when a bonus move follows), ``undo()``, ``copy()``,
      ``serial``, ``to_move`` (0 = x, 1 = o), ``is_terminal()``, ``history``;
    * the unchecked fast path: ``legal_actions()``, ``play_unchecked(action)``,
      ``undo_unchecked()``, and the read-only attributes the search reads (``marks``,
      ``block_codes``, ``won``, ``decided``, ``last_action``, ``over``, ``hash``);
    * ``block_status()`` (16 of ``"open"``, ``"x"``, ``"o"``, ``"drawn"``, row-major),
      ``in_bonus``, ``last_move``, ``ending`` (an :class:`Ending`, ``"pattern"`` / ``"draw"``, or
      None);
    * ``result()``: None while the game goes on, else ``{"winner", "points"}``: 68 - 0 for a
      pattern win, rule-16 block values when every block is decided (the winner is then the player
      with more points, None on a tie);
    * ``to_dict()``: game, serial, to_move, status (``"in_progress"`` / ``"finished"``), result,
      ending, board (16 strings of ``.``, ``x``, ``o``), blocks, in_bonus, last_move, legal_moves,
      scores (blocks won by each player).

    Bad moves raise :class:`~engine.errors.IllegalMove` (``malformed``, ``out_of_range``,
    ``game_over``, ``occupied``, ``block_closed``, ``wrong_block``) and change nothing.
    ``XtttGame.from_board`` sets up any position; the search reports a forced pattern win
    with its distance in ``mate_in``.

    Public attributes, read-only outside this class (the search reads them directly, for
    speed): ``to_move`` (0 = x, who moves first; 1 = o); ``marks[player][block]``: the
    16-bit mask of the player's marks in a block (bit = local index, see
    :mod:`engine.xttt.tables`); ``block_codes[block]``: ``OPEN``, ``X_WON``, ``O_WON`` or
    ``DRAWN``; ``won[player]``: the big-board mask of the blocks the player won; ``decided``:
    the mask of won or drawn blocks; ``last_action``: the cell of the last mark, -1 before the
    first move; ``over``: None while the game goes on, else the player who won by a pattern or
    ``FULL_BOARD`` (rule 12); ``hash``: the incrementally kept 64-bit Zobrist hash.
    """

    __slots__ = ("game", "marks", "block_codes", "won", "decided", "to_move", "_bonus",
                 "last_action", "hash", "over", "_stack", "_base")

    def __init__(self, game) -> None:
        self.game = game
        self.marks = [[0] * 16, [0] * 16]
        self.block_codes = [OPEN] * 16
        self.won = [0, 0]
        self.decided = 0
        self.to_move = 0
        self._bonus = False  # the next move is a bonus move (rule 13)
        self.last_action = -1
        self.hash = full_hash(self.marks, 0, False, 16)
        self.over = None
        # one (cell, player, bonus, last, hash, over) per move: everything undo needs
        self._stack: list[tuple] = []
        self._base = 0  # marks already on the board when the state was set up (from_board)

    @classmethod
    def from_board(cls, game, board, to_move: int = 0, last_move=None,
                   in_bonus: bool = False) -> XtttState:
        """A position set up from ``board`` (16 strings of 16 chars ``.``, ``x``, ``o``).

        Block statuses and the game's end follow from the marks (rules 10-12). ``last_move``
        (a marked cell, or None for an open move) fixes the target block; ``in_bonus`` says
        the next move is a bonus move, which needs ``last_move`` to have won its block for
        ``to_move``. ``serial`` starts at the number of marks; ``history`` and ``undo`` only
        cover the moves played after the setup. Raises ValueError for a malformed board or an
        impossible position (both players holding a pattern in one block or on the big board).
        """
        if not isinstance(board, (list, tuple)) or len(board) != 16 or any(
                not isinstance(row, str) or len(row) != 16 or set(row) - set(".xo")
                for row in board):
            raise ValueError("board must be 16 strings of 16 characters '.', 'x' or 'o'")
        if type(to_move) is not int or to_move not in (0, 1):
            raise ValueError(f"to_move must be 0 or 1, got {to_move!r}")
        if type(in_bonus) is not bool:
            raise ValueError(f"in_bonus must be a bool, got {in_bonus!r}")
        st = cls(game)
        st._set_up(board, to_move, last_move, in_bonus)
        return st

    def _set_up(self, board, to_move: int, last_move, in_bonus: bool) -> None:
        """Put ``board`` (checked by ``from_board``) on this new state; see ``from_board``."""
        marks = self.marks
        codes = self.block_codes
        for r, row in enumerate(board):
            for c, ch in enumerate(row):
                if ch != ".":
                    i = r * 16 + c
                    marks[0 if ch == "x" else 1][CELL_BLOCK[i]] |= CELL_BIT[i]
        for b in range(16):
            mx, mo = marks[0][b], marks[1][b]
            if IS_WIN[mx] and IS_WIN[mo]:
                raise ValueError(f"both players hold a pattern in block {divmod(b, 4)}")
            if IS_WIN[mx] or IS_WIN[mo]:
                p = 0 if IS_WIN[mx] else 1
                codes[b] = p + 1
                self.won[p] |= 1 << b
            elif mx | mo == FULL:
                codes[b] = DRAWN
            if codes[b] != OPEN:
                self.decided |= 1 << b
        won = self.won
        if IS_WIN[won[0]] and IS_WIN[won[1]]:
            raise ValueError("both players hold a pattern on the big board")
        if IS_WIN[won[0]] or IS_WIN[won[1]]:
            self.over = 0 if IS_WIN[won[0]] else 1
        elif self.decided == FULL:
            self.over = FULL_BOARD
        if last_move is not None:
            try:
                r, c = coerce_move(last_move)
            except IllegalMove as exc:
                raise ValueError(f"bad last_move: {exc}") from None
            last = self.last_action = r * 16 + c
            b, bit = CELL_BLOCK[last], CELL_BIT[last]
            if not (marks[0][b] | marks[1][b]) & bit:
                raise ValueError(f"last_move {last_move!r} is an empty cell")
        if in_bonus:
            last = self.last_action
            if self.over is not None or last < 0:
                raise ValueError("in_bonus needs a last move and a game in progress")
            b, bit = CELL_BLOCK[last], CELL_BIT[last]
            if not marks[to_move][b] & bit or codes[b] != to_move + 1:
                raise ValueError("in_bonus needs last_move to have won its block for to_move")
        self.to_move = to_move
        self._bonus = in_bonus
        self.hash = self.full_hash()
        self._base = sum(m.bit_count() for m in marks[0] + marks[1])

    # ----------------------------------------------------------------- fast path (search)

    def legal_actions(self) -> list[int]:
        """Legal cells (rules 6-9), block by block in local order, unchecked fast path;
        empty when the game is over."""
        if self.over is not None:
            return []
        bx, bo = self.marks
        last = self.last_action
        if last >= 0:
            t = CELL_LOCAL[last]
            if self.block_codes[t] == OPEN:
                return list(free_cells(t, bx[t] | bo[t]))
        moves: list[int] = []
        codes = self.block_codes
        for b in range(16):
            if codes[b] == OPEN:
                moves.extend(free_cells(b, bx[b] | bo[b]))
        return moves

    def play_unchecked(self, i: int) -> int:
        """Play legal cell ``i`` for the player to move WITHOUT checks; return 1 if it won a
        block, else 0."""
        p = self.to_move
        b = CELL_BLOCK[i]
        mine = self.marks[p]
        m = mine[b] | CELL_BIT[i]
        mine[b] = m
        bonus = self._bonus
        last = self.last_action
        h = self.hash
        self._stack.append((i, p, bonus, last, h, self.over))
        h ^= CELL_KEYS[p][i] ^ TARGET_KEYS[CELL_LOCAL[last] if last >= 0 else 16] \
            ^ TARGET_KEYS[CELL_LOCAL[i]]
        self.last_action = i
        won = 0
        if IS_WIN[m]:  # rule 10: only the mover's patterns in this block
            self.block_codes[b] = p + 1
            w = self.won[p] | 1 << b
            self.won[p] = w
            self.decided |= 1 << b
            won = 1
            if IS_WIN[w]:  # rule 11
                self.over = p
        elif m | self.marks[1 - p][b] == FULL:
            self.block_codes[b] = DRAWN
            self.decided |= 1 << b
        if self.over is None and self.decided == FULL:
            self.over = FULL_BOARD  # rule 12
        if won and self.over is None and not bonus:
            self._bonus = True  # rule 13: same player again
            h ^= BONUS_KEY
        else:
            if bonus:
                h ^= BONUS_KEY  # rule 14: no second bonus
            self._bonus = False
            self.to_move = 1 - p
            h ^= SIDE_KEY
        self.hash = h
        return won

    def undo_unchecked(self) -> int:
        """Take back the last move WITHOUT checking there is one; return its cell."""
        i, p, self._bonus, self.last_action, self.hash, self.over = self._stack.pop()
        b = CELL_BLOCK[i]
        self.marks[p][b] &= ~CELL_BIT[i]
        if self.block_codes[b] != OPEN:  # the block was open before this move
            self.block_codes[b] = OPEN
            self.won[p] &= ~(1 << b)
            self.decided &= ~(1 << b)
        self.to_move = p
        return i

    # ----------------------------------------------------------------- State protocol

    @property
    def serial(self) -> int:
        return self._base + len(self._stack)

    @property
    def in_bonus(self) -> bool:
        """Whether the next move is a bonus move (the same player moving again, rule 13)."""
        return self._bonus

    @property
    def last_move(self) -> Move | None:
        """The last mark placed, by either player, or None before the first move."""
        return None if self.last_action < 0 else divmod(self.last_action, 16)

    def full_hash(self) -> int:
        """The Zobrist hash recomputed from scratch (equals :attr:`hash`)."""
        last_local = CELL_LOCAL[self.last_action] if self.last_action >= 0 else 16
        return full_hash(self.marks, self.to_move, self._bonus, last_local)

    def legal_moves(self) -> list[Move]:
        """The legal ``(row, col)`` moves in row-major order; empty when the game is over."""
        return [divmod(i, 16) for i in sorted(self.legal_actions())]

    def check(self, move: object) -> int:
        """The cell of ``move`` if it is legal here; raises IllegalMove otherwise."""
        r, c = coerce_move(move)
        if self.over is not None:
            raise IllegalMove("game_over", move, "the game is over")
        i = r * 16 + c
        b = CELL_BLOCK[i]
        bit = CELL_BIT[i]
        codes = self.block_codes
        if (self.marks[0][b] | self.marks[1][b]) & bit:
            raise IllegalMove("occupied", move, "the cell is not empty")
        if codes[b] != OPEN:
            raise IllegalMove("block_closed", move,
                              f"block {divmod(b, 4)} is {STATUS_NAMES[codes[b]]}")
        if self.last_action >= 0:
            t = CELL_LOCAL[self.last_action]
            if codes[t] == OPEN and b != t:
                raise IllegalMove("wrong_block", move, f"the move must be in block {divmod(t, 4)}")
        return i

    def play(self, move: Iterable[int]) -> Played:
        """Play ``move`` (``(row, col)``); raises IllegalMove and changes nothing if illegal."""
        i = self.check(move)
        p = self.to_move
        won = self.play_unchecked(i)
        return Played(self.serial, divmod(i, 16), p, won, self.to_move != p)

    def undo(self) -> Move:
        """Take back the last move and return it; IndexError when nothing was played."""
        if not self._stack:
            raise IndexError("undo with no move played since the start or the setup")
        return divmod(self.undo_unchecked(), 16)

    def copy(self, history: bool = True) -> XtttState:
        """An independent copy, undo stack included; with ``history=False`` without it (the
        same position and ``serial``, but ``undo`` cannot go back past it)."""
        s = object.__new__(XtttState)
        s.game = self.game
        s.marks = [self.marks[0][:], self.marks[1][:]]
        s.block_codes = self.block_codes[:]
        s.won = self.won[:]
        s.decided = self.decided
        s.to_move = self.to_move
        s._bonus = self._bonus
        s.last_action = self.last_action
        s.hash = self.hash
        s.over = self.over
        if history:
            s._stack = self._stack[:]
            s._base = self._base
        else:
            s._stack = []
            s._base = self.serial
        return s

    def is_terminal(self) -> bool:
        return self.over is not None

    def block_status(self) -> list[str]:
        """The 16 block statuses, row-major: ``"open"``, ``"x"``, ``"o"`` or ``"drawn"``."""
        return [STATUS_NAMES[s] for s in self.block_codes]

    def block_points(self) -> list[int]:
        """Rule 16 points of the blocks each player has won so far, ``[x, o]``."""
        return [sum(BLOCK_VALUE[b] for b in range(16) if self.won[p] >> b & 1) for p in (0, 1)]

    @property
    def ending(self) -> Ending | None:
        """``"pattern"`` (rule 11), ``"draw"`` (rule 12, all blocks decided) or None."""
        if self.over is None:
            return None
        return Ending.DRAW if self.over == FULL_BOARD else Ending.PATTERN

    def result(self) -> dict | None:
        """None while the game goes on, else ``{"winner": 0 | 1 | None, "points": [x, o]}``.

        A pattern win scores 68 - 0. When all blocks are decided without one, each player
        scores the values of the blocks they won (rule 16) and the ``winner`` is the player
        with more points, None on equal totals (the game itself is a draw, see
        :attr:`ending`).
        """
        over = self.over
        if over is None:
            return None
        if over != FULL_BOARD:
            points = [0, 0]
            points[over] = WIN_POINTS
            return {"winner": over, "points": points}
        points = self.block_points()
        winner = None if points[0] == points[1] else (0 if points[0] > points[1] else 1)
        return {"winner": winner, "points": points}

    @property
    def history(self) -> list[Move]:
        return [divmod(entry[0], 16) for entry in self._stack]

    def board(self) -> list[str]:
        """16 strings of 16 characters ``.``, ``x``, ``o``; row 0 first."""
        rows = []
        bx, bo = self.marks
        for r in range(16):
            chars = []
            for c in range(16):
                i = r * 16 + c
                b, bit = CELL_BLOCK[i], CELL_BIT[i]
                chars.append("x" if bx[b] & bit else "o" if bo[b] & bit else ".")
            rows.append("".join(chars))
        return rows

    @property
    def scores(self) -> tuple[int, int]:
        """Blocks won so far by x and by o."""
        return (self.won[0].bit_count(), self.won[1].bit_count())

    def to_ascii(self) -> str:
        """The big board as text, blocks separated by spaces and blank lines; the last mark
        in upper case."""
        last = self.last_move
        lines = []
        for r, row in enumerate(self.board()):
            if r and r % 4 == 0:
                lines.append("")
            chars = [ch.upper() if last == (r, c) else ch for c, ch in enumerate(row)]
            lines.append(" ".join("".join(chars[i:i + 4]) for i in range(0, 16, 4)))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready summary of the position (fields listed in :mod:`engine.xttt`)."""
        last = self.last_move
        return {
            "game": self.game.name,
            "serial": self.serial,
            "to_move": self.to_move,
            "status": self.status(),
            "result": self.result(),
            "ending": str(self.ending) if self.ending is not None else None,
            "board": self.board(),
            "blocks": self.block_status(),
            "in_bonus": self._bonus,
            "last_move": list(last) if last is not None else None,
            "legal_moves": [list(m) for m in self.legal_moves()],
            "scores": list(self.scores),
        }

    def __repr__(self) -> str:
        return f"<XtttState serial={self.serial} to_move={self.to_move} bonus={self._bonus}>"
