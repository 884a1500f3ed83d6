"""The value chart of a review: the value of each position before a move, for the first player,
move by move, drawn in the board pictures' model (:mod:`.scene`), so the SVG and the PNG show
the same chart.

Each point is the position's value before move ``serial`` (the reviewer's ``value_before``,
turned to the first player's side: a second player's value is negated). A point is filled when
the loss of its move is exact, hollow when it is an estimate, and coloured by the move's
judgement; the zero line divides the first player's advantage (above) from the second's.
"""

from __future__ import annotations

from .scene import Scene

#: The chart's size in units (its aspect), and the room around the plot.
WIDTH, HEIGHT = 16.0, 7.0
LEFT, RIGHT, TOP, BOTTOM = 1.6, 0.4, 1.0, 0.9


def chart_scene(review: dict) -> Scene:
    """The chart of a finished review (its view: ``moves``, ``game``, ``position``, ``id``).
    Raises ValueError for a review with no moves."""
    moves = review.get("moves") or []
    if not moves:
        raise ValueError("a review without moves has no chart")
    values = [m["value_before"] if m["player"] == 0 else -m["value_before"] for m in moves]
    top = max(2.0, max(abs(v) for v in values))
    n = len(moves)
    scene = Scene(WIDTH, HEIGHT, review.get("game", ""), n)
    scene.rect(["background"], 0, 0, WIDTH, HEIGHT)
    x0, x1 = LEFT, WIDTH - RIGHT
    y0, y1 = TOP, HEIGHT - BOTTOM
    mid = (y0 + y1) / 2

    def x_of(i: int) -> float:
        return x0 + (x1 - x0) * (i / max(1, n - 1))

    def y_of(v: float) -> float:
        return mid - (y1 - y0) / 2 * (v / top)

    scene.text(["chart-title"], x0, TOP / 2,
               f"{review.get('game', '')} review {review.get('position', '')}: value for "
               f"player 1 before each move", anchor="start")
    for v in (top, 0, -top):
        scene.line(["axis"] + (["zero"] if v == 0 else []), x0, y_of(v), x1, y_of(v))
        label = "0" if v == 0 else f"{v:+g}"
        scene.text(["axis-label"], x0 - 0.15, y_of(v), label, anchor="end")
    scene.text(["axis-label", "p0"], 0.15, y0 + 0.3, "P1", anchor="start")
    scene.text(["axis-label", "p1"], 0.15, y1 - 0.3, "P2", anchor="start")
    step = max(1, n // 10)
    for i in range(0, n, step):
        scene.text(["axis-label"], x_of(i), y1 + 0.45, str(moves[i]["serial"]))
    for i in range(1, n):
        scene.line(["chart"], x_of(i - 1), y_of(values[i - 1]), x_of(i), y_of(values[i]))
    for i, (m, v) in enumerate(zip(moves, values, strict=True)):
        scene.circle(["point", m["judgement"]], x_of(i), y_of(v), 0.1, serial=m["serial"],
                     value=v, judgement=m["judgement"], exact=str(bool(m.get("exact"))).lower())
        if not m.get("exact"):  # an estimate: a hollow point
            scene.circle(["hole"], x_of(i), y_of(v), 0.05)
    return scene
