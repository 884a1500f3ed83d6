"""The exact value of loony endgames by dynamic programming, and the chains the search reads.

The chains here are those of valence-2 boxes (the words: :mod:`chains`, whose :func:`walk
<engine.dots.chains.walk>` walks them): :func:`chain_lines` lists them with their lines,
:func:`chain_counts` and :func:`chain_lengths` give their lengths (the evaluation's and the
loony endgames' reading), :func:`sacrifice_lines` the lines the search opens them by.

When no box can be taken and every box not yet taken has valence 2, the position is a sum of
independent chains and loops, every move opens one of them, and its value follows from their
lengths alone (Berlekamp, *The Dots and Boxes Game*; Buzzard and Ciere 2014 for long ones):
with ``f(G)`` the net boxes the player in control (not to move) gets,

* opening a 1- or 2-chain hands it over whole (a 2-chain is opened in the middle, so it cannot
  be declined) and passes the obligation to open: ``n - f(G - C)``;
* opening a chain of ``n >= 3`` lets the controller take all or decline the last two:
  ``n - 2 + |2 - f(G - C)|``;
* opening a loop of ``n >= 4``: take all, or decline the last four: ``n - 4 + |4 - f(G - C)|``;

and ``f(G) = min`` over the chains and loops. The value for the player to move is ``-f(G)``.
"""

from __future__ import annotations

from .chains import walk
from .search.board import Tables

#: Entries a :class:`LoonyDP` keeps by default (then it is emptied and starts again).
DP_MAX_ENTRIES = 1 << 16


def chain_lines(t: Tables, drawn: int, vals: list[int]):
    """The chains and loops of valence-2 boxes, each with its undrawn lines.

    Returns a list of ``(is_loop, length, lines, independent)``, a chain's ``lines`` in walk
    order (end, inner..., end), a loop's from one of its lines around; ``independent``: both
    ends meet the border (always true for loops).
    """
    box_mask = t.box_mask
    other = t.other
    seen = 0
    out = []
    for b0 in range(t.nb):
        if vals[b0] != 2 or seen >> b0 & 1:
            continue
        chain, boxes = _chain_through(box_mask, other, drawn, vals, b0)
        out.append(chain)
        seen |= boxes
    return out


def _chain_through(box_mask, other, drawn: int, vals: list[int], b0: int):
    """``(is_loop, length, lines, independent)`` of the chain or loop through the valence-2
    box ``b0`` (see :func:`chain_lines`; a chain's lines from the end its lower line of ``b0``
    leads to), and the boxes walked as bits."""
    free = box_mask[b0] & ~drawn
    la = free & -free
    back: list[int] = []
    n, end_a, _last, seen = walk(box_mask, other, drawn, vals, b0, la.bit_length() - 1, back)
    if end_a == b0:
        return (True, n + 1, (back[-1], *back[:-1]), True), seen
    ahead: list[int] = []
    m, end_b, _last, seen_b = walk(box_mask, other, drawn, vals, b0,
                                   (free ^ la).bit_length() - 1, ahead)
    back.reverse()
    return (False, n + m + 1, (*back, *ahead), end_a < 0 and end_b < 0), seen | seen_b


def chain_counts(t: Tables, drawn: int, vals: list[int]) -> tuple[list[int], list[int], int]:
    """The lengths of the chains and of the loops of valence-2 boxes, and the number of
    joints (boxes of valence 0 or 1). No line lists: the evaluation calls this at every
    horizon leaf."""
    box_mask = t.box_mask
    other = t.other
    chains: list[int] = []
    loops: list[int] = []
    joints = 0
    seen = 0
    b0 = -1
    for v0 in vals:
        b0 += 1
        if v0 != 2:
            if v0 < 2:
                joints += 1
            continue
        if seen >> b0 & 1:
            continue
        free = box_mask[b0] & ~drawn
        la = free & -free
        n, end, _last, boxes = walk(box_mask, other, drawn, vals, b0, la.bit_length() - 1)
        if end == b0:
            loops.append(n + 1)
        else:
            m, _end, _last, more = walk(box_mask, other, drawn, vals, b0,
                                        (free ^ la).bit_length() - 1)
            chains.append(n + m + 1)
            boxes |= more
        seen |= boxes
    return chains, loops, joints


