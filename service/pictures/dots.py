"""The Dots-and-Boxes scene: the dots with their coordinates, drawn lines (the last one
highlighted), a click target on every undrawn line, captured boxes in their owner's colour,
and beneath the board the position in words and the status (scores, whose turn); for an
analysis also the best move, the values of the best and the losing lines (or of every line;
on the line's middle, but the best move's beside its line, which it would hide), the
analysis line and a legend."""

from __future__ import annotations

from dataclasses import replace

from boxfish.engine.text import board_caption, format_value, status_lines

from .notes import Note, analysis_line, coordinates_line, labelled_moves, legend_lines, place_notes
from .scene import Box, Prim, Scene, move_attr, overlap, stroke_box, text_box

#: The margin around the dots (where the best move's label may go), the band of coordinates
#: above and left of it, and the narrowest picture (in units: one unit is the distance
#: between two dots).
MARGIN = 0.6
COORD = 0.4
MIN_WIDTH = 6.0
#: The space between the best line's stroke and its value label (units).
LABEL_GAP = 0.03


def _dot(x: int, y: int, left: float) -> tuple[float, float]:
    return left + x - 1, COORD + MARGIN + y - 1


def _ends(move, left: float) -> tuple[float, float, float, float]:
    x, y, o = move
    x1, y1 = _dot(x, y, left)
    return (x1, y1, x1 + 1, y1) if o == 1 else (x1, y1, x1, y1 + 1)


def value_classes(mv: dict) -> list[str]:
    """The classes of a value label: ``value``, its bound (``exact``, ``lower``, ``upper`` or
    ``estimate``) and its sign (``positive`` / ``negative``, none for 0)."""
    out = ["value", "exact" if mv["exact"] else str(mv["bound"])]
    if mv["value"] > 0:
        out.append("positive")
    elif mv["value"] < 0:
        out.append("negative")
    return out


def beside(line: Prim, label: Prim, bounds: Box, obstacles: list[Box]) -> Prim:
    """``label`` moved beside the horizontal or vertical ``line``: across from the line's
    middle, just far enough that its :func:`~.scene.text_box` keeps :data:`LABEL_GAP` units
    from the line's :func:`~.scene.stroke_box`. Of the two sides, the one where the label's box
    stays inside ``bounds``, and of those the one sharing the least area with the
    ``obstacles`` (ties: above a horizontal line, left of a vertical one). Should neither side
    fit (a label wider than the board and its margin), the label is pushed back inside
    ``bounds`` on the side with more room, even over the line."""
    x0, y0, x1, y1 = text_box(replace(label, x=0.0, y=0.0))
    sx0, sy0, sx1, sy1 = stroke_box(line)
    mx, my = (line.x + line.x2) / 2, (line.y + line.y2) / 2
    horizontal = line.y == line.y2
    if horizontal:
        sides = [(mx, sy0 - LABEL_GAP - y1), (mx, sy1 + LABEL_GAP - y0)]
    else:
        sides = [(sx0 - LABEL_GAP - x1, my), (sx1 + LABEL_GAP - x0, my)]
    bx0, by0, bx1, by1 = bounds

    def room(at):  # how far the box stays inside the bounds (< 0: it sticks out)
        x, y = at
        return min(x + x0 - bx0, bx1 - (x + x1), y + y0 - by0, by1 - (y + y1))

    def cost(at):
        x, y = at
        box = (x + x0, y + y0, x + x1, y + y1)
        return sum(overlap(box, o) for o in obstacles)

    fits = [at for at in sides if room(at) >= 0]
    if fits:
        x, y = min(fits, key=cost)  # min keeps the first of equals: above / left
    else:
        x, y = max(sides, key=room)
        x = min(max(x, bx0 - x0), bx1 - x1)
        y = min(max(y, by0 - y0), by1 - y1)
    return replace(label, x=x, y=y)


