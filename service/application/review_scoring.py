"""Scoring a reviewed game: from the engine's analysis of every position to each move's loss,
judgement and each player's accuracy (docs/reviews.md says the same for users).

Values are the engine's (``Analysis.to_dict()``), for the side to move; the player who moved is
the side to move in the position before the move, so ``value_before`` (the position's value)
and ``value_played`` (the value of the move played) are in that player's terms. ``loss`` is
best minus played, never negative: exact when both are proven, else the engine's estimate
clamped to the proven bounds (``lower``/``upper`` of the loss; None where unbounded).

Dots and Boxes: the value of the move played is also the next position's value seen from the
mover (``completed + value`` when the move completed boxes and the mover moves again,
``-value`` otherwise; 0 after the last move), so a position proven late in the game proves the
move that led to it. Extreme Tic-Tac-Toe: the move's own value in the position's analysis.

Judgements (loss at least the threshold): :data:`THRESHOLDS`. Accuracy of a player: 100 times
the mean over their moves of ``max(0, 1 - loss / blunder threshold)``, one decimal.
"""

from __future__ import annotations

import math

from boxfish.engine.xttt.evaluate import W_PTS

DOTS = "dots-and-boxes"

#: Per game: the least loss of an inaccuracy, a mistake and a blunder. Dots and Boxes: boxes
#: of final margin. Extreme Tic-Tac-Toe: evaluation units, where ``W_PTS`` is one expected
#: rule-16 point (1, 3 and 8 points).
THRESHOLDS: dict[str, tuple[float, float, float]] = {
    DOTS: (1, 2, 4),
    "extreme-tictactoe": (1 * W_PTS, 3 * W_PTS, 8 * W_PTS),
}
JUDGEMENTS = ("best", "inaccuracy", "mistake", "blunder")

INF = math.inf


def thresholds(game: str) -> tuple[float, float, float]:
    """The judgement thresholds of ``game`` (those of Dots and Boxes for a game not listed)."""
    return THRESHOLDS.get(game, THRESHOLDS[DOTS])


def judgement(loss: float, game: str) -> str:
    """``best``, ``inaccuracy``, ``mistake`` or ``blunder`` for a ``loss`` in ``game``."""
    inaccuracy, mistake, blunder = thresholds(game)
    if loss >= blunder:
        return "blunder"
    if loss >= mistake:
        return "mistake"
    if loss >= inaccuracy:
        return "inaccuracy"
    return "best"


def _interval(entry: dict) -> tuple[float, float, float]:
    """``(lower, upper, estimate)`` of an analysis or one of its moves (unbounded: +-inf)."""
    value = entry["value"]
    if entry.get("exact"):
        return value, value, value
    lo, hi = entry.get("lower"), entry.get("upper")
    return (-INF if lo is None else lo), (INF if hi is None else hi), value


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def _finite(x: float) -> float | None:
    return None if math.isinf(x) else x


def _maybe(x: float | None):
    return None if x is None else _number(x)


def _number(x: float):
    """An int where the value is whole (JSON shows ``2``, not ``2.0``)."""
    return int(x) if float(x).is_integer() else x


def score_move(game: str, serial: int, move: list, player: int, before: dict,
               completed: int = 0, turn_passed: bool = True, after: dict | None = None,
               terminal_after: bool = False) -> dict:
    """One reviewed move: the position ``before`` it (its analysis, with every root move), the
    move played by ``player`` (``completed`` boxes, ``turn_passed``), and for Dots and Boxes
    the analysis of the position ``after`` it (None: not analysed) or ``terminal_after``."""
    blo, bhi, best_est = _interval(before)
    played = next((m for m in before.get("moves", []) if list(m["move"]) == list(move)), None)
    plo, phi, pest = _interval(played) if played is not None else (-INF, bhi, best_est)
    if game == DOTS and (after is not None or terminal_after):
        clo, chi, cest = (0, 0, 0) if terminal_after else _interval(after)
        if turn_passed:
            clo, chi, cest = -chi, -clo, -cest
        else:
            clo, chi, cest = clo + completed, chi + completed, cest + completed
        lo, hi = max(plo, clo), min(phi, chi)
        if lo <= hi:  # proven bounds always meet; anything else keeps the position's own
            plo, phi = lo, hi
            if played is None:
                pest = cest
    phi = min(phi, bhi)           # no move is worth more than the position
    blo = max(blo, plo)           # nor the position less than a move
    pest, best_est = _clamp(pest, plo, phi), _clamp(best_est, blo, bhi)
    exact = blo == bhi and plo == phi
    loss_lo = max(0.0, blo - phi)
    loss_hi = max(0.0, bhi - plo)
    loss = (bhi - plo) if exact else _clamp(max(0.0, best_est - pest), loss_lo, loss_hi)
    if exact:
        best_moves = [list(m["move"]) for m in before.get("moves", [])
                      if m.get("exact") and m["value"] == bhi]
        if loss == 0 and list(move) not in best_moves:
            best_moves.append(list(move))
    else:
        best_moves = []
    if not best_moves and before.get("best_move") is not None:
        best_moves = [list(before["best_move"])]
    return {"serial": serial, "move": list(move), "player": player,
            "value_before": _number(best_est), "value_played": _number(pest),
            "loss": _number(loss), "exact": exact,
            "lower": _number(loss) if exact else _number(loss_lo),
            "upper": _number(loss) if exact else _maybe(_finite(loss_hi)),
            "best_moves": best_moves, "judgement": judgement(loss, game)}


def score_players(game: str, moves: list[dict], players: int = 2) -> list[dict]:
    """Per player (0 and 1): moves, total loss, whether every loss is exact, the count of each
    judgement and the accuracy (see the module docstring)."""
    blunder = thresholds(game)[2]
    out = []
    for p in range(players):
        mine = [m for m in moves if m["player"] == p]
        total = sum(m["loss"] for m in mine)
        accuracy = (100 * sum(max(0.0, 1 - m["loss"] / blunder) for m in mine) / len(mine)
                    if mine else 100.0)
        out.append({"player": p, "moves": len(mine), "total_loss": _number(total),
                    "exact": all(m["exact"] for m in mine),
                    "accuracy": round(accuracy, 1),
                    "judgements": {j: sum(1 for m in mine if m["judgement"] == j)
                                   for j in JUDGEMENTS}})
    return out
