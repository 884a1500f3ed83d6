"""Static evaluation of Extreme Tic-Tac-Toe positions.

Two levels, the same 12 patterns (rows, columns, diamonds) at each:

* Block level (:func:`block_info`; a search remembers its results in a
  :class:`BlockInfoCache`, by pair of 16-bit masks): each player's *potential*
  in an open block, a number in [0, 1) that grows with the player's marks in patterns the
  opponent has not spoiled (``1 - prod(1 - Q[k])`` over the live patterns holding ``k`` of the
  player's marks), and the player's *threats*: empty cells that would win the block at once.
* Big-board level (:func:`evaluate`): a won block counts 1 for its winner and 0 for the other
  player, a drawn block 0 for both, an open block its potential; each big pattern scores the
  product of its four blocks' values for each player, so patterns spoiled by the opponent or by
  a draw score 0 and a pattern one block from completion scores that block's potential.

The score adds each player's expected rule-16 points, the block values weighted by the block
values above (what decides a full-board draw, and what is left to play for once the big-board
patterns are spoiled). It is an int from x's point of view, bounded by :data:`MAX_EVAL` in
absolute value, far below the search's proven scores.
"""

from __future__ import annotations

from .tables import BLOCK_VALUE, DRAWN, IS_WIN, O_WON, OPEN, PATTERNS, X_WON

# Chance-like weight of a live pattern holding k = 0..3 of the player's marks.
Q = (0.02, 0.08, 0.3, 0.85)
W_BIG = 10_000  # per unit of big-board pattern product
W_PTS = 2_500  # per expected rule-16 point (tuned by self-play: points decide most games)
MAX_EVAL = W_BIG * 12 + W_PTS * 68

# The 12 big-board patterns as 4-tuples of block numbers.
BIG_PATTERNS = tuple(tuple(b for b in range(16) if p >> b & 1) for p in PATTERNS)

_VALUES = tuple(float(v) for v in BLOCK_VALUE)
# Rule-16 points of a mask of won blocks: PTS_LO[m & 255] + PTS_HI[m >> 8].
PTS_LO = tuple(sum(BLOCK_VALUE[b] for b in range(8) if m >> b & 1) for m in range(256))
PTS_HI = tuple(sum(BLOCK_VALUE[b + 8] for b in range(8) if m >> b & 1) for m in range(256))

_POP = tuple(bin(m).count("1") for m in range(1 << 16))

#: :func:`block_values` of a won or drawn block, by status code (None for an open block): a won
#: block counts 1 for its winner and 0 for the other player, a drawn one 0 for both; no threats.
CLOSED_BLOCK_VALUES: tuple[tuple[float, float, int, int] | None, ...] = tuple(
    {X_WON: (1.0, 0.0, 0, 0), O_WON: (0.0, 1.0, 0, 0), DRAWN: (0.0, 0.0, 0, 0)}.get(status)
    for status in range(4))
assert CLOSED_BLOCK_VALUES[OPEN] is None


def block_info(mx: int, mo: int) -> tuple[float, float, int, int]:
    """``(potential_x, potential_o, threats_x, threats_o)`` of an open block with these masks
    (computed each time: see :class:`BlockInfoCache`).

    ``threats_p`` is the mask of empty cells that complete a pattern for player p.
    """
    res = []
    for mine, theirs in ((mx, mo), (mo, mx)):
        miss = 1.0
        threats = 0
        for p in PATTERNS:
            if p & theirs:
                continue
            k = _POP[p & mine]
            miss *= 1.0 - Q[k] if k < 4 else 0.0
            if k == 3:
                threats |= p & ~mine
        res.append((1.0 - miss, threats))
    return (res[0][0], res[1][0], res[0][1], res[1][1])


def block_values(status: int, mx: int, mo: int) -> tuple[float, float, int, int]:
    """Like :func:`block_info` for a block of any status (won: 1 / 0, drawn: 0 / 0)."""
    if status == OPEN:
        return block_info(mx, mo)
    return CLOSED_BLOCK_VALUES[status]


