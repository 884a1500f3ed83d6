"""The Extreme Tic-Tac-Toe scene: the 16x16 board by blocks, won and drawn blocks shaded,
the cells legal for the next move marked, every mark (the last one highlighted), a pending
bonus move, the status; for an analysis also the best move and each analysed cell's value."""

from __future__ import annotations

from boxfish.engine.text import XTTT_NAMES, format_value, status_lines

from .dots import analysis_line, value_classes
from .scene import Scene, move_attr

#: The margin around the board and the gap between blocks, in units (one unit: a cell).
MARGIN = 0.4
GAP = 0.3
NAMES = XTTT_NAMES
LINE_HEIGHT = 0.85


def _cell(r: int, c: int) -> tuple[float, float]:
    return MARGIN + c + (c // 4) * GAP, MARGIN + r + (r // 4) * GAP


def xttt_scene(state, result: dict | None = None) -> Scene:
    """The scene of an Extreme Tic-Tac-Toe ``state``; ``result``: an analysis of it
    (``Analysis.to_dict()``) to draw, or None."""
    status = status_lines(state)
    if result is not None:
        status.append(analysis_line(result))
    side = 16 + 3 * GAP + 2 * MARGIN
    board_h = side
    scene = Scene(side, board_h + LINE_HEIGHT * len(status) + 0.15, state.game.name,
                  state.serial)
    scene.rect(["background"], 0, 0, scene.width, scene.height)
    legal = set(state.legal_moves())
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
    if result is not None:
        for mv in result.get("moves") or []:
            x, y = _cell(*mv["move"])
            scene.text(value_classes(mv), x + 0.5, y + 0.5,
                       format_value(mv["value"], mv["exact"], mv["bound"]),
                       move=move_attr(mv["move"]))
    for i, text in enumerate(status):
        classes = ["status", "wide"]
        if text.startswith("bonus"):
            classes.append("bonus")
        elif i >= 1:
            classes.append("analysis")
        scene.text(classes, side / 2, board_h + LINE_HEIGHT * (i + 0.5), text)
    return scene
