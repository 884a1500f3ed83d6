"""A deliberately plain reimplementation of the Extreme Tic-Tac-Toe spec, and a brute-force
solver on it: the engine's independent oracle.

``PlainGame`` uses lists of lists and re-derives everything from scratch at every step, the way
the tournament's reference simulator does; it shares no code or tables with the engine.
:func:`solve_moves` plays every line to the end of the game in it (for positions with a few
empty cells), giving each legal move's exact result.
"""

from __future__ import annotations

# Winning shapes in local (row, col), written out again on purpose.
SHAPES = (
    [[(r, 0), (r, 1), (r, 2), (r, 3)] for r in range(4)]
    + [[(0, c), (1, c), (2, c), (3, c)] for c in range(4)]
    + [[(0, 1), (1, 0), (1, 2), (2, 1)], [(0, 2), (1, 1), (1, 3), (2, 2)],
       [(1, 1), (2, 0), (2, 2), (3, 1)], [(1, 2), (2, 1), (2, 3), (3, 2)]]
)
VALUES = [[6, 4, 4, 6], [4, 3, 3, 4], [4, 3, 3, 4], [6, 4, 4, 6]]


class PlainGame:
    def __init__(self) -> None:
        self.board = [["-"] * 16 for _ in range(16)]
        self.blocks = [["-"] * 4 for _ in range(4)]  # '-', 'x', 'o', 'd'
        self.last = None
        self.player = "x"
        self.bonus_next = False
        self.outcome = None  # None, 'x', 'o' or 'draw'

    @classmethod
    def from_board(cls, rows, to_move: int, last_move=None, in_bonus: bool = False) -> PlainGame:
        """A position from 16 strings of ``.``, ``x``, ``o`` (the engine's board format), the
        player to move (0 = x), the last mark and whether the next move is a bonus move."""
        g = cls()
        g.board = [["-" if ch == "." else ch for ch in row] for row in rows]
        for br in range(4):
            for bc in range(4):
                small = [[g.board[br * 4 + i][bc * 4 + j] for j in range(4)] for i in range(4)]
                for sym in "xo":
                    if g.holds(small, sym):
                        g.blocks[br][bc] = sym
                if g.blocks[br][bc] == "-" and all(ch != "-" for row in small for ch in row):
                    g.blocks[br][bc] = "d"
        for sym in "xo":
            if g.holds(g.blocks, sym):
                g.outcome = sym
        if g.outcome is None and all(b != "-" for row in g.blocks for b in row):
            g.outcome = "draw"
        g.player = "xo"[to_move]
        g.last = tuple(last_move) if last_move is not None else None
        g.bonus_next = in_bonus
        return g

    def clone(self) -> PlainGame:
        g = PlainGame()
        g.board = [row[:] for row in self.board]
        g.blocks = [row[:] for row in self.blocks]
        g.last, g.player, g.bonus_next, g.outcome = (self.last, self.player, self.bonus_next,
                                                     self.outcome)
        return g

    def legal(self):
        if self.outcome is not None:
            return []
        if self.last is not None:
            br, bc = self.last[0] % 4, self.last[1] % 4
            if self.blocks[br][bc] == "-":
                return [(br * 4 + i, bc * 4 + j) for i in range(4) for j in range(4)
                        if self.board[br * 4 + i][bc * 4 + j] == "-"]
        out = []
        for r in range(16):
            for c in range(16):
                if self.board[r][c] == "-" and self.blocks[r // 4][c // 4] == "-":
                    out.append((r, c))
        return out

    def holds(self, grid, sym):
        return any(all(grid[i][j] == sym for i, j in shape) for shape in SHAPES)

    def play(self, r, c):
        assert (r, c) in self.legal()
        sym = self.player
        self.board[r][c] = sym
        self.last = (r, c)
        br, bc = r // 4, c // 4
        small = [[self.board[br * 4 + i][bc * 4 + j] for j in range(4)] for i in range(4)]
        won_block = False
        if self.holds(small, sym):
            self.blocks[br][bc] = sym
            won_block = True
        elif all(small[i][j] != "-" for i in range(4) for j in range(4)):
            self.blocks[br][bc] = "d"
        if self.holds(self.blocks, sym):
            self.outcome = sym
        elif all(self.blocks[i][j] != "-" for i in range(4) for j in range(4)):
            self.outcome = "draw"
        if won_block and self.outcome is None and not self.bonus_next:
            self.bonus_next = True
        else:
            self.bonus_next = False
            self.player = "o" if sym == "x" else "x"

    def statuses(self):
        names = {"-": "open", "x": "x", "o": "o", "d": "drawn"}
        return [names[self.blocks[i][j]] for i in range(4) for j in range(4)]

    def result(self):
        if self.outcome is None:
            return None
        if self.outcome in ("x", "o"):
            return {"winner": "xo".index(self.outcome),
                    "points": [68, 0] if self.outcome == "x" else [0, 68]}
        pts = [sum(VALUES[i][j] for i in range(4) for j in range(4) if self.blocks[i][j] == s)
               for s in "xo"]
        winner = None if pts[0] == pts[1] else (0 if pts[0] > pts[1] else 1)
        return {"winner": winner, "points": pts}


# -- brute force -------------------------------------------------------------------------------
#
# A result for the player to move: ("mate", n), a big-board pattern win n plies (marks, bonus
# moves included) from now, ("mate", -n) such a loss, or ("points", d), the full-board ending
# (rule 12) won by d rule-16 points (negative: lost; 0: equal points).


def result_order(result) -> tuple:
    """Sort key, better results first when sorted in reverse: a quicker pattern win, then more
    points, then a later pattern loss."""
    kind, n = result
    if kind == "points":
        return (1, n)
    return (2, -n) if n > 0 else (0, -n)


def _after_move(child: PlainGame, mover: str, memo: dict) -> tuple:
    """The result for ``mover`` of the move that led to ``child``."""
    if child.outcome in ("x", "o"):
        return ("mate", 1 if child.outcome == mover else -1)
    if child.outcome == "draw":
        pts = child.result()["points"]
        return ("points", pts["xo".index(mover)] - pts[1 - "xo".index(mover)])
    kind, n = _value(child, memo)
    if kind == "mate":
        n = n + 1 if n > 0 else n - 1
    if child.player != mover:  # the turn passed (no bonus move): the other side's result
        n = -n
    return (kind, n)


def _value(game: PlainGame, memo: dict) -> tuple:
    target = (game.last[0] % 4, game.last[1] % 4) if game.last is not None else None
    key = ("".join("".join(row) for row in game.board), game.player, game.bonus_next, target)
    if key not in memo:
        memo[key] = max(_move_results(game, memo).values(), key=result_order)
    return memo[key]


def _move_results(game: PlainGame, memo: dict) -> dict:
    out = {}
    for move in game.legal():
        child = game.clone()
        child.play(*move)
        out[move] = _after_move(child, game.player, memo)
    return out


def solve_moves(game: PlainGame) -> dict[tuple[int, int], tuple]:
    """Every legal move of ``game`` (not finished) with its exact result for the player to
    move, both sides playing perfectly on (every line searched to the end of the game)."""
    assert game.outcome is None and game.legal()
    return _move_results(game, {})
