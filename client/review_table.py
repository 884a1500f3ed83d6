"""``boxfish review GAME_ID``: review a stored game through the API and print it as a table.

One row per move (serial, player, move, value before it, value of the move played, loss,
judgement, a better move), then each player's total loss and accuracy. A loss that is only
estimated is marked ``~``; with ``--json`` the review's JSON is printed instead. Exit status:
0 when the review finished; 2 when the server refuses for good (404 no such game, 409 no
moves, 422 bad input); 1 on any other error.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from .client import Client
from .errors import BoxfishError, InvalidRequest, NotFound, NothingToReview
from .types import Review

COLUMNS = ("serial", "player", "move", "before", "played", "loss", "judgement", "better")


def _number(x) -> str:
    if x is None:
        return "?"
    return f"{x:+g}" if x else "0"


def format_review(review: Review) -> str:
    """The review as a text table, its players' totals below."""
    rows = [COLUMNS]
    for m in review.moves:
        loss = f"{m['loss']:g}" if m["exact"] else f"~{m['loss']:g}"
        better = "" if m["judgement"] == "best" or not m["best_moves"] else \
            " ".join(",".join(map(str, b)) for b in m["best_moves"][:2])
        rows.append((str(m["serial"]), str(m["player"]), ",".join(map(str, m["move"])),
                     _number(m["value_before"]), _number(m["value_played"]), loss,
                     m["judgement"], better))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [f"review {review.id} of game {review.game_id} at {review.position} "
             f"({review.game}, {review.time_ms} ms a position)"]
    lines += ["  ".join(cell.rjust(w) if i < 6 else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(r, widths, strict=True))).rstrip()
              for r in rows]
    for p in review.players:
        counts = ", ".join(f"{n} {j}" for j, n in p["judgements"].items() if n)
        exact = "" if p["exact"] else " (estimated)"
        lines.append(f"player {p['player']}: {p['moves']} moves, total loss "
                     f"{p['total_loss']:g}{exact}, accuracy {p['accuracy']:g}%"
                     + (f"; {counts}" if counts else ""))
    return "\n".join(lines)


def run_review(url: str, game_id: str, time_ms: int | None = None, as_json: bool = False,
               out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Review ``game_id`` on the server at ``url`` and print it; the exit status (module)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        with Client(url) as api:
            review = api.review(game_id, time_ms=time_ms)
    except (NotFound, NothingToReview, InvalidRequest) as exc:
        print(f"boxfish review: {exc.detail}", file=err)
        return 2
    except BoxfishError as exc:
        print(f"boxfish review: {exc}", file=err)
        return 1
    print(json.dumps(review.raw, indent=2) if as_json else format_review(review), file=out)
    return 0
