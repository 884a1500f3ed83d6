"""Fixed geometry of Extreme Tic-Tac-Toe as precomputed integer tables.

Cells are numbered ``i = row * 16 + col`` (0..255). Blocks are numbered row-major
``b = (row // 4) * 4 + col // 4`` and a cell's local index inside its block is
``loc = (row % 4) * 4 + col % 4``. A 4x4 grid (the cells of a block, or the blocks of the big
board) is a 16-bit mask with bit ``loc`` for local index ``loc``. By the correspondence rule the
target block of a move is the block numbered by the move's local index, so
``CELL_LOCAL[i]`` is both the local index of cell ``i`` and the block it sends the opponent to.

Everything here is read-only after import.
"""

from __future__ import annotations

SIZE = 16
FULL = 0xFFFF

# Block status codes (also used by the state): open, won by x, won by o, drawn.
OPEN, X_WON, O_WON, DRAWN = 0, 1, 2, 3
STATUS_NAMES = ("open", "x", "o", "drawn")


def _mask(cells) -> int:
    return sum(1 << (r * 4 + c) for r, c in cells)


ROWS = tuple(_mask((r, c) for c in range(4)) for r in range(4))
COLS = tuple(_mask((r, c) for r in range(4)) for c in range(4))
# Each diamond is the four orthogonal neighbours of a central cell, without that cell (rule 5).
DIAMONDS = tuple(
    _mask(((cr - 1, cc), (cr, cc - 1), (cr, cc + 1), (cr + 1, cc)))
    for cr, cc in ((1, 1), (1, 2), (2, 1), (2, 2))
)
PATTERNS: tuple[int, ...] = ROWS + COLS + DIAMONDS


def _build_is_win() -> bytes:
    """IS_WIN[m] is 1 when the 16-bit mask m contains a full pattern."""
    table = bytearray(1 << 16)
    for p in PATTERNS:
        rest = FULL & ~p
        sub = rest
        while True:  # every subset of the other cells, each OR'd with the pattern
            table[p | sub] = 1
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return bytes(table)


IS_WIN = _build_is_win()

CELL_BLOCK = tuple((i >> 4 >> 2) * 4 + ((i & 15) >> 2) for i in range(256))
CELL_LOCAL = tuple(((i >> 4) & 3) * 4 + (i & 3) for i in range(256))
CELL_BIT = tuple(1 << CELL_LOCAL[i] for i in range(256))
# BLOCK_CELLS[b][loc]: the global cell at local index loc of block b.
BLOCK_CELLS = tuple(
    tuple(((b >> 2) * 4 + (loc >> 2)) * 16 + (b & 3) * 4 + (loc & 3) for loc in range(16))
    for b in range(16)
)

# Tournament block values for a drawn game (rule 16): corners 6, centre 3, other edges 4.
BLOCK_VALUE = tuple(
    6 if (br in (0, 3) and bc in (0, 3)) else 3 if (br in (1, 2) and bc in (1, 2)) else 4
    for br in range(4) for bc in range(4)
)
WIN_POINTS = sum(BLOCK_VALUE)  # 68



def _free_halves() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """``[2 * block + half][bits]``: the global cells of ``block``'s local indices
    ``8 * half .. 8 * half + 7`` whose bit is clear in ``bits`` (8 bits), in local order."""
    out = []
    for b in range(16):
        for half in (0, 1):
            cells = BLOCK_CELLS[b][8 * half:8 * half + 8]
            # by free mask: the lowest free cell, then the others (one tuple per entry)
            by_free: list[tuple[int, ...]] = [()] * 256
            for free in range(1, 256):
                low = free & -free
                by_free[free] = (cells[low.bit_length() - 1],) + by_free[free ^ low]
            out.append(tuple(by_free[255 & ~occ] for occ in range(256)))
    return tuple(out)


_FREE_HALVES = _free_halves()


def free_cells(block: int, occupied: int) -> tuple[int, ...]:
    """The global cells of ``block`` whose bit is clear in ``occupied``, in local order."""
    return _FREE_HALVES[2 * block][occupied & 255] + _FREE_HALVES[2 * block + 1][occupied >> 8]
