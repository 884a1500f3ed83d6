"""The learned horizon evaluation: gradient-boosted regression trees over features of the
position.

The features (:func:`features`, version ``FEATURE_VERSION``; the compiled core computes the
same integers in ``core/evaluate.c``), for a position with no box to take:

* one per line: 1 when drawn;
* three per box: 1 when its valence is 0, 1 or 2 (a taken box has none);
* per fill order ``i`` of the fill evaluation (:mod:`.evaluate`, ``FILLS`` of them): the
  fill's parity sign ``s`` (+1 when it drew an odd number of safe lines), the loony value
  ``f`` where it ends (the chain DP's, for the player in control) and ``s * f``;
* the undrawn lines, the boxes not taken, the safe lines now (undrawn lines next to no box of
  valence 2 or more) and their parity sign;
* where fill 0 ends: its chains of length 1, of length 2, of 3 or more (count and boxes), its
  loops (count and boxes) and its joints (boxes of valence 0 or 1);
* over all ``FEATURE_FILLS`` fill orders of the board: the sums of ``s``, ``f``, ``s * f``
  and of the lines drawn ``k``, the least and most ``k``, the least and most ``s * f``.

The model (:class:`Model`): regression trees whose leaf values are integers scaled by
``2**shift``, summed and rounded half up (then clamped to the boxes left), so that Python
and C give the same value bit for bit: the compiled and the Python search still agree node
for node. The value is the future-box margin for the player to move. A model answers only
for positions of at most ``max_undrawn`` undrawn lines, the most its training data had;
past them the fill evaluation does (trees know nothing beyond their data: measured, a model
trained on 5x5 positions of at most 38 undrawn lines used everywhere lost 40 of 60 games
to the fill evaluation at 200 ms a move).

Control, where it is cheap to decide: at a leaf with at most ``CONTROL_MAX_MOVES`` moves that
are not loony, the estimate can take the sign of the Nimstring value (:mod:`..nimstring`): a
value other than 0 means the player to move can leave the first loony move to the other, and
wins boxes (:func:`with_control`). It is off: see ``CONTROL_MAX_MOVES`` for why.

The model of a board size is ``weights/<w>x<h>.npz``, made by
``python -m boxfish.engine.dots.learn.train`` from exact values; a board without one (or an
analysis asking for ``evaluation="fill"``) uses the fill evaluation.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import numpy as np

from ..chain_dp import chain_counts
from ..nimstring import Nimstring, count_non_loony
from .board import FEATURE_FILLS, FILLS, Tables
from .evaluate import Evaluator, _blocked

__all__ = ["CONTROL_MAX_MOVES", "EVALUATIONS", "FEATURE_VERSION", "LearnedEvaluator", "Model",
           "feature_count", "features", "model_for", "resolve_evaluation", "with_control"]

#: The horizon evaluations an analysis can ask for: ``learned`` (the default where the board
#: has a model) and ``fill``, the hand-made one (:mod:`.evaluate`).
EVALUATIONS = ("learned", "fill")
FEATURE_VERSION = 3
#: Leaves with at most this many moves that are not loony take control's sign (0: none). Off:
#: where it is decided, control's sign is right far more often than the model's (95% against
#: 36-81% at 30-38 undrawn, bench/dots_nimstring_bench.py), but it changed neither the timed
#: analyses (5x5 at 38-44 undrawn, 1 s: 54% of the moves optimal with 16, 58% with none; 81
#: positions) nor play (16 against none, 200 ms a move: 30-30, margin +0.03, 95% interval
#: -0.52..+0.59), and costs time: a search's leaves that reach so few moves are ones its
#: proofs already settle. A fresh Nimstring value of a 5x5 position with 20 such moves took
#: at most 7 ms in the compiled core, with 30 up to 0.4 s.
CONTROL_MAX_MOVES = 0
#: Features after the line and box ones: 3 per fill, 4 counts, 7 of fill 0's end, 8 over
#: all the fill orders.
_PER_FILL = 3
_COUNTS = 4
_COMPONENTS = 7
_ALL_FILLS = 8
_WEIGHTS = "weights"


def feature_count(t: Tables) -> int:
    """The number of features of ``t``'s board."""
    return t.nl + 3 * t.nb + _PER_FILL * FILLS + _COUNTS + _COMPONENTS + _ALL_FILLS


