"""Train the learned evaluation of a board size from exact data.

    python -m boxfish.engine.dots.learn.train --board 5x5 --seeds 1 --undrawn 22-38

reads the exact data of ``--seeds`` (:mod:`.data`'s files, every source), fits gradient-
boosted regression trees with LightGBM (squared error) on the features of
:mod:`boxfish.engine.dots.search.learned`, rounds their leaf values to integers and writes
them to ``engine/dots/search/weights/<w>x<h>.npz`` (``--out`` to write elsewhere), with how
the model was made in its ``info``.

Why trees: measured on the 5x5 data of 1,691 positions (47,664 samples; the validation
positions below; signs counted over all of them, zeros included), scikit-learn's MLP of
64 + 32 ReLUs had 4.01 boxes of mean absolute error and 61% of signs right, one of 128 + 64
3.89 and 66%; gradient-boosted trees (scikit-learn's histogram ones, 300 trees of 31 leaves)
3.72 and 69%, and 3.62 and 72% with the statistics over eight fill orders (sixteen: 3.57 and
73%, for twice the fills). The fill evaluation had 4.82 and 42%. The statistics are taken
over the fill evaluation's three orders (``FEATURE_FILLS``): over eight, the later 5x5 data
validated no better (3.44 boxes and 74%, against 3.41 and 74%), for five more fills a leaf.

The samples (:func:`samples`), all positions with no box to take (the horizon's):

* each solved position, valued exactly;
* each position one safe move away from it (the move's exact value, negated for the other
  player to move), which the data holds for free;
* every image of those under the board's symmetries.

Positions are split between training and validation by the data position they come from
(``i % 10 == 9`` validates), so that no validation position has a sibling in training.
The printed figures compare, on the validation positions, the integer network with the
fill evaluation: mean absolute error and how often the sign is right.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..search import compiled
from ..search.board import Tables, tables
from ..search.evaluate import Evaluator
from ..search.learned import FEATURE_VERSION, Model, features, left_index, undrawn_index
from . import store
from .data import parse_board, parse_counts

__all__ = ["Samples", "fit", "main", "samples", "to_model"]

#: The trees (how many, their leaves, the learning rate), the rounding of their leaf values
#: and the share of data positions kept for validation. 80 trees at 0.25 validate as well as
#: 300 at 0.1 on 5x5 (3.40 boxes, 74% of signs; 40 at 0.4: 3.46, 72%) and search 0.46-0.63x
#: the fill evaluation's nodes/s at 40 undrawn, against 0.21-0.35x (the trees' walk is most
#: of a leaf's cost).
TREES = 80
LEAVES = 31
LEARNING_RATE = 0.25
SHIFT = 16
VALIDATE_EVERY = 10
#: A model values positions of up to the most undrawn lines of which it had this many
#: training samples (past them, the fill evaluation: ``learned.Model.max_undrawn``).
COVERED = 1000


class Samples:
    """Positions (``drawn``), their exact values for the player to move (``value``) and
    whether each validates (``validate``), without duplicates (a position reached from two
    data positions is kept once, as the first one's)."""

    def __init__(self) -> None:
        self.by_drawn: dict[int, tuple[int, bool]] = {}

    def add(self, drawn: int, value: int, validate: bool) -> None:
        self.by_drawn.setdefault(drawn, (value, validate))

    def arrays(self):
        drawn = list(self.by_drawn)
        value = np.array([self.by_drawn[d][0] for d in drawn], dtype=np.float64)
        validate = np.array([self.by_drawn[d][1] for d in drawn], dtype=bool)
        return drawn, value, validate

    def __len__(self) -> int:
        return len(self.by_drawn)


def _quiet(t: Tables, drawn: int) -> bool:
    return all((drawn & m).bit_count() != 3 for m in t.box_mask)


def _images(t: Tables, drawn: int) -> set[int]:
    out = set()
    for perm in t.syms:
        img = 0
        d = drawn
        while d:
            low = d & -d
            img |= 1 << perm[low.bit_length() - 1]
            d ^= low
        out.add(img)
    return out


def samples(t: Tables, records, symmetries: bool = True) -> Samples:
    """The samples of the solved ``records`` of ``t``'s board (see the module
    docstring)."""
    out = Samples()
    for rec in records:
        if rec.get("value") is None:
            continue
        drawn = store.drawn_of(rec)
        validate = rec["i"] % VALIDATE_EVERY == VALIDATE_EVERY - 1
        found = []
        if _quiet(t, drawn):
            found.append((drawn, rec["value"]))
        for ln, v in store.move_values(rec, t.nl).items():
            child = drawn | 1 << ln
            taken = sum(1 for b in t.line_boxes[ln] if (child & t.box_mask[b]).bit_count() == 4)
            if _quiet(t, child):
                found.append((child, v - taken if taken else -v))
        for d, v in found:
            for img in (_images(t, d) if symmetries else (d,)):
                out.add(img, v, validate)
    return out


def feature_matrix(t: Tables, drawn: list[int]) -> np.ndarray:
    """The features of each position (the compiled core's where it is built, else the
    Python reference's: the same integers)."""
    x = np.empty((len(drawn), 0), dtype=np.int32)
    if compiled.fits(t):
        from ...errors import SearchAborted
        core = compiled.core(t, compiled.new_table(1 << 20, t.nl), False, SearchAborted,
                             time.perf_counter)
        rows = [core.features(d) for d in drawn]
    else:
        ev = Evaluator(t)
        rows = [features(ev, d, [(d & m).bit_count() for m in t.box_mask]) for d in drawn]
    if rows:
        x = np.array(rows, dtype=np.int32)
    return x


def fit(x: np.ndarray, y: np.ndarray, trees: int = TREES, leaves: int = LEAVES,
        seed: int = 1):
    """LightGBM trees fitted on ``x`` (integers) to ``y``: its ``Booster``."""
    import lightgbm

    params = {"objective": "regression", "learning_rate": LEARNING_RATE, "num_leaves": leaves,
              "min_data_in_leaf": 20, "feature_fraction": 0.9, "bagging_fraction": 0.8,
              "bagging_freq": 1, "seed": seed, "deterministic": True, "num_threads": 0,
              "verbosity": -1}
    return lightgbm.train(params, lightgbm.Dataset(x.astype(np.float64), y), trees)


def to_model(booster, w: int, h: int, nfeatures: int, max_undrawn: int, shift: int = SHIFT,
             info: dict | None = None) -> Model:
    """The :class:`~boxfish.engine.dots.search.learned.Model` of a LightGBM ``booster``
    (from its documented ``dump_model()``: every split ``<=`` on a feature without
    missing values), leaf values rounded at ``2**shift``."""
    feature, threshold, left, right, value, roots = [], [], [], [], [], []

    def add(node) -> int:
        i = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(0)
        right.append(0)
        value.append(0)
        if "leaf_value" in node:
            value[i] = round(node["leaf_value"] * (1 << shift))
            return i
        if node["decision_type"] != "<=" or node["missing_type"] not in ("None", "NaN"):
            raise ValueError(f"a split this engine cannot read: {node['decision_type']} "
                             f"with missing values {node['missing_type']}")
        feature[i] = node["split_feature"]
        threshold[i] = float(node["threshold"])
        left[i] = add(node["left_child"])
        right[i] = add(node["right_child"])
        return i

    for tree in booster.dump_model()["tree_info"]:
        roots.append(add(tree["tree_structure"]))
    return Model(w, h, nfeatures, shift, feature, threshold, left, right, value, roots,
                 max_undrawn, info)


def _figures(pred: np.ndarray, y: np.ndarray) -> dict:
    """Mean absolute error, and the share of right signs where the exact value is not 0 (an
    estimate of 0 counts as wrong)."""
    nz = y != 0
    return {"mae": round(float(np.abs(pred - y).mean()), 3),
            "sign": round(float((np.sign(pred[nz]) == np.sign(y[nz])).mean()), 4)}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m boxfish.engine.dots.learn.train",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="5x5", help="WxH boxes")
    ap.add_argument("--seeds", default="1", help="the data seeds to train on (comma list)")
    ap.add_argument("--undrawn", default=None,
                    help="only data positions of these undrawn counts (30-38, or 30,32,40-42)")
    ap.add_argument("--dir", default=None,
                    help=f"the data folder (default ${store.ENV}, else ~/.cache/boxfish/exact)")
    ap.add_argument("--out", default=None,
                    help="where to write the model (default: the package's weights folder)")
    ap.add_argument("--trees", type=int, default=TREES, help="the number of trees")
    ap.add_argument("--leaves", type=int, default=LEAVES, help="the leaves of each tree")
    ap.add_argument("--seed", type=int, default=1, help="the training's random seed")
    ap.add_argument("--covered", type=int, default=COVERED,
                    help="the model values positions of up to the most undrawn lines of "
                         "which it had this many training samples")
    ap.add_argument("--no-symmetries", action="store_true",
                    help="train on the positions only, not their images too")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    w, h = parse_board(args.board)
    t = tables(w, h)
    root = Path(args.dir).expanduser() if args.dir else store.default_dir()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    counts = set(parse_counts(args.undrawn)) if args.undrawn else None
    start = time.perf_counter()
    records, files = [], []
    for seed in seeds:
        for path in sorted(root.glob(f"{w}x{h}/*-seed{seed}.jsonl")):
            _head, rows = store.read(path)
            got = [r for r in store.latest(rows).values() if r["value"] is not None
                   and (counts is None or r["u"] in counts)]
            records += got
            files.append({"file": path.name, "positions": len(got)})
    if not records:
        print(f"no solved data for {w}x{h} seeds {seeds} under {root}", file=sys.stderr)
        return 1
    s = samples(t, records, symmetries=not args.no_symmetries)
    drawn, y, validate = s.arrays()
    x = feature_matrix(t, drawn)
    print(f"{w}x{h}: {len(records)} data positions, {len(s)} samples "
          f"({int(validate.sum())} validate), {x.shape[1]} features, "
          f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    booster = fit(x[~validate], y[~validate], args.trees, args.leaves, args.seed)
    info = {"feature_version": FEATURE_VERSION, "board": f"{w}x{h}", "trees": args.trees,
            "leaves": args.leaves, "data": files, "samples": len(s),
            "validate": int(validate.sum()), "symmetries": not args.no_symmetries,
            "seed": args.seed, "undrawn": args.undrawn, "learning_rate": LEARNING_RATE}
    per_undrawn = np.bincount(x[~validate, undrawn_index(t)])
    covered = np.flatnonzero(per_undrawn >= args.covered)
    max_undrawn = int(covered[-1]) if len(covered) else 0
    model = to_model(booster, w, h, x.shape[1], max_undrawn, SHIFT, info)
    xv, yv = x[validate], y[validate]
    pred = np.array([model.value_of(r, int(r[left_index(t)])) for r in xv])
    if compiled.fits(t) and len(xv):
        from ...errors import SearchAborted
        core = compiled.core(t, compiled.new_table(1 << 20, t.nl), False, SearchAborted,
                             time.perf_counter)
        fill = np.array([core.evaluate(d) for d, v in zip(drawn, validate, strict=True) if v])
        info["fill_validation"] = _figures(fill, yv)
    info["validation"] = _figures(pred, yv) if len(xv) else None
    info["train_seconds"] = round(time.perf_counter() - start)
    out = Path(args.out) if args.out else (
        Path(__file__).resolve().parent.parent / "search" / "weights" / f"{w}x{h}.npz")
    out.parent.mkdir(parents=True, exist_ok=True)
    model.info = info
    model.save(out)
    print(f"validation: learned {info['validation']}, fill {info.get('fill_validation')}; "
          f"{model.trees} trees, {info['train_seconds']} s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
