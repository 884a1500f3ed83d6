"""Tables for one Dots-and-Boxes board size, built once per size and shared.

Line ids are OpenSpiel action ids (spec): horizontal lines first, row-major, then vertical ones.
Box ``b = (y - 1) * width + (x - 1)`` is the box whose top-left dot is ``(x, y)``.
"""

from __future__ import annotations

from functools import lru_cache

HORIZONTAL = 1
VERTICAL = 2

MAX_SIZE = 20


class Geometry:
    """Immutable lookup tables for a ``width`` x ``height`` board (sizes 1..MAX_SIZE).

    ``moves[line]``: the move ``(x, y, o)`` of a line; ``line_boxes[line]``: the 1 or 2 boxes the
    line borders; ``box_lines[box]``: (top, left, right, bottom) line ids; ``box_mask[box]``: the
    four line bits; ``line_box_mask[line]``: bits of the boxes a line borders;
    ``box_neighbours[box]``: ``(line, other_box_or_-1)`` for each of the box's four lines
    (-1 = the border of the board); ``other[line]``: dict box -> the box across ``line`` from
    it (-1 = the border).
    """

    __slots__ = ("width", "height", "num_lines", "num_boxes", "num_horizontal", "moves",
                 "line_boxes", "box_lines", "box_mask", "line_box_mask", "box_neighbours",
                 "other", "box_xy", "all_lines")

    def __init__(self, width: int, height: int) -> None:
        w, h = width, height
        self.width, self.height = w, h
        self.num_horizontal = (h + 1) * w
        self.num_lines = self.num_horizontal + h * (w + 1)
        self.num_boxes = w * h
        self.all_lines = (1 << self.num_lines) - 1
        moves = []
        for r in range(h + 1):
            for c in range(w):
                moves.append((c + 1, r + 1, HORIZONTAL))
        for r in range(h):
            for c in range(w + 1):
                moves.append((c + 1, r + 1, VERTICAL))
        self.moves = tuple(moves)
        box_lines = []
        for r in range(h):
            for c in range(w):
                top = r * w + c
                bottom = (r + 1) * w + c
                left = self.num_horizontal + r * (w + 1) + c
                box_lines.append((top, left, left + 1, bottom))
        self.box_lines = tuple(box_lines)
        self.box_mask = tuple(sum(1 << ln for ln in bl) for bl in box_lines)
        self.box_xy = tuple((b % w + 1, b // w + 1) for b in range(self.num_boxes))
        adj: list[list[int]] = [[] for _ in range(self.num_lines)]
        for b, bl in enumerate(box_lines):
            for ln in bl:
                adj[ln].append(b)
        self.line_boxes = tuple(tuple(a) for a in adj)
        self.line_box_mask = tuple(sum(1 << b for b in a) for a in adj)
        neighbours = []
        for b, bl in enumerate(box_lines):
            row = []
            for ln in bl:
                others = [o for o in self.line_boxes[ln] if o != b]
                row.append((ln, others[0] if others else -1))
            neighbours.append(tuple(row))
        self.box_neighbours = tuple(neighbours)
        other: list[dict[int, int]] = [{} for _ in range(self.num_lines)]
        for b, row in enumerate(neighbours):
            for ln, o in row:
                other[ln][b] = o
        self.other = tuple(other)

    def line_id(self, x: int, y: int, o: int) -> int:
        """The line id of an in-range move ``(x, y, o)`` (unchecked: see ``in_range``)."""
        if o == HORIZONTAL:
            return (y - 1) * self.width + (x - 1)
        return self.num_horizontal + (y - 1) * (self.width + 1) + (x - 1)

    def in_range(self, x: int, y: int, o: int) -> bool:
        """Whether ``(x, y, o)`` names a line of this board (``o`` must already be 1 or 2)."""
        if o == HORIZONTAL:
            return 1 <= x <= self.width and 1 <= y <= self.height + 1
        return 1 <= x <= self.width + 1 and 1 <= y <= self.height

    def __repr__(self) -> str:
        return f"Geometry({self.width}, {self.height})"


@lru_cache(maxsize=64)
def geometry(width: int, height: int) -> Geometry:
    """The shared tables for a board size (built on first use; the 64 most recently used
    sizes are kept)."""
    return Geometry(width, height)


def bits(mask: int) -> list[int]:
    """The set bit indices of ``mask``, lowest first (the line ids of a set of lines)."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