def chain_lengths(t: Tables, drawn: int, vals: list[int]) -> tuple[list[int], list[int]]:
    """Just the lengths of the chains and of the loops (see :func:`chain_counts`)."""
    chains, loops, _joints = chain_counts(t, drawn, vals)
    return chains, loops


class LoonyDP:
    """The chain DP ``f(G)`` with its memo (by sorted tuples of chain and loop lengths).

    Bounded: the memo is emptied when it holds ``max_entries`` values (they are recomputed,
    never different). A search owns one through its caches (``caches.DotsCaches``).
    """

    __slots__ = ("memo", "max_entries")

    def __init__(self, max_entries: int = DP_MAX_ENTRIES) -> None:
        self.memo: dict[tuple, int] = {}
        self.max_entries = max_entries

    def value(self, chains: tuple, loops: tuple) -> int:
        """``f(G)``: what the player NOT to move nets from independent chains and loops
        (sorted tuples of lengths) when the player to move must open one."""
        if not chains and not loops:
            return 0
        key = (chains, loops)
        memo = self.memo
        v = memo.get(key)
        if v is not None:
            return v
        best = 1 << 30
        last = -1
        for i, n in enumerate(chains):
            if n == last:
                continue
            last = n
            rest = self.value(chains[:i] + chains[i + 1:], loops)
            v = n - rest if n <= 2 else n - 2 + abs(2 - rest)
            if v < best:
                best = v
        last = -1
        for i, n in enumerate(loops):
            if n == last:
                continue
            last = n
            rest = self.value(chains, loops[:i] + loops[i + 1:])
            v = n - 4 + abs(4 - rest)
            if v < best:
                best = v
        if len(memo) >= self.max_entries:
            memo.clear()
        memo[key] = best
        return best

    def fast(self, chains, loops) -> int:
        """``f(G)`` for evaluation on big boards: exact when the state space is small,
        otherwise the long chains and loops opened smallest first, with short chains as
        switches (an estimate). Lists of lengths, in any order."""
        size = 1
        counts: dict = {}
        for n in chains:
            counts[("c", n)] = counts.get(("c", n), 0) + 1
        for n in loops:
            counts[("l", n)] = counts.get(("l", n), 0) + 1
        for c in counts.values():
            size *= c + 1
        if size <= 64:
            return self.value(tuple(sorted(chains)), tuple(sorted(loops)))
        longc = tuple(sorted(n for n in chains if n >= 3))
        short = [n for n in chains if n < 3]
        v = _long_only(longc, tuple(sorted(loops)), 0, 0, {})
        # short chains: each one is handed over and switches who must open; open them
        # smallest first (from the opener's side this is the usual play)
        for n in sorted(short, reverse=True):
            v = n - v
        return v

    def clear(self) -> None:
        self.memo.clear()

    def __len__(self) -> int:
        return len(self.memo)


def loony_value(chains: tuple, loops: tuple) -> int:
    """:meth:`LoonyDP.value` with a memo of its own (one call; a search uses its
    ``LoonyDP``)."""
    return LoonyDP().value(chains, loops)


def controlled_value(chains, loops) -> int:
    """Berlekamp's controlled value of long chains and loops (spec, "Published results")."""
    chains = [n for n in chains]
    loops = [n for n in loops]
    if not chains and not loops:
        return 0
    if not loops or any(n >= 4 for n in chains):
        tb = 4
    elif not chains:
        tb = 8
    else:
        tb = 6
    return sum(chains) - 4 * len(chains) + sum(loops) - 8 * len(loops) + tb


def loony_value_fast(chains, loops) -> int:
    """:meth:`LoonyDP.fast` with a memo of its own (one call; a search uses its
    ``LoonyDP``)."""
    return LoonyDP().fast(chains, loops)


