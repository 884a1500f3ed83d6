"""The learned horizon evaluation: a small integer network over features of the position.

The features (:func:`features`, version ``FEATURE_VERSION``; the compiled core computes the
same integers in ``core/evaluate.c``), for a position with no box to take:

* one per line: 1 when drawn;
* three per box: 1 when its valence is 0, 1 or 2 (a taken box has none);
* per fill order ``i`` of the fill evaluation (:mod:`.evaluate`): the fill's parity sign
  ``s`` (+1 when it drew an odd number of safe lines), the loony value ``f`` where it ends
  (the chain DP's, for the player in control) and ``s * f``;
* the undrawn lines, the boxes not taken, the safe lines now (undrawn lines next to no box of
  valence 2 or more) and their parity sign;
* where fill 0 ends: its chains of length 1, of length 2, of 3 or more (count and boxes), its
  loops (count and boxes) and its joints (boxes of valence 0 or 1).

The network (:class:`Model`): ``F -> H1 -> H2 -> 1`` with ReLUs, in integers scaled by
``2**shift`` so that Python (numpy, int64) and C give the same value bit for bit: the
compiled and the Python search still agree node for node. Its output is the future-box
margin for the player to move, rounded half up and clamped to the boxes left.

The weights of a board size are ``weights/<w>x<h>.npz``, made by
``python -m boxfish.engine.dots.learn.train`` from exact values; a board without them (or an
analysis asking for ``evaluation="fill"``) uses the fill evaluation.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from .board import FILLS, Tables
from .evaluate import Evaluator, _blocked
from ..chain_dp import chain_counts

__all__ = ["EVALUATIONS", "FEATURE_VERSION", "LearnedEvaluator", "Model", "feature_count",
           "features", "model_for", "resolve_evaluation"]

#: The horizon evaluations an analysis can ask for: ``learned`` (the default where the board
#: has weights) and ``fill``, the hand-made one (:mod:`.evaluate`).
EVALUATIONS = ("learned", "fill")
FEATURE_VERSION = 1
#: Features after the line and box ones: 3 per fill, 4 counts, 7 of fill 0's end.
_PER_FILL = 3
_COUNTS = 4
_COMPONENTS = 7
_WEIGHTS = "weights"


def feature_count(t: Tables) -> int:
    """The number of features of ``t``'s board."""
    return t.nl + 3 * t.nb + _PER_FILL * FILLS + _COUNTS + _COMPONENTS


def features(ev: Evaluator, drawn: int, vals: list[int]) -> list[int]:
    """The features of ``drawn`` (``vals``: its box valences, none 3), with ``ev``'s fills
    and loony memo (see the module docstring)."""
    t = ev.t
    nl = t.nl
    x = [0] * feature_count(t)
    d = drawn
    while d:
        low = d & -d
        x[low.bit_length() - 1] = 1
        d ^= low
    left = 0
    for b, v in enumerate(vals):
        if v < 3:
            x[nl + 3 * b + v] = 1
        if v < 4:
            left += 1
    blocked = _blocked(t, drawn, vals)
    o = nl + 3 * t.nb
    comps = None
    for i in range(FILLS):
        k, end, end_vals = ev.fill(drawn, vals, i, blocked)
        f = ev.loony(end, end_vals)
        s = 1 if k & 1 else -1
        x[o], x[o + 1], x[o + 2] = s, f, s * f
        o += _PER_FILL
        if i == 0:
            comps = chain_counts(t, end, end_vals)
    safe = (t.full & ~blocked).bit_count()
    x[o], x[o + 1], x[o + 2], x[o + 3] = (nl - drawn.bit_count(), left, safe,
                                          1 if safe & 1 else -1)
    o += _COUNTS
    chains, loops, joints = comps
    long = [c for c in chains if c >= 3]
    x[o:o + _COMPONENTS] = [chains.count(1), chains.count(2), len(long), sum(long),
                            len(loops), sum(loops), joints]
    return x


