"""Chains and loops of a position, and the exact value of loony endgames by dynamic programming.

A *component* is a maximal set of valence-2 boxes joined through undrawn lines: a path
(``chain``) or a cycle (``loop``). A chain is *independent* when both of its end lines lead to
the border of the board (no valence-0/1 box joins it to anything else).

When no box can be taken and every box not yet taken has valence 2, the position is a sum of
independent chains and loops, every move opens one of them, and its value follows from the
component lengths alone (Berlekamp, *The Dots and Boxes Game*; Buzzard and Ciere 2014 for
long components):
with ``f(G)`` the net boxes the player in control (not to move) gets,

* opening a 1- or 2-chain hands it over whole (a 2-chain is opened in the middle, so it cannot
  be declined) and passes the obligation to open: ``n - f(G - C)``;
* opening a chain of ``n >= 3`` lets the controller take all or decline the last two:
  ``n - 2 + |2 - f(G - C)|``;
* opening a loop of ``n >= 4``: take all, or decline the last four: ``n - 4 + |4 - f(G - C)|``;

and ``f(G) = min`` over the components. The value for the player to move is ``-f(G)``.
"""

from __future__ import annotations

from .search.board import Tables

#: Entries a :class:`LoonyDP` keeps by default (then it is emptied and starts again).
DP_MAX_ENTRIES = 1 << 16


def components(t: Tables, drawn: int, vals: list[int]):
    """The chains and loops of valence-2 boxes.

    Returns a list of ``(is_loop, length, lines, independent)`` where ``lines`` is the tuple of
    undrawn lines of the component (inner lines and end lines, in walk order for a chain: end,
    inner..., end) and ``independent`` says both ends meet the border (always true for loops).
    """
    box_mask = t.box_mask
    other = t.other
    seen = 0
    out = []
    for b0 in range(t.nb):
        if vals[b0] != 2 or seen >> b0 & 1:
            continue
        # find one end of the path (or detect a cycle) by walking from b0 in one direction
        free = box_mask[b0] & ~drawn
        l1 = (free & -free).bit_length() - 1
        start, entry = b0, l1  # walk backwards through l1 to find an end
        prev_line = (free ^ (1 << l1)).bit_length() - 1
        cur, came = b0, prev_line
        is_loop = False
        # walk via l1 direction until leaving the val-2 set
        while True:
            fl = box_mask[cur] & ~drawn & ~(1 << came)
            ln = fl.bit_length() - 1
            nb = other[ln][cur]
            if nb < 0 or vals[nb] != 2:
                start, entry = cur, ln
                break
            if nb == b0:
                is_loop = True
                start, entry = b0, ln
                break
            cur, came = nb, ln
        # now walk from `start`, entering by `entry`, to the other end
        lines = [entry]
        n = 0
        cur, came = start, entry
        ind = other[entry][start] < 0
        while True:
            seen |= 1 << cur
            n += 1
            fl = box_mask[cur] & ~drawn & ~(1 << came)
            ln = fl.bit_length() - 1
            nb = other[ln][cur]
            if is_loop:
                if nb == start:
                    break
                lines.append(ln)
                cur, came = nb, ln
                continue
            lines.append(ln)
            if nb < 0 or vals[nb] != 2:
                ind = ind and nb < 0
                break
            cur, came = nb, ln
        out.append((is_loop, n, tuple(lines), True if is_loop else ind))
    return out


def component_counts(t: Tables, drawn: int,
                     vals: list[int]) -> tuple[list[int], list[int], int]:
    """The lengths of the chains and of the loops, and the number of boxes of valence 0 or 1
    (the joints between chains).

    Each component is walked from its first box both ways (a valence-2 box has two undrawn
    lines), with no line lists: the evaluation calls this three times at every horizon leaf
    (1.26x faster than the flood fill it replaced, same results)."""
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
        seen |= 1 << b0
        free = box_mask[b0] & ~drawn
        la = free & -free
        n = 1
        for ln in (la.bit_length() - 1, (free ^ la).bit_length() - 1):
            cur = b0
            while True:
                nb = other[ln][cur]
                if nb < 0 or vals[nb] != 2:
                    break
                if nb == b0:
                    break
                seen |= 1 << nb
                n += 1
                ln = (box_mask[nb] & ~drawn & ~(1 << ln)).bit_length() - 1
                cur = nb
            else:
                continue
            if nb == b0:
                loops.append(n)
                break
        else:
            chains.append(n)
    return chains, loops, joints


def component_sizes(t: Tables, drawn: int, vals: list[int]) -> tuple[list[int], list[int]]:
    """Just the lengths of the chains and of the loops (see ``component_counts``)."""
    chains, loops, _joints = component_counts(t, drawn, vals)
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
        otherwise the smallest-component rule for long ones with short chains as switches
        (an estimate). Lists of lengths, in any order."""
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
    for is_loop, n, _lines, ind in components(t, drawn, vals):
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
    whether its ends meet the border or joints (boxes of valence 0/1), so one stands for
    all, except for a 3+ chain whose two ends meet the same joint (it may become capturable
    on the way): there every line is listed. Isolated chains (both ends on the border) and
    loops of equal kind and length are the same game: one of each is listed.

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
        seen |= 1 << b0
        free = box_mask[b0] & ~drawn
        la = free & -free
        lb = (free ^ la).bit_length() - 1
        la = la.bit_length() - 1
        n = 1
        loop = False
        steps_a = 0
        end_a = end_b = -1
        line_a = -1
        for first in (la, lb):
            cur = b0
            ln = first
            while True:
                nb = other[ln][cur]
                if nb < 0 or vals[nb] != 2:
                    if first == la:
                        end_a = nb
                        line_a = ln
                    else:
                        end_b = nb
                    break
                if nb == b0:
                    loop = True
                    break
                seen |= 1 << nb
                n += 1
                if first == la:
                    steps_a += 1
                ln = (box_mask[nb] & ~drawn & ~(1 << ln)).bit_length() - 1
                cur = nb
            if loop:
                break
        if loop or (end_a < 0 and end_b < 0):
            # an isolated loop or chain (both ends on the border): one of each kind and
            # length is enough, the others are the same game
            cls = -n if loop else n
            if cls in classes:
                continue
            classes.add(cls)
        if loop:
            out.append((n + 1, la, 4 - n))
        elif n == 2:
            out.append((2, la if steps_a == 1 else lb, None))
        elif n >= 3 and end_a >= 0 and end_a == end_b:
            _loop, _n, lines, _ind = _component_of(t, drawn, vals, b0)
            for ln in lines:
                out.append((n, ln, None))
        else:
            out.append((n, line_a, 2 - n if n >= 3 else None))
    return out


def _component_of(t: Tables, drawn: int, vals: list[int], b0: int):
    for comp in components(t, drawn, vals):
        _loop, _n, lines, _ind = comp
        for ln in lines:
            if b0 in t.line_boxes[ln]:
                return comp
    raise ValueError("box not in a component")  # pragma: no cover