def undrawn_index(t: Tables) -> int:
    """The index of the feature "undrawn lines"."""
    return t.nl + 3 * t.nb + _PER_FILL * FILLS


def left_index(t: Tables) -> int:
    """The index of the feature "boxes not taken"."""
    return undrawn_index(t) + 1


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
    ks, sfs = [], []
    sum_s = sum_f = 0
    for i in range(FEATURE_FILLS):
        k, end, end_vals = ev.fill(drawn, vals, i, blocked)
        f = ev.loony(end, end_vals)
        s = 1 if k & 1 else -1
        ks.append(k)
        sfs.append(s * f)
        sum_s += s
        sum_f += f
        if i < FILLS:
            x[o + _PER_FILL * i: o + _PER_FILL * (i + 1)] = [s, f, s * f]
        if i == 0:
            comps = chain_counts(t, end, end_vals)
    o += _PER_FILL * FILLS
    safe = (t.full & ~blocked).bit_count()
    x[o:o + _COUNTS] = [nl - drawn.bit_count(), left, safe, 1 if safe & 1 else -1]
    o += _COUNTS
    chains, loops, joints = comps
    long = [c for c in chains if c >= 3]
    x[o:o + _COMPONENTS] = [chains.count(1), chains.count(2), len(long), sum(long),
                            len(loops), sum(loops), joints]
    o += _COMPONENTS
    x[o:o + _ALL_FILLS] = [sum_s, sum_f, sum(sfs), sum(ks), min(ks), max(ks), min(sfs),
                           max(sfs)]
    return x


