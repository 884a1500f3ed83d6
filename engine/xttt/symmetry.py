"""The 8 symmetries of the square acting on Extreme Tic-Tac-Toe positions.

Rotations and reflections of the 16x16 board map blocks to blocks, local positions to local
positions in the same way (so the correspondence rule is preserved) and rows, columns and
diamonds to rows, columns and diamonds (so are block and game results). Two moves exchanged by
a symmetry that fixes the position lead to equivalent positions; the search uses this at the
root to search one move of each class (the opening has 36 classes for 256 moves).
"""

from __future__ import annotations

from .tables import BLOCK_CELLS, CELL_BIT, CELL_BLOCK, CELL_LOCAL, OPEN


def _maps():
    n = 15
    fs = [
        lambda r, c: (r, c), lambda r, c: (c, n - r), lambda r, c: (n - r, n - c),
        lambda r, c: (n - c, r), lambda r, c: (r, n - c), lambda r, c: (n - r, c),
        lambda r, c: (c, r), lambda r, c: (n - c, n - r),
    ]
    return tuple(tuple(f(i >> 4, i & 15)[0] * 16 + f(i >> 4, i & 15)[1] for i in range(256))
                 for f in fs)


# CELL_SYM[k][i]: image of cell i under symmetry k (k = 0 is the identity).
CELL_SYM = _maps()
# BLOCK_SYM[k][b]: image of block b (equally: of local index b) under symmetry k.
BLOCK_SYM = tuple(tuple(CELL_BLOCK[sym[BLOCK_CELLS[b][0]]] for b in range(16))
                  for sym in CELL_SYM)


def stabilizer(state) -> list[int]:
    """The symmetries (indices into CELL_SYM, identity included) that fix ``state``.

    A symmetry fixes a position when it maps every mark onto a mark of the same player and
    maps the target block onto itself (or there is no target: an open move).
    """
    bits = state.marks
    marks = [(p, BLOCK_CELLS[b][loc]) for p in (0, 1) for b in range(16)
             for loc in range(16) if bits[p][b] >> loc & 1]
    target = None
    last = state.last_action
    if last >= 0 and state.block_codes[CELL_LOCAL[last]] == OPEN:
        target = CELL_LOCAL[last]
    out = [0]
    for k in range(1, 8):
        sym = CELL_SYM[k]
        if target is not None and BLOCK_SYM[k][target] != target:
            continue
        if all(bits[p][CELL_BLOCK[sym[i]]] & CELL_BIT[sym[i]] for p, i in marks):
            out.append(k)
    return out


def move_classes(state, moves: list[int]) -> dict[int, list[int]]:
    """Group legal cells ``moves`` into classes of equivalent moves under the stabilizer.

    Returns ``{representative: [members...]}``; the representative is the first member in the
    order of ``moves`` and every member is listed (itself included) in that order.
    """
    syms = stabilizer(state)
    classes: dict[int, list[int]] = {}
    rep_of: dict[int, int] = {}
    for i in moves:
        rep = next((rep_of[j] for j in (CELL_SYM[k][i] for k in syms) if j in rep_of), None)
        if rep is None:
            rep = i
            classes[i] = []
        rep_of[i] = rep
        classes[rep].append(i)
    return classes