def _long_only(chains, loops, i, j, memo) -> int:
    if i == len(chains) and j == len(loops):
        return 0
    key = (i, j)
    v = memo.get(key)
    if v is not None:
        return v
    best = 1 << 30
    if i < len(chains):
        rest = _long_only(chains, loops, i + 1, j, memo)
        best = chains[i] - 2 + abs(2 - rest)
    if j < len(loops):
        rest = _long_only(chains, loops, i, j + 1, memo)
        best = min(best, loops[j] - 4 + abs(4 - rest))
    memo[key] = best
    return best


def loony_endgame_value(t: Tables, drawn: int, vals: list[int],
                        dp: LoonyDP | None = None) -> int | None:
    """Exact value for the player to move when every box not taken has valence 2 (no box can
    be taken, every move opens an independent chain or loop); None otherwise. ``dp``: the
    :class:`LoonyDP` to use (default: a fresh one)."""
    chains = []
    loops = []
    for v in vals:
        if v != 2 and v != 4:
            return None
    for is_loop, n, _lines, ind in chain_lines(t, drawn, vals):
        if not ind:
            return None
        (loops if is_loop else chains).append(n)
    if dp is None:
        dp = LoonyDP()
    return -dp.value(tuple(sorted(chains)), tuple(sorted(loops)))


def sacrifice_lines(t: Tables, drawn: int, vals: list[int]) -> list[tuple[int, int, int | None]]:
    """The sacrifices worth trying, as ``(size key, line, bound)``: one line per chain or loop.

    Any line of a loop (key: length + 1); the middle line of a 2-chain (which cannot be
    declined); an end line of any other chain. Every line of a chain lets the taker choose
    between the same outcomes (take all; decline the last two, which the opener then takes)
    whether its ends meet the border or joints, so one stands for all, except for a 3+ chain
    whose two ends meet the same joint (it may become capturable on the way): there every
    line is listed. Independent chains and loops of equal length are the same game: one of
    each is listed.

    ``bound`` (None: none) caps the sacrifice's value to the player who makes it. Opening a
    chain of n >= 3 at an end, or a loop of n, is loony: the taker chooses between taking all
    n and moving in the rest R (worth n + v(R) to them) and declining the last two (a loop:
    four), which the opener takes before moving in R (worth n - 4 - v(R); a loop: n - 8 -
    v(R)). The better of two is at least their mean, whatever v(R) is, so the opener gets at
    most 2 - n (a loop: 4 - n)."""
    box_mask = t.box_mask
    other = t.other
    seen = 0
    out = []
    classes = set()
    for b0 in range(t.nb):
        if vals[b0] != 2 or seen >> b0 & 1:
            continue
        free = box_mask[b0] & ~drawn
        la = free & -free
        lb = (free ^ la).bit_length() - 1
        la = la.bit_length() - 1
        steps_a, end_a, line_a, boxes = walk(box_mask, other, drawn, vals, b0, la)
        loop = end_a == b0
        if loop:
            n = steps_a + 1
            end_b = -1
        else:
            steps_b, end_b, _line_b, more = walk(box_mask, other, drawn, vals, b0, lb)
            n = steps_a + steps_b + 1
            boxes |= more
        seen |= boxes
        if loop or (end_a < 0 and end_b < 0):
            # an independent loop or chain: one of each kind and length is enough, the
            # others are the same game
            cls = -n if loop else n
            if cls in classes:
                continue
            classes.add(cls)
        if loop:
            out.append((n + 1, la, 4 - n))
        elif n == 2:
            out.append((2, la if steps_a == 1 else lb, None))
        elif n >= 3 and end_a >= 0 and end_a == end_b:
            _loop, _n, lines, _ind = _chain_through(box_mask, other, drawn, vals, b0)[0]
            for ln in lines:
                out.append((n, ln, None))
        else:
            out.append((n, line_a, 2 - n if n >= 3 else None))
    return out
