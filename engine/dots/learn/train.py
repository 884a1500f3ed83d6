"""Train the learned evaluation of a board size from exact data.

    python -m boxfish.engine.dots.learn.train --board 5x5 --seeds 1

reads the exact data of ``--seeds`` (:mod:`.data`'s files, every source), trains a
``F -> H1 -> H2 -> 1`` ReLU network with scikit-learn (``MLPRegressor``, Adam, squared error,
early stopping) on the features of :mod:`boxfish.engine.dots.search.learned`, folds the
features' scaling into the first layer, rounds it to integers and writes it to
``engine/dots/search/weights/<w>x<h>.npz`` (``--out`` to write elsewhere), with how it was
made in its ``info``.

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
from ..search.board import FILLS, Tables, tables
from ..search.evaluate import Evaluator
from ..search.learned import FEATURE_VERSION, Model, features
from . import store
from .data import parse_board

__all__ = ["Samples", "fit", "main", "samples"]

#: The network's hidden layers, the rounding of its integers and the share of data positions
#: kept for validation (measured on 5x5: see the module docstring of ``learned``).
HIDDEN = (64, 32)
SHIFT = 12
VALIDATE_EVERY = 10


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


def fit(x: np.ndarray, y: np.ndarray, hidden=HIDDEN, seed: int = 1, max_iter: int = 200,
        verbose: bool = False):
    """A scikit-learn ``MLPRegressor`` fitted on standardised ``x``; returns its float layers
    ``[(W, b), ...]`` with the scaling folded into the first (``W`` of shape (out, in))."""
    from sklearn.neural_network import MLPRegressor

    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    net = MLPRegressor(hidden_layer_sizes=tuple(hidden), activation="relu", solver="adam",
                       batch_size=512, learning_rate_init=1e-3, max_iter=max_iter,
                       early_stopping=True, validation_fraction=0.1, n_iter_no_change=8,
                       random_state=seed, verbose=verbose)
    net.fit((x - mu) / sd, y)
    w1 = net.coefs_[0].T / sd
    b1 = net.intercepts_[0] - w1 @ mu
    layers = [(w1, b1)] + [(w.T, b) for w, b in zip(net.coefs_[1:], net.intercepts_[1:],
                                                      strict=True)]
    return layers, net.n_iter_


def _figures(pred: np.ndarray, y: np.ndarray) -> dict:
    return {"mae": round(float(np.abs(pred - y).mean()), 3),
            "sign": round(float((np.sign(pred) == np.sign(y)).mean()), 4)}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m boxfish.engine.dots.learn.train",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="5x5", help="WxH boxes")
    ap.add_argument("--seeds", default="1", help="the data seeds to train on (comma list)")
    ap.add_argument("--dir", default=None,
                    help=f"the data folder (default ${store.ENV}, else ~/.cache/boxfish/exact)")
    ap.add_argument("--out", default=None,
                    help="where to write the model (default: the package's weights folder)")
    ap.add_argument("--hidden", default=",".join(map(str, HIDDEN)),
                    help="the two hidden layers' sizes")
    ap.add_argument("--max-iter", type=int, default=200, help="epochs at most")
    ap.add_argument("--seed", type=int, default=1, help="the training's random seed")
    ap.add_argument("--no-symmetries", action="store_true",
                    help="train on the positions only, not their images too")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    w, h = parse_board(args.board)
    t = tables(w, h)
    root = Path(args.dir).expanduser() if args.dir else store.default_dir()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    hidden = tuple(int(s) for s in args.hidden.split(","))
    if len(hidden) != 2:
        raise SystemExit("--hidden takes two sizes")
    start = time.perf_counter()
    records, files = [], []
    for seed in seeds:
        for path in sorted(root.glob(f"{w}x{h}/*-seed{seed}.jsonl")):
            _head, rows = store.read(path)
            got = [r for r in store.latest(rows).values() if r["value"] is not None]
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
    layers, epochs = fit(x[~validate], y[~validate], hidden, args.seed, args.max_iter)
    info = {"feature_version": FEATURE_VERSION, "board": f"{w}x{h}", "hidden": list(hidden),
            "data": files, "samples": len(s), "validate": int(validate.sum()),
            "symmetries": not args.no_symmetries, "epochs": int(epochs), "seed": args.seed}
    model = Model.from_float(w, h, layers, SHIFT, info)
    xv, yv = x[validate], y[validate]
    left = xv[:, t.nl + 3 * t.nb + 3 * FILLS + 1] if len(xv) else xv
    pred = np.array([model.value(r, int(n)) for r, n in zip(xv, left, strict=True)])
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
          f"{epochs} epochs, {info['train_seconds']} s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
