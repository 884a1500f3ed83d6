"""Zobrist keys for Extreme Tic-Tac-Toe positions.

A position's future depends only on the marks on the board (which fix every block status), the
player to move, whether the next move is a bonus move, and the target block (the local index of
the last mark, or none before the first move). The hash is the XOR of one key per mark plus
one key for each of those three; the state keeps it up to date incrementally and
:func:`full_hash` recomputes it from scratch (the tests check that both agree).
"""

from __future__ import annotations

import random

from .tables import BLOCK_CELLS

_rng = random.Random(0x58545454)  # fixed: hashes are reproducible across runs

# CELL_KEYS[player][cell]
CELL_KEYS = tuple(tuple(_rng.getrandbits(64) for _ in range(256)) for _ in range(2))
SIDE_KEY = _rng.getrandbits(64)  # XOR'd in when o is to move
BONUS_KEY = _rng.getrandbits(64)  # XOR'd in when the next move is a bonus move
# TARGET_KEYS[loc] for a last mark at local index loc; TARGET_KEYS[16] before the first move.
TARGET_KEYS = tuple(_rng.getrandbits(64) for _ in range(17))


def full_hash(bits, to_move: int, in_bonus: bool, last_local: int) -> int:
    """Hash from scratch: ``bits[player][block]`` masks, ``last_local`` 16 when no move yet."""
    h = TARGET_KEYS[last_local]
    if to_move:
        h ^= SIDE_KEY
    if in_bonus:
        h ^= BONUS_KEY
    for p in (0, 1):
        keys = CELL_KEYS[p]
        for b in range(16):
            m = bits[p][b]
            cells = BLOCK_CELLS[b]
            for loc in range(16):
                if m >> loc & 1:
                    h ^= keys[cells[loc]]
    return h