class Model:
    """Regression trees of one board size (see the module docstring), as flat node arrays:
    ``feature`` (-1 at a leaf), ``threshold`` (a split sends ``x[feature] <= threshold``
    to ``left``, else to ``right``), ``value`` (a leaf's, times ``2**shift``), and each
    tree's ``roots``; ``max_undrawn``: the most undrawn lines of a position it values (the
    evaluations leave the others to the fill evaluation); ``info``: how it was made (a
    dict). ``ValueError`` naming what does not fit."""

    __slots__ = ("w", "h", "shift", "feature", "threshold", "left", "right", "value",
                 "roots", "nfeatures", "max_undrawn", "info", "compiled")

    def __init__(self, w: int, h: int, nfeatures: int, shift: int, feature, threshold,
                 left, right, value, roots, max_undrawn: int, info: dict | None = None) -> None:
        self.w, self.h, self.nfeatures, self.shift = w, h, int(nfeatures), int(shift)
        self.max_undrawn = int(max_undrawn)
        self.feature = np.asarray(feature, dtype=np.int32)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.left = np.asarray(left, dtype=np.int32)
        self.right = np.asarray(right, dtype=np.int32)
        self.value = np.asarray(value, dtype=np.int64)
        self.roots = np.asarray(roots, dtype=np.int32)
        self.info = dict(info or {})
        self.compiled = None  # the compiled core's copy (compiled.model), made on first use
        n = len(self.feature)
        if not all(len(a) == n for a in (self.threshold, self.left, self.right, self.value)):
            raise ValueError(f"model {w}x{h}: node arrays of different lengths")
        split = self.feature >= 0
        if (np.any(self.feature >= self.nfeatures) or np.any(self.roots < 0)
                or np.any(self.roots >= n) or np.any(self.left[split] <= np.flatnonzero(split))
                or np.any(self.right[split] <= np.flatnonzero(split))
                or np.any(self.left[split] >= n) or np.any(self.right[split] >= n)):
            raise ValueError(f"model {w}x{h}: a node refers outside the model (children "
                             "must come after their parent)")
        if not 0 < self.shift < 31:
            raise ValueError(f"model {w}x{h}: shift {shift} is not in 1..30")

    @property
    def features(self) -> int:
        return self.nfeatures

    @property
    def trees(self) -> int:
        return len(self.roots)

    def digest(self) -> str:
        """A short hash of what decides its values (the trees and the shift)."""
        h = hashlib.sha256()
        for a in (self.feature, self.threshold, self.left, self.right, self.value, self.roots):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(f"{self.shift},{self.nfeatures},{self.max_undrawn}".encode())
        return h.hexdigest()[:12]

    def value_of(self, x, left: int) -> int:
        """The trees' value of the features ``x``, rounded half up and clamped to
        ``[-left, left]``."""
        feature, threshold, lo, hi, value = (self.feature, self.threshold, self.left,
                                             self.right, self.value)
        total = 0
        for n in self.roots:
            while feature[n] >= 0:
                n = lo[n] if x[feature[n]] <= threshold[n] else hi[n]
            total += int(value[n])
        v = (total + (1 << (self.shift - 1))) >> self.shift
        return max(-left, min(left, v))

    def save(self, path) -> None:
        np.savez_compressed(path, feature=self.feature.astype(np.int16),
                            threshold=self.threshold, left=self.left, right=self.right,
                            value=self.value.astype(np.int32), roots=self.roots,
                            shift=np.int64(self.shift), nfeatures=np.int64(self.nfeatures),
                            max_undrawn=np.int64(self.max_undrawn),
                            board=np.array([self.w, self.h]),
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
            return cls(w, h, int(z["nfeatures"]), int(z["shift"]), z["feature"],
                       z["threshold"], z["left"], z["right"], z["value"], z["roots"],
                       int(z["max_undrawn"]), info)


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


def with_control(v: int, control: bool) -> int:
    """The estimate ``v`` with control's sign: at least one box, won with control."""
    a = max(1, abs(v))
    return a if control else -a


class LearnedEvaluator:
    """The learned evaluation of one board size with its memo of values by position (emptied
    when it holds ``max_entries``); the fills and loony values are ``fill``'s (an
    :class:`~.evaluate.Evaluator`, whose ``ends`` memo it shares), and so are the values of
    positions past the model's ``max_undrawn``. Leaves of at most ``control_moves`` non-loony
    moves (by default ``CONTROL_MAX_MOVES``) take control's sign, from ``nim`` (a
    :class:`~..nimstring.Nimstring` with a memo of the same bound)."""

    __slots__ = ("fill", "model", "values", "max_entries", "control_moves", "nim")

    def __init__(self, fill: Evaluator, model: Model, control_moves: int | None = None) -> None:
        self.fill = fill
        self.model = model
        self.values: dict[int, int] = {}
        self.max_entries = fill.max_entries
        self.control_moves = CONTROL_MAX_MOVES if control_moves is None else control_moves
        self.nim = Nimstring(fill.t.w, fill.t.h, max_entries=fill.max_entries)

    def evaluate(self, drawn: int, vals: list[int]) -> int:
        """Estimated future-box margin for the player to move (no box can be taken now)."""
        v = self.values.get(drawn)
        if v is None:
            if self.fill.t.nl - drawn.bit_count() > self.model.max_undrawn:
                v = self.fill.evaluate(drawn, vals)
            else:
                x = features(self.fill, drawn, vals)
                v = self.model.value_of(x, x[left_index(self.fill.t)])
            c = self.control_moves
            if c > 0 and count_non_loony(self.nim.geo, drawn, c) <= c:
                v = with_control(v, self.nim.value(drawn) != 0)
            if len(self.values) >= self.max_entries:
                self.values.clear()
            self.values[drawn] = v
        return v

    def clear(self) -> None:
        self.values.clear()
        self.nim.clear()

    def __len__(self) -> int:
        return len(self.values)
