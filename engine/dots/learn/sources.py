"""The positions of the exact data, from three sources.

* ``safe``: :func:`~boxfish.engine.dots.positions.safe_play` (quiet positions of careful
  random play);
* ``biased``: :func:`~boxfish.engine.dots.positions.biased_play`, its ``p_safe`` drawn per
  position uniformly from ``P_SAFE`` (a capture may be pending);
* ``selfplay``: :func:`selfplay`, the engine against itself from the empty board, each move
  chosen by a node-limited analysis with some randomness.

A position is named by (board, source, seed, undrawn lines ``u``, index ``i``): its random
stream is seeded by that name alone (:func:`rng_of`), so it does not depend on which other
positions a run makes, and a run with a larger ``per-count`` or another undrawn range makes
the same positions where they overlap. Self-play positions also depend on the engine's search
(a later change to its evaluation gives other games): the data files keep each position, so
the data stays valid; only regenerating it from scratch would differ.
"""

from __future__ import annotations

import random

from ...analysis import Limit
from ..game import dots_and_boxes
from ..geometry import bits
from ..positions import GeneratedPosition, biased_play, safe_play
from ..search.board import tables
from ..search.driver import analyse_position

SOURCES = ("safe", "biased", "selfplay")
#: ``biased``: the range ``p_safe`` is drawn from.
P_SAFE = (0.7, 0.9)
#: ``selfplay``: the node limit of each move's analysis (a node limit, not a time limit, so
#: the games are the same on any machine), the margin within which the analysis' best moves
#: are chosen between uniformly, its ``multipv``, and the chance of a uniformly random safe
#: line instead (when no box can be taken).
SELFPLAY_NODES = 20_000
SELFPLAY_TOLERANCE = 1
SELFPLAY_MULTIPV = 3
SELFPLAY_EXPLORE = 0.1

__all__ = ["P_SAFE", "SELFPLAY_NODES", "SOURCES", "generate", "params", "rng_of", "selfplay"]


def params(source: str, selfplay_nodes: int = SELFPLAY_NODES) -> dict:
    """What besides the board, seed and name decides ``source``'s positions (kept in the data
    file's header, so a file is never extended with other positions)."""
    if source == "safe":
        return {}
    if source == "biased":
        return {"p_safe": list(P_SAFE)}
    if source == "selfplay":
        return {"nodes": selfplay_nodes, "tolerance": SELFPLAY_TOLERANCE,
                "multipv": SELFPLAY_MULTIPV, "explore": SELFPLAY_EXPLORE}
    raise ValueError(f"unknown source {source!r}: one of {', '.join(SOURCES)}")


def rng_of(w: int, h: int, source: str, seed: int, u: int, i: int) -> random.Random:
    """The random stream of one position (a str seed is hashed with SHA-512: the same on
    every platform and run)."""
    return random.Random(f"boxfish-exact:{w}x{h}:{source}:{seed}:{u}:{i}")


def generate(source: str, w: int, h: int, seed: int, u: int, i: int,
             prm: dict | None = None) -> GeneratedPosition:
    """Position ``i`` of ``u`` undrawn lines of ``source`` on a ``w`` x ``h`` board (``prm``:
    :func:`params`' for it, default the defaults')."""
    prm = params(source) if prm is None else prm
    rng = rng_of(w, h, source, seed, u, i)
    if source == "safe":
        return safe_play(rng, w, h, u)
    if source == "biased":
        return biased_play(rng, w, h, u, rng.uniform(*prm["p_safe"]))
    if source == "selfplay":
        return selfplay(rng, w, h, u, prm["nodes"], prm["tolerance"], prm["multipv"],
                        prm["explore"])
    raise ValueError(f"unknown source {source!r}: one of {', '.join(SOURCES)}")


def selfplay(rng: random.Random, w: int, h: int, undrawn: int, nodes: int = SELFPLAY_NODES,
             tolerance: int = SELFPLAY_TOLERANCE, multipv: int = SELFPLAY_MULTIPV,
             explore: float = SELFPLAY_EXPLORE) -> GeneratedPosition:
    """The position of ``undrawn`` lines left in a game of the engine against itself from the
    empty ``w`` x ``h`` board. Each move: with probability ``explore``, when no box can be
    taken and a safe line (one that gives no box its third side) exists, a safe line chosen
    uniformly; otherwise an analysis of ``nodes`` nodes on one thread with fresh tables
    (so the game depends on ``rng`` alone), and one of its ``multipv`` best moves valued
    within ``tolerance`` of the best, uniformly. ``ValueError`` for an ``undrawn`` outside
    ``0..lines``."""
    t = tables(w, h)
    if not 0 <= undrawn <= t.nl:
        raise ValueError(f"undrawn must be 0..{t.nl} on {w}x{h}, got {undrawn}")
    game = dots_and_boxes(w, h)
    drawn, to_move, moves = 0, 0, []
    while len(moves) < t.nl - undrawn:
        free = bits(t.full & ~drawn)
        vals = t.valences(drawn)
        safe = ([] if 3 in vals else
                [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])])
        # one draw per move whatever the position, so the stream of choices stays aligned
        if rng.random() < explore and safe:
            ln = rng.choice(safe)
        else:
            a = analyse_position(w, h, drawn, Limit(nodes=nodes), multipv=multipv, threads=1)
            near = [game.move_to_action(m.move) for m in a.moves
                    if m.value >= a.moves[0].value - tolerance]
            ln = rng.choice(near)
        if not t.completes(drawn, ln):
            to_move ^= 1
        drawn |= 1 << ln
        moves.append(ln)
    return GeneratedPosition(w, h, drawn, to_move, tuple(moves))
