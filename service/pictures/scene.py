"""The drawing model shared by every picture format: a :class:`Scene` is a list of primitives
(lines, rectangles, circles, texts) in one abstract unit, each with CSS-like classes and data
attributes; :data:`STYLES` says how each class looks. The SVG and PNG renderers draw the same
scene, so no drawing decision is made twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Player colours (player 0, player 1) and their light shades (boxes, won blocks).
P0, P1 = "#1f5fbf", "#c8322d"
P0_LIGHT, P1_LIGHT = "#c9dcf7", "#f5cdca"
HIGHLIGHT = "#f08c00"
BEST = "#1a9e4b"

#: How each class looks, in draw order of precedence (a later class of a primitive overrides
#: an earlier one's properties). Keys are ``"<kind>.<class>"`` or ``".<class>"`` (any kind);
#: properties: ``fill``, ``stroke`` (colours or ``"none"``), ``width`` (stroke width in
#: units), ``size`` (font size in units), ``weight`` (``"bold"``), ``dash`` (dash length in
#: units, SVG only), ``halo`` (a white outline of that width around a text, so that it stays
#: readable over lines), ``hidden`` (not drawn in raster pictures: hit targets for clicks).
STYLES: dict[str, dict] = {
    "rect.background": {"fill": "#ffffff", "stroke": "none"},
    "circle.dot": {"fill": "#222222", "stroke": "none"},
    "line.line": {"stroke": "#444444", "width": 0.09},
    "line.last": {"stroke": HIGHLIGHT, "width": 0.13},
    "line.slot": {"stroke": "transparent", "width": 0.34, "hidden": True},
    "line.best": {"stroke": BEST, "width": 0.13, "dash": 0.12},
    "rect.box": {"fill": "#e4e4e4", "stroke": "none"},
    "rect.owner-0": {"fill": P0_LIGHT},
    "rect.owner-1": {"fill": P1_LIGHT},
    "rect.cell": {"fill": "#ffffff", "stroke": "#b9b9b9", "width": 0.03},
    "rect.legal": {"fill": "#fff4c2"},
    "rect.block": {"fill": "none", "stroke": "none"},
    "rect.won-0": {"fill": P0_LIGHT, "stroke": P0, "width": 0.06},
    "rect.won-1": {"fill": P1_LIGHT, "stroke": P1, "width": 0.06},
    "rect.drawn": {"fill": "#dddddd", "stroke": "#999999", "width": 0.06},
    "rect.recent": {"fill": "none", "stroke": HIGHLIGHT, "width": 0.1},
    "rect.best": {"fill": "none", "stroke": BEST, "width": 0.12},
    "text.mark": {"size": 0.72, "weight": "bold"},
    "text.p0": {"fill": P0},
    "text.p1": {"fill": P1},
    "text.status": {"fill": "#222222", "size": 0.3},
    "text.caption": {"fill": "#444444", "size": 0.25},
    "text.legend": {"fill": "#555555", "size": 0.22},
    "text.coord": {"fill": "#777777", "size": 0.26},
    "text.wide": {"size": 0.6},
    "text.wide-legend": {"size": 0.44},
    "text.wide-coord": {"size": 0.42},
    "text.judgement": {"fill": "#222222", "size": 0.3},
    "text.best": {"fill": BEST},
    "text.inaccuracy": {"fill": "#8a6a00"},
    "text.mistake": {"fill": "#c46a00"},
    "text.blunder": {"fill": "#b3261e"},
    "text.bonus": {"fill": HIGHLIGHT},
    "text.value": {"fill": "#333333", "size": 0.24, "halo": 0.07},
    "text.exact": {"fill": "#1d1d1d"},
    "text.lower": {"fill": "#6b4e00"},
    "text.upper": {"fill": "#6b4e00"},
    "text.estimate": {"fill": "#777777"},
    "text.positive": {"fill": BEST},
    "text.negative": {"fill": "#b3261e"},
    # the value chart of a review (chart.py)
    "line.axis": {"stroke": "#cccccc", "width": 0.03},
    "line.zero": {"stroke": "#888888", "width": 0.04},
    "line.chart": {"stroke": "#444444", "width": 0.05},
    "circle.point": {"fill": "#444444", "stroke": "none"},
    "circle.best": {"fill": BEST},
    "circle.inaccuracy": {"fill": "#d4a017"},
    "circle.mistake": {"fill": HIGHLIGHT},
    "circle.blunder": {"fill": "#b3261e"},
    "circle.hole": {"fill": "#ffffff", "stroke": "none"},
    "text.chart-title": {"fill": "#222222", "size": 0.36},
    "text.axis-label": {"fill": "#555555", "size": 0.3},
}


@dataclass(frozen=True, slots=True)
class Prim:
    """One primitive. ``kind``: ``line`` (from ``(x, y)`` to ``(x2, y2)``), ``rect`` (corner
    ``(x, y)``, size ``(w, h)``), ``circle`` (centre ``(x, y)``, radius ``r``) or ``text``
    (``text`` centred on ``(x, y)``, or starting there with ``anchor="start"``, or ending
    there with ``anchor="end"``). ``classes``:
    the style classes, in order; ``data``: ``data-*`` attributes (SVG only)."""

    kind: str
    classes: tuple[str, ...]
    x: float
    y: float
    x2: float = 0.0
    y2: float = 0.0
    w: float = 0.0
    h: float = 0.0
    r: float = 0.0
    text: str = ""
    anchor: str = "middle"
    data: tuple[tuple[str, str], ...] = ()


def style_of(prim: Prim) -> dict:
    """The merged style of ``prim``'s classes (see :data:`STYLES`)."""
    out: dict = {}
    for c in prim.classes:
        out.update(STYLES.get("." + c, ()))
        out.update(STYLES.get(f"{prim.kind}.{c}", ()))
    return out