class BlockInfoCache:
    """:func:`block_info` results by pair of masks: a search meets the same few thousand open
    blocks again and again. Each XTTT searcher owns one.

    Bounded: emptied when it holds ``max_entries`` results. ``table`` (key ``mx << 16 | mo``)
    may be read directly where a method call costs too much; it stays the same dict object
    when the cache is emptied. Not thread-safe.
    """

    __slots__ = ("table", "max_entries")

    def __init__(self, max_entries: int = 500_000) -> None:
        self.table: dict[int, tuple[float, float, int, int]] = {}
        self.max_entries = max_entries

    def info(self, mx: int, mo: int) -> tuple[float, float, int, int]:
        """:func:`block_info` of ``(mx, mo)``, remembered."""
        key = mx << 16 | mo
        table = self.table
        info = table.get(key)
        if info is None:
            info = block_info(mx, mo)
            if len(table) >= self.max_entries:
                table.clear()
            table[key] = info
        return info

    def values(self, status: int, mx: int, mo: int) -> tuple[float, float, int, int]:
        """:func:`block_values`, remembered for open blocks."""
        if status == OPEN:
            return self.info(mx, mo)
        return CLOSED_BLOCK_VALUES[status]

    def clear(self) -> None:
        self.table.clear()

    def __len__(self) -> int:
        return len(self.table)


def evaluate_loop(px, po) -> int:
    """The score for x of the block values ``px`` / ``po`` (16 floats each, see above).

    The plain definition; :func:`evaluate` is the same arithmetic unrolled (equal results).
    """
    sx = so = 0.0
    for a, b, c, d in BIG_PATTERNS:
        sx += px[a] * px[b] * px[c] * px[d]
        so += po[a] * po[b] * po[c] * po[d]
    e = 0.0
    for v, x, o in zip(_VALUES, px, po, strict=True):
        e += v * (x - o)
    return int(W_BIG * (sx - so) + W_PTS * e)


def _unrolled_source() -> str:
    """Source of :func:`evaluate`: :func:`evaluate_loop` with the loops written out, the same
    operations in the same order (so the same floats), about 1.7 times faster."""
    xs = ", ".join(f"x{b}" for b in range(16))
    os_ = ", ".join(f"o{b}" for b in range(16))
    lines = ["def evaluate(px, po):", f"    {xs} = px", f"    {os_} = po"]
    for name in "xo":
        terms = [f"{name}{a} * {name}{b} * {name}{c} * {name}{d}" for a, b, c, d in BIG_PATTERNS]
        lines.append(f"    s{name} = 0.0 + " + " + ".join(terms))
    terms = [f"{_VALUES[b]!r} * (x{b} - o{b})" for b in range(16)]
    lines.append("    e = 0.0 + " + " + ".join(terms))
    lines.append(f"    return int({W_BIG} * (sx - so) + {W_PTS} * e)")
    return "\n".join(lines) + "\n"


def _compile_evaluate():
    namespace: dict = {}
    exec(compile(_unrolled_source(), "<xttt evaluate>", "exec"), namespace)
    return namespace["evaluate"]


evaluate = _compile_evaluate()
evaluate.__doc__ = evaluate_loop.__doc__.split("\n")[0]


def evaluate_state(state) -> int:
    """:func:`evaluate` of an :class:`~engine.xttt.state.XtttState`, from x's point of view."""
    px, po = [], []
    marks = state.marks
    for b in range(16):
        vx, vo, _, _ = block_values(state.block_codes[b], marks[0][b], marks[1][b])
        px.append(vx)
        po.append(vo)
    return evaluate(px, po)


__all__ = ["block_info", "block_values", "BlockInfoCache", "CLOSED_BLOCK_VALUES", "evaluate",
           "evaluate_state", "MAX_EVAL", "IS_WIN"]