class Model:
    """An integer network of one board size (see the module docstring): ``w1`` (H1 x F),
    ``b1``, ``w2`` (H2 x H1), ``b2``, ``w3`` (H2), ``b3``, all int64 arrays, and ``shift``;
    ``info``: how it was made (a dict). ``ValueError`` naming what does not fit."""

    __slots__ = ("w", "h", "shift", "w1", "b1", "w2", "b2", "w3", "b3", "info", "compiled")

    def __init__(self, w: int, h: int, shift: int, w1, b1, w2, b2, w3, b3,
                 info: dict | None = None) -> None:
        self.w, self.h, self.shift = w, h, int(shift)
        self.w1, self.b1, self.w2, self.b2, self.w3 = (
            np.asarray(a, dtype=np.int64) for a in (w1, b1, w2, b2, w3))
        self.b3 = int(b3)
        self.info = dict(info or {})
        self.compiled = None  # the compiled core's copy (compiled.model), made on first use
        h1, nf = self.w1.shape
        if (self.b1.shape != (h1,) or self.w2.shape[1:] != (h1,)
                or self.b2.shape != self.w2.shape[:1] or self.w3.shape != self.b2.shape):
            raise ValueError(f"model {w}x{h}: the layers' shapes do not chain")
        if not 0 < self.shift < 24:
            raise ValueError(f"model {w}x{h}: shift {shift} is not in 1..23")
        # the compiled core keeps the first two layers in int32
        if max(int(abs(self.w1).max()), int(abs(self.w2).max()), int(abs(self.w3).max())) >= 2**31:
            raise ValueError(f"model {w}x{h}: a weight does not fit in 32 bits")

    @property
    def features(self) -> int:
        return int(self.w1.shape[1])

    def value(self, x, left: int) -> int:
        """The network's value of the features ``x``, rounded half up and clamped to
        ``[-left, left]``."""
        a1 = np.maximum(self.w1 @ np.asarray(x, dtype=np.int64) + self.b1, 0)
        a2 = np.maximum(self.w2 @ a1 + self.b2, 0) >> self.shift
        out = int(self.w3 @ a2) + self.b3
        v = (out + (1 << (2 * self.shift - 1))) >> (2 * self.shift)
        return max(-left, min(left, v))

    @classmethod
    def from_float(cls, w: int, h: int, layers, shift: int = 12,
                   info: dict | None = None) -> Model:
        """The integer model of float layers ``[(W1, b1), (W2, b2), (w3, b3)]`` (``W`` of
        shape (out, in)), rounded at ``2**shift``."""
        (w1, b1), (w2, b2), (w3, b3) = layers
        s = 1 << shift
        q = lambda a, scale: np.rint(np.asarray(a, dtype=np.float64) * scale).astype(np.int64)
        return cls(w, h, shift, q(w1, s), q(b1, s), q(w2, s), q(b2, s * s),
                   q(np.ravel(w3), s), int(q(np.ravel(b3), s * s)[0]), info)

    def save(self, path) -> None:
        np.savez_compressed(path, w1=self.w1.astype(np.int32), b1=self.b1,
                            w2=self.w2.astype(np.int32), b2=self.b2,
                            w3=self.w3.astype(np.int32), b3=np.int64(self.b3),
                            shift=np.int64(self.shift), board=np.array([self.w, self.h]),
                            info=np.array(json.dumps(self.info, sort_keys=True)))

    @classmethod
    def load(cls, source) -> Model:
        """The model saved at ``source`` (a path or an open binary file)."""
        with np.load(source) as z:
            w, h = (int(v) for v in z["board"])
            info = json.loads(str(z["info"]))
            if info.get("feature_version") != FEATURE_VERSION:
                raise ValueError(f"model {w}x{h}: feature version "
                                 f"{info.get('feature_version')}, this engine reads "
                                 f"{FEATURE_VERSION}")
            return cls(w, h, int(z["shift"]), z["w1"], z["b1"], z["w2"], z["b2"], z["w3"],
                       int(z["b3"]), info)


def model_for(t: Tables) -> Model | None:
    """The shipped model of ``t``'s board size, or None (loaded once per ``Tables``)."""
    m = t.learned_model
    if m is None:
        ref = resources.files(__package__).joinpath(_WEIGHTS, f"{t.w}x{t.h}.npz")
        m = False
        if ref.is_file():
            with ref.open("rb") as f:
                m = Model.load(f)
            if m.features != feature_count(t):
                raise ValueError(f"model {t.w}x{t.h}: {m.features} features, the board has "
                                 f"{feature_count(t)}")
        t.learned_model = m
    return m or None


def resolve_evaluation(evaluation: str | None, t: Tables) -> str:
    """The horizon evaluation an analysis on ``t``'s board runs: ``evaluation`` when given,
    else ``learned`` where the board has a model and ``fill`` elsewhere. ``ValueError``
    for an unknown name, or ``learned`` on a board without a model."""
    if evaluation is None:
        return "learned" if model_for(t) is not None else "fill"
    if evaluation not in EVALUATIONS:
        raise ValueError(f"evaluation must be one of {', '.join(EVALUATIONS)}, got "
                         f"{evaluation!r}")
    if evaluation == "learned" and model_for(t) is None:
        raise ValueError(f"no learned evaluation for a {t.w}x{t.h} board")
    return evaluation


class LearnedEvaluator:
    """The learned evaluation of one board size with its memo of values by position (emptied
    when it holds ``max_entries``); the fills and loony values are ``fill``'s (an
    :class:`~.evaluate.Evaluator`, whose ``ends`` memo it shares)."""

    __slots__ = ("fill", "model", "values", "max_entries")

    def __init__(self, fill: Evaluator, model: Model) -> None:
        self.fill = fill
        self.model = model
        self.values: dict[int, int] = {}
        self.max_entries = fill.max_entries

    def evaluate(self, drawn: int, vals: list[int]) -> int:
        """Estimated future-box margin for the player to move (no box can be taken now)."""
        v = self.values.get(drawn)
        if v is None:
            x = features(self.fill, drawn, vals)
            v = self.model.value(x, sum(1 for b in vals if b < 4))
            if len(self.values) >= self.max_entries:
                self.values.clear()
            self.values[drawn] = v
        return v

    def clear(self) -> None:
        self.values.clear()

    def __len__(self) -> int:
        return len(self.values)
