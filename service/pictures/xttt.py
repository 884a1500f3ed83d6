"""The Extreme Tic-Tac-Toe scene: the 16x16 board by blocks with row and column numbers, won
and drawn blocks shaded, the cells legal for the next move marked, every mark (the last one
highlighted), the position in words, a pending bonus move, the status; for an analysis also
the best move, the values of the best and the losing cells (or of every analysed cell), the
analysis line and a legend."""

from __future__ import annotations

from boxfish.engine.text import XTTT_NAMES, board_caption, format_value, status_lines

from .dots import value_classes
from .notes import Note, analysis_line, coordinates_line, labelled_moves, legend_lines, place_notes
from .scene import Prim, Scene, move_attr

#: The margin around the board, the band of coordinates above and left of it and the gap
#: between blocks, in units (one unit: a cell).
MARGIN = 0.4
COORD = 0.6
GAP = 0.3
NAMES = XTTT_NAMES


def _cell(r: int, c: int) -> tuple[float, float]:
    return COORD + MARGIN + c + (c // 4) * GAP, COORD + MARGIN + r + (r // 4) * GAP


def xttt_scene(state, result: dict | None = None, labels: str = "best",
               notes: list[Note] | tuple = (), hint=None) -> Scene:
    """The scene of an Extreme Tic-Tac-Toe ``state``: row numbers on the left and column
    numbers at the top (0 to 15, as moves name cells), then beneath the board
    :func:`~boxfish.engine.text.board_caption`, the status and ``notes`` (more text lines).
    ``result``: an analysis of it (``Analysis.to_dict()``) to draw, the cells labelled as
    ``labels`` says (:func:`~.notes.labelled_moves`), with the analysis line and a legend;
    or None. ``hint``: a cell to mark as the best one without an analysis, or None."""
    side = COORD + 16 + 3 * GAP + 2 * MARGIN
    board_h = side
    scene = Scene(side, board_h, state.game.name, state.serial)
    legal = set(state.legal_moves())
    for i in range(16):
        x, y = _cell(i, i)
        scene.text(["coord", "wide-coord", "column"], x + 0.5, COORD / 2 + 0.1, str(i), col=i)
        scene.text(["coord", "wide-coord", "row"], COORD / 2 + 0.1, y + 0.5, str(i), row=i)
    for r in range(16):
        for c in range(16):
            x, y = _cell(r, c)
            scene.rect(["cell"] + (["legal"] if (r, c) in legal else []), x, y, 1, 1,
                       move=f"{r},{c}")
    pad = 0.08
    for b, code in enumerate(state.block_status()):
        br, bc = divmod(b, 4)
        x, y = _cell(br * 4, bc * 4)
        kind = {"open": "open", "x": "won-0", "o": "won-1", "drawn": "drawn"}[code]
        scene.rect(["block", kind], x - pad, y - pad, 4 + 2 * pad, 4 + 2 * pad,
                   block=f"{br},{bc}")
    last = state.last_move
    if last is not None:
        scene.rect(["recent"], *_cell(*last), 1, 1, move=move_attr(last))
    best = tuple(result["best_move"]) if result and result.get("best_move") else None
    if best is None and hint is not None:
        best = tuple(hint)
    if best is not None:
        scene.rect(["best"], *_cell(*best), 1, 1, move=move_attr(best))
    for r, row in enumerate(state.board()):
        for c, ch in enumerate(row):
            if ch == ".":
                continue
            x, y = _cell(r, c)
            classes = ["mark", "p0" if ch == "x" else "p1"]
            if (r, c) == last:
                classes.append("last")
            scene.text(classes, x + 0.5, y + 0.5, ch.upper(), move=f"{r},{c}")
    text: list[Note] = [(board_caption(state), ("caption", "wide"))]
    for line in status_lines(state):
        classes = ["status", "wide"]
        if line.startswith("bonus"):
            classes.append("bonus")
        text.append((line, tuple(classes)))
    if result is not None:
        shown = labelled_moves(result, labels)
        for mv in shown:
            x, y = _cell(*mv["move"])
            scene.text(value_classes(mv), x + 0.5, y + 0.5,
                       format_value(mv["value"], mv["exact"], mv["bound"]),
                       move=move_attr(mv["move"]))
        text.append((analysis_line(result), ("status", "wide", "analysis")))
        text += [(line, ("legend", "wide-legend")) for line in
                 legend_lines(state, result, len(shown), labels)]
        text.append((coordinates_line(state.game.name), ("legend", "wide-legend")))
    text += [(line, tuple(classes) + ("wide",)) for line, classes in notes]
    scene.height = place_notes(scene, text, board_h)
    scene.items.insert(0, Prim("rect", ("background",), 0, 0, w=scene.width, h=scene.height))
    return scene
