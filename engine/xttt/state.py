"""An Extreme Tic-Tac-Toe position: bitboards, incremental Zobrist hash and an undo stack.

The rules are those of /work/shared/spec/extreme-tictactoe.md (numbers below refer to it).
Public methods validate their input and raise :class:`IllegalMove` without changing anything;
the underscored ``_moves`` / ``_play_cell`` / ``_undo_cell`` are the unchecked fast path the
search uses (cells are ints ``row * 16 + col``, see :mod:`engine.xttt.tables`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import IllegalMove
from ..game import Played, State
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

# Values of ``_over``: None while the game goes on, 0 / 1 for a pattern win by that player,
# FULL_BOARD when every block is decided without a pattern win (rule 12).
FULL_BOARD = 2


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
    """A mutable position. ``to_move``: 0 = x (moves first), 1 = o."""

    __slots__ = ("game", "_bits", "_status", "_won", "_decided", "_to_move", "_bonus",
                 "_last", "_hash", "_over", "_stack", "_base")

    def __init__(self, game) -> None:
        self.game = game
        self._bits = [[0] * 16, [0] * 16]  # _bits[player][block]: 16-bit mask of marks
        self._status = [OPEN] * 16  # OPEN, X_WON, O_WON, DRAWN per block
        self._won = [0, 0]  # big-board masks of blocks won by each player
        self._decided = 0  # big-board mask of won or drawn blocks
        self._to_move = 0
        self._bonus = False  # the next move is a bonus move (rule 13)
        self._last = -1  # cell of the last mark, -1 before the first move
        self._hash = full_hash(self._bits, 0, False, 16)
        self._over = None
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
        for r, row in enumerate(board):
            for c, ch in enumerate(row):
                if ch != ".":
                    i = r * 16 + c
                    st._bits[0 if ch == "x" else 1][CELL_BLOCK[i]] |= CELL_BIT[i]
        for b in range(16):
            mx, mo = st._bits[0][b], st._bits[1][b]
            if IS_WIN[mx] and IS_WIN[mo]:
                raise ValueError(f"both players hold a pattern in block {divmod(b, 4)}")
            if IS_WIN[mx] or IS_WIN[mo]:
                p = 0 if IS_WIN[mx] else 1
                st._status[b] = p + 1
                st._won[p] |= 1 << b
            elif mx | mo == FULL:
                st._status[b] = DRAWN
            if st._status[b] != OPEN:
                st._decided |= 1 << b
        if IS_WIN[st._won[0]] and IS_WIN[st._won[1]]:
            raise ValueError("both players hold a pattern on the big board")
        if IS_WIN[st._won[0]] or IS_WIN[st._won[1]]:
            st._over = 0 if IS_WIN[st._won[0]] else 1
        elif st._decided == FULL:
            st._over = FULL_BOARD
        if last_move is not None:
            try:
                r, c = coerce_move(last_move)
            except IllegalMove as exc:
                raise ValueError(f"bad last_move: {exc}") from None
            st._last = r * 16 + c
            b, bit = CELL_BLOCK[st._last], CELL_BIT[st._last]
            if not (st._bits[0][b] | st._bits[1][b]) & bit:
                raise ValueError(f"last_move {last_move!r} is an empty cell")
        if in_bonus:
            if st._over is not None or st._last < 0:
                raise ValueError("in_bonus needs a last move and a game in progress")
            b, bit = CELL_BLOCK[st._last], CELL_BIT[st._last]
            if not st._bits[to_move][b] & bit or st._status[b] != to_move + 1:
                raise ValueError("in_bonus needs last_move to have won its block for to_move")
        st._to_move = to_move
        st._bonus = in_bonus
        st._hash = st.full_hash()
        st._base = sum(bin(m).count("1") for m in st._bits[0] + st._bits[1])
        return st

    # ----------------------------------------------------------------- fast path (search)

    def _moves(self) -> list[int]:
        """Legal cells (rules 6-9), unchecked fast path; empty when the game is over."""
        if self._over is not None:
            return []
        bx, bo = self._bits
        last = self._last
        if last >= 0:
            t = CELL_LOCAL[last]
            if self._status[t] == OPEN:
                return list(free_cells(t, bx[t] | bo[t]))
        moves: list[int] = []
        status = self._status
        for b in range(16):
            if status[b] == OPEN:
                moves.extend(free_cells(b, bx[b] | bo[b]))
        return moves

    def _play_cell(self, i: int) -> int:
        """Play legal cell ``i`` for the player to move; return 1 if it won a block, else 0."""
        p = self._to_move
        b = CELL_BLOCK[i]
        mine = self._bits[p]
        m = mine[b] | CELL_BIT[i]
        mine[b] = m
        bonus = self._bonus
        last = self._last
        h = self._hash
        self._stack.append((i, p, bonus, last, h, self._over))
        h ^= CELL_KEYS[p][i] ^ TARGET_KEYS[CELL_LOCAL[last] if last >= 0 else 16] \
            ^ TARGET_KEYS[CELL_LOCAL[i]]
        self._last = i
        won = 0
        if IS_WIN[m]:  # rule 10: only the mover's patterns in this block
            self._status[b] = p + 1
            w = self._won[p] | 1 << b
            self._won[p] = w
            self._decided |= 1 << b
            won = 1
            if IS_WIN[w]:  # rule 11
                self._over = p
        elif m | self._bits[1 - p][b] == FULL:
            self._status[b] = DRAWN
            self._decided |= 1 << b
        if self._over is None and self._decided == FULL:
            self._over = FULL_BOARD  # rule 12
        if won and self._over is None and not bonus:
            self._bonus = True  # rule 13: same player again
            h ^= BONUS_KEY
        else:
            if bonus:
                h ^= BONUS_KEY  # rule 14: no second bonus
            self._bonus = False
            self._to_move = 1 - p
            h ^= SIDE_KEY
        self._hash = h
        return won

    def _undo_cell(self) -> int:
        """Take back the last move (the stack must not be empty); return its cell."""
        i, p, self._bonus, self._last, self._hash, self._over = self._stack.pop()
        b = CELL_BLOCK[i]
        self._bits[p][b] &= ~CELL_BIT[i]
        if self._status[b] != OPEN:  # the block was open before this move
            self._status[b] = OPEN
            self._won[p] &= ~(1 << b)
            self._decided &= ~(1 << b)
        self._to_move = p
        return i

    # ----------------------------------------------------------------- State protocol

    @property
    def serial(self) -> int:
        return self._base + len(self._stack)

    @property
    def to_move(self) -> int:
        return self._to_move

    @property
    def in_bonus(self) -> bool:
        """Whether the next move is a bonus move (the same player moving again, rule 13)."""
        return self._bonus

    @property
    def last_move(self) -> tuple[int, int] | None:
        """The last mark placed, by either player, or None before the first move."""
        return None if self._last < 0 else divmod(self._last, 16)

    @property
    def hash(self) -> int:
        """The incrementally maintained 64-bit Zobrist hash of the position."""
        return self._hash

    def full_hash(self) -> int:
        """The Zobrist hash recomputed from scratch (equals :attr:`hash`)."""
        last_local = CELL_LOCAL[self._last] if self._last >= 0 else 16
        return full_hash(self._bits, self._to_move, self._bonus, last_local)

    def legal_moves(self) -> list[tuple[int, int]]:
        """The legal ``(row, col)`` moves in row-major order; empty when the game is over."""
        return [divmod(i, 16) for i in sorted(self._moves())]

    def check(self, move: object) -> int:
        """The cell of ``move`` if it is legal here; raises IllegalMove otherwise."""
        r, c = coerce_move(move)
        if self._over is not None:
            raise IllegalMove("game_over", move, "the game is over")
        i = r * 16 + c
        b = CELL_BLOCK[i]
        bit = CELL_BIT[i]
        if (self._bits[0][b] | self._bits[1][b]) & bit:
            raise IllegalMove("occupied", move, "the cell is not empty")
        if self._status[b] != OPEN:
            raise IllegalMove("block_closed", move,
                              f"block {divmod(b, 4)} is {STATUS_NAMES[self._status[b]]}")
        if self._last >= 0:
            t = CELL_LOCAL[self._last]
            if self._status[t] == OPEN and b != t:
                raise IllegalMove("wrong_block", move, f"the move must be in block {divmod(t, 4)}")
        return i

    def play(self, move: Iterable[int]) -> Played:
        """Play ``move`` (``(row, col)``); raises IllegalMove and changes nothing if illegal."""
        i = self.check(move)
        p = self._to_move
        won = self._play_cell(i)
        return Played(self.serial, divmod(i, 16), p, won, self._to_move != p)

    def undo(self) -> tuple[int, int]:
        """Take back the last move and return it; IndexError when nothing was played."""
        if not self._stack:
            raise IndexError("undo with no move played since the start or the setup")
        return divmod(self._undo_cell(), 16)

    def copy(self) -> XtttState:
        """An independent copy, undo stack included."""
        s = object.__new__(XtttState)
        s.game = self.game
        s._bits = [self._bits[0][:], self._bits[1][:]]
        s._status = self._status[:]
        s._won = self._won[:]
        s._decided = self._decided
        s._to_move = self._to_move
        s._bonus = self._bonus
        s._last = self._last
        s._hash = self._hash
        s._over = self._over
        s._stack = self._stack[:]
        s._base = self._base
        return s

    def is_terminal(self) -> bool:
        return self._over is not None

    def block_status(self) -> list[str]:
        """The 16 block statuses, row-major: ``"open"``, ``"x"``, ``"o"`` or ``"drawn"``."""
        return [STATUS_NAMES[s] for s in self._status]

    def block_points(self) -> list[int]:
        """Rule 16 points of the blocks each player has won so far, ``[x, o]``."""
        return [sum(BLOCK_VALUE[b] for b in range(16) if self._won[p] >> b & 1) for p in (0, 1)]

    @property
    def ending(self) -> str | None:
        """``"pattern"`` (rule 11), ``"draw"`` (rule 12, all blocks decided) or None."""
        if self._over is None:
            return None
        return "draw" if self._over == FULL_BOARD else "pattern"

    def result(self) -> dict | None:
        """None while the game goes on, else ``{"winner": 0 | 1 | None, "points": [x, o]}``.

        A pattern win scores 68 - 0. When all blocks are decided without one, each player
        scores the values of the blocks they won (rule 16) and the ``winner`` is the player
        with more points, None on equal totals (the game itself is a draw, see
        :attr:`ending`).
        """
        over = self._over
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
    def history(self) -> list[tuple[int, int]]:
        return [divmod(entry[0], 16) for entry in self._stack]

    def board(self) -> list[str]:
        """16 strings of 16 characters ``.``, ``x``, ``o``; row 0 first."""
        rows = []
        bx, bo = self._bits
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
        return (self._won[0].bit_count(), self._won[1].bit_count())

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
            "to_move": self._to_move,
            "status": "finished" if self._over is not None else "in_progress",
            "result": self.result(),
            "ending": self.ending,
            "board": self.board(),
            "blocks": self.block_status(),
            "in_bonus": self._bonus,
            "last_move": list(last) if last is not None else None,
            "legal_moves": [list(m) for m in self.legal_moves()],
            "scores": list(self.scores),
        }

    def __repr__(self) -> str:
        return f"<XtttState serial={self.serial} to_move={self._to_move} bonus={self._bonus}>"
