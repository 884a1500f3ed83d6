"""The exact data against the independent reference solver (tests/engine/dots/reference).

Samples ``--sample`` solved records (``--seed``) from the data files given (default: every
file of the data folder, ``--board`` only when given, ``--undrawn`` counts only when given),
solves each with ``reference_move_values`` (at most ``--cap`` seconds a position) and
compares the position's value and every move's value. Prints one line per record and the
totals: agreed, disagreed, gave up (the reference ran out of its cap). Any disagreement is a
bug of the engine or of the reference; the exit status is then 1.

    python bench/exact_data_check.py --sample 40 --cap 60
    python bench/exact_data_check.py ~/.cache/boxfish/exact/4x4/safe-seed1.jsonl --sample 10
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the reference solver lives in the tests

from boxfish.engine.dots.learn import store  # noqa: E402
from boxfish.engine.dots.learn.data import parse_counts  # noqa: E402
from tests.engine.dots.reference import ReferenceGaveUp, reference_move_values  # noqa: E402


def solved_records(paths: list[Path], undrawn: set[int] | None) -> list[tuple[dict, dict]]:
    """(header, record) of every solved position of ``paths`` (the last record of each)."""
    out = []
    for path in paths:
        head, rows = store.read(path)
        if head is None:
            continue
        for rec in store.latest(rows).values():
            if rec["value"] is not None and (undrawn is None or rec["u"] in undrawn):
                out.append((head, rec))
    return out


def check(head: dict, rec: dict, cap: float) -> tuple[str, str]:
    """(verdict, detail): ``agreed``, ``disagreed`` or ``gave up``."""
    w, h = head["width"], head["height"]
    drawn = store.drawn_of(rec)
    mine = store.move_values(rec, (h + 1) * w + h * (w + 1))
    try:
        ref = reference_move_values(w, h, drawn, max_seconds=cap)
    except ReferenceGaveUp:
        return "gave up", ""
    ref_value = max(ref.values(), default=0)
    if ref == mine and ref_value == rec["value"]:
        return "agreed", ""
    diff = {ln: (v, ref.get(ln)) for ln, v in mine.items() if ref.get(ln) != v}
    return "disagreed", (f"value {rec['value']} (reference {ref_value}); moves "
                         f"(data, reference): {diff}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path,
                    help="data files (default: every file of --dir)")
    ap.add_argument("--dir", type=Path, default=None,
                    help=f"the data folder (default ${store.ENV}, else ~/.cache/boxfish/exact)")
    ap.add_argument("--board", default="*x*", help="only this board's files, e.g. 5x5")
    ap.add_argument("--undrawn", default=None, help="only these counts, e.g. 30-40")
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cap", type=float, default=60.0,
                    help="seconds the reference may take per position")
    args = ap.parse_args()
    paths = args.files or sorted((args.dir or store.default_dir()).glob(
        f"{args.board}/*.jsonl"))
    pool = solved_records(paths, set(parse_counts(args.undrawn)) if args.undrawn else None)
    sample = random.Random(args.seed).sample(pool, min(args.sample, len(pool)))
    sample.sort(key=lambda hr: (hr[0]["width"], hr[0]["height"], hr[1]["u"]))
    print(f"{len(sample)} of {len(pool)} solved records of {len(paths)} files, reference "
          f"cap {args.cap:g} s", flush=True)
    totals: Counter = Counter()
    by_count: dict[tuple, Counter] = {}
    for head, rec in sample:
        start = time.perf_counter()
        verdict, detail = check(head, rec, args.cap)
        board = f"{head['width']}x{head['height']}"
        totals[verdict] += 1
        by_count.setdefault((board, rec["u"]), Counter())[verdict] += 1
        print(f"{board} {head['source']} seed {head['seed']} u={rec['u']} #{rec['i']} "
              f"{rec['drawn']}: {verdict} ({time.perf_counter() - start:.1f} s; engine "
              f"{rec['s']:.1f} s) {detail}", flush=True)
    print("\nboard undrawn: agreed / disagreed / gave up")
    for (board, u), c in sorted(by_count.items()):
        print(f"{board} {u:3d}: {c['agreed']} / {c['disagreed']} / {c['gave up']}")
    print(f"all: agreed {totals['agreed']}, disagreed {totals['disagreed']}, gave up "
          f"{totals['gave up']}")
    return 1 if totals["disagreed"] else 0


if __name__ == "__main__":
    sys.exit(main())