#: A text's advance per character, in ems, for :func:`text_box`: at least that of every
#: character a value label uses (digits, ``+-.~<=>``) in Pillow's default font (0.58),
#: Helvetica and Arial (0.584) and DejaVu Sans, a browser's usual fallback (0.636 digits).
CHAR_EM = 0.65

#: A box: ``(x0, y0, x1, y1)`` in units, ``x0 <= x1``, ``y0 <= y1``.
Box = tuple[float, float, float, float]


def text_box(prim: Prim) -> Box:
    """A box holding everything drawn for the text ``prim`` (its halo included), estimated
    from its length and font size: :data:`CHAR_EM` ems a character across, one em high. It is
    an upper bound for texts of the characters :data:`CHAR_EM` names (value labels), in either
    renderer; other texts (wider letters) may overflow it."""
    st = style_of(prim)
    size = st.get("size", 0.3)
    halo = st.get("halo", 0.0)
    width = CHAR_EM * size * len(prim.text)
    start = prim.x if prim.anchor == "start" else prim.x - width / 2
    half_h = size / 2 + halo
    return start - halo, prim.y - half_h, start + width + halo, prim.y + half_h


def stroke_box(prim: Prim) -> Box:
    """The box a horizontal or vertical line ``prim`` paints: its segment widened by half its
    stroke width on every side (which also holds the SVG's round caps)."""
    half = style_of(prim).get("width", 0.0) / 2
    return (min(prim.x, prim.x2) - half, min(prim.y, prim.y2) - half,
            max(prim.x, prim.x2) + half, max(prim.y, prim.y2) + half)


def overlap(a: Box, b: Box) -> float:
    """The area two boxes share (0 when they only touch or are apart)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


@dataclass(slots=True)
class Scene:
    """A picture: ``width`` x ``height`` units, the game's name and the serial shown (the root
    element's data), and the primitives in drawing order (later ones on top)."""

    width: float
    height: float
    game: str
    serial: int
    items: list[Prim] = field(default_factory=list)

    def line(self, classes, x, y, x2, y2, **data) -> None:
        self.items.append(Prim("line", tuple(classes), x, y, x2=x2, y2=y2, data=_data(data)))

    def rect(self, classes, x, y, w, h, **data) -> None:
        self.items.append(Prim("rect", tuple(classes), x, y, w=w, h=h, data=_data(data)))

    def circle(self, classes, x, y, r, **data) -> None:
        self.items.append(Prim("circle", tuple(classes), x, y, r=r, data=_data(data)))

    def text(self, classes, x, y, text, anchor="middle", **data) -> None:
        self.items.append(Prim("text", tuple(classes), x, y, text=text, anchor=anchor,
                               data=_data(data)))


def _data(data: dict) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in data.items())


def move_attr(move) -> str:
    """A move as a ``data-move`` value: its JSON list joined by commas (``"1,2,1"``)."""
    return ",".join(str(v) for v in move)
