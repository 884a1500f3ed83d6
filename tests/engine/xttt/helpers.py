"""Position builders for the Extreme Tic-Tac-Toe tests (plain coordinates, no engine tables)."""

from __future__ import annotations

from boxfish import engine

GAME = engine.load_game("extreme-tictactoe")

# The 12 winning shapes of the spec, written out by hand in local (row, col).
ROWS = [[(r, c) for c in range(4)] for r in range(4)]
COLS = [[(r, c) for r in range(4)] for c in range(4)]
DIAMONDS = [
    [(0, 1), (1, 0), (1, 2), (2, 1)],
    [(0, 2), (1, 1), (1, 3), (2, 2)],
    [(1, 1), (2, 0), (2, 2), (3, 1)],
    [(1, 2), (2, 1), (2, 3), (3, 2)],
]
PATTERNS = ROWS + COLS + DIAMONDS
DIAGONALS = [[(k, k) for k in range(4)], [(k, 3 - k) for k in range(4)]]

# A full block with no pattern for either player.
DRAW_FILL = ["xxoo", "ooxx", "xxoo", "ooxx"]
# A block one x from being full where the last cell (3, 3) completes column 3 for x.
WIN_ON_LAST = ["xoxx", "oxxx", "xoox", "oxo."]


def cell(block: tuple[int, int], local: tuple[int, int]) -> tuple[int, int]:
    """Global (row, col) of ``local`` in ``block``."""
    return block[0] * 4 + local[0], block[1] * 4 + local[1]


def block_cells(block: tuple[int, int]) -> list[tuple[int, int]]:
    return [cell(block, (lr, lc)) for lr in range(4) for lc in range(4)]


class Grid:
    """A 16x16 board being drawn by hand."""

    def __init__(self) -> None:
        self.g = [["."] * 16 for _ in range(16)]

    def put(self, block, locals_, ch: str) -> Grid:
        for loc in locals_:
            r, c = cell(block, loc)
            self.g[r][c] = ch
        return self

    def fill(self, block, rows: list[str]) -> Grid:
        for lr, row in enumerate(rows):
            for lc, ch in enumerate(row):
                r, c = cell(block, (lr, lc))
                self.g[r][c] = ch
        return self

    def win(self, block, ch: str) -> Grid:
        """Give ``block`` to ``ch`` with its top row."""
        return self.put(block, ROWS[0], ch)

    def draw(self, block) -> Grid:
        return self.fill(block, DRAW_FILL)

    def rows(self) -> list[str]:
        return ["".join(r) for r in self.g]

    def state(self, to_move=0, last_move=None, in_bonus=False):
        return GAME.from_board(self.rows(), to_move=to_move, last_move=last_move,
                               in_bonus=in_bonus)


def blocks_of(index: int) -> tuple[int, int]:
    return divmod(index, 4)


def forced_win(state, plies: int) -> bool:
    """Whether the player to move can force a big-board pattern win within ``plies`` plies."""
    me = state.to_move

    def rec(n: int) -> bool:
        if state.is_terminal():
            res = state.result()
            return state.ending == "pattern" and res["winner"] == me
        if n == 0:
            return False
        mover = state.to_move
        for m in state.legal_moves():
            state.play(m)
            ok = rec(n - 1)
            state.undo()
            if ok and mover == me:
                return True
            if not ok and mover != me:
                return False
        return mover != me

    return rec(plies)


def decided_grid(x_blocks, o_blocks, open_block: tuple[int, int]) -> Grid:
    """Every block won by x (``x_blocks``), by o (``o_blocks``) or drawn, except
    ``open_block``, which is left empty for the caller to fill."""
    g = Grid()
    for i in range(16):
        b = blocks_of(i)
        if b in x_blocks:
            g.win(b, "x")
        elif b in o_blocks:
            g.win(b, "o")
        elif b != open_block:
            g.draw(b)
    return g