def _move_best_label(scene: Scene, best: str, bounds: Box) -> None:
    """Put the best move's value label (if any) :func:`beside` the best line, inside the
    board and its margin (``bounds``), avoiding the other labels and the drawn lines."""
    attr = ("move", best)
    items = scene.items
    line = next(p for p in items if p.kind == "line" and "best" in p.classes)
    at = next((i for i, p in enumerate(items)
               if p.kind == "text" and "value" in p.classes and attr in p.data), None)
    if at is None:
        return
    obstacles = [text_box(p) if p.kind == "text" else stroke_box(p) for p in items
                 if p is not items[at] and (p.kind == "text" and "value" in p.classes
                                            or p.kind == "line" and "drawn" in p.classes)]
    items[at] = beside(line, items[at], bounds, obstacles)


def dots_scene(state, result: dict | None = None, labels: str = "best",
               notes: list[Note] | tuple = (), hint=None) -> Scene:
    """The scene of a Dots-and-Boxes ``state``: coordinates on the top and left edges
    (columns ``x`` and rows ``y`` of the dots, as moves name them), then beneath the board
    :func:`~boxfish.engine.text.board_caption`, the status and ``notes`` (more text lines).
    ``result``: an analysis of it (``Analysis.to_dict()``) to draw, its move values
    labelled as ``labels`` says (:func:`~.notes.labelled_moves`), with the analysis line and
    a legend; or None. ``hint``: a move to mark as the best one (the dashed line) without an
    analysis, or None."""
    geo = state.game.geometry
    w, h = geo.width, geo.height
    width = max(w + 2 * MARGIN + COORD, MIN_WIDTH)
    left = COORD + (width - COORD - w) / 2  # the first dot column
    board_h = COORD + h + 2 * MARGIN
    scene = Scene(width, board_h, state.game.name, state.serial)
    for x, y in geo.box_xy:
        if state.valence(x, y) == 4:
            owner = state.owner(x, y)
            bx, by = _dot(x, y, left)
            scene.rect(["box", f"owner-{owner}" if owner >= 0 else "owner-none"],
                       bx, by, 1, 1, box=f"{x},{y}")
    for x in range(1, w + 2):
        scene.text(["coord", "column"], _dot(x, 1, left)[0], COORD / 2, str(x), column=x)
    for y in range(1, h + 2):
        scene.text(["coord", "row"], left - MARGIN - COORD / 2, _dot(1, y, left)[1], str(y),
                   row=y)
    drawn = state.drawn
    history = state.history
    last = history[-1] if history else None
    best = tuple(result["best_move"]) if result and result.get("best_move") else None
    if best is None and hint is not None:
        best = tuple(hint)
    if best is not None:
        scene.line(["best"], *_ends(best, left), move=move_attr(best))
    for line, move in enumerate(geo.moves):
        if drawn >> line & 1:
            classes = ["line", "drawn"] + (["last"] if move == last else [])
            scene.line(classes, *_ends(move, left), move=move_attr(move))
    for y in range(1, h + 2):
        for x in range(1, w + 2):
            scene.circle(["dot"], *_dot(x, y, left), 0.085)
    text: list[Note] = [(board_caption(state), ("caption",))]
    text += [(line, ("status",)) for line in status_lines(state)]
    if result is not None:
        shown = labelled_moves(result, labels)
        for mv in shown:
            x1, y1, x2, y2 = _ends(mv["move"], left)
            scene.text(value_classes(mv), (x1 + x2) / 2, (y1 + y2) / 2,
                       format_value(mv["value"], mv["exact"], mv["bound"]),
                       move=move_attr(mv["move"]))
        if best is not None:
            _move_best_label(scene, move_attr(best),
                             (left - MARGIN, COORD, left + w + MARGIN, board_h))
        text.append((analysis_line(result), ("status", "analysis")))
        text += [(line, ("legend",)) for line in
                 legend_lines(state, result, len(shown), labels)]
        text.append((coordinates_line(state.game.name), ("legend",)))
    for line, move in enumerate(geo.moves):
        if not drawn >> line & 1:
            scene.line(["slot"], *_ends(move, left), move=move_attr(move))
    text += list(notes)
    scene.height = place_notes(scene, text, board_h)
    scene.items.insert(0, Prim("rect", ("background",), 0, 0, w=scene.width, h=scene.height))
    return scene
