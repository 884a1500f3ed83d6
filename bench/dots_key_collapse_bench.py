"""How many table keys would collapse if keys forgot where isolated chains and loops lie
(issue 34, item 2: measure first).

An isolated chain or loop is a component of boxes with two undrawn sides each, whose undrawn
lines join only boxes of the component or the board's edge: a separate summand whose only
content is its length and whether it is a loop. Positions that differ only in where such
components lie have equal values, so a key could be the canonical key of the rest of the
board (the components' lines drawn) plus the sorted (loop, length) list of the components.

For ``--positions`` positions of each set in ``--sets`` (as in ``dots_frontier_bench``), the
script solves the position (compiled core, ``--threads``, a table of ``--table-gb`` GiB, capped
at ``--cap`` seconds), exports the table's proven entries and prints, per position: the
distinct keys, how many of them hold an isolated component, and the distinct keys once
components are forgotten, i.e. the share of entries such keys would save.

    python bench/dots_key_collapse_bench.py --sets 4x5-40 --positions 4
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_frontier_bench import GiB, positions
from dots_solve_bench import say, table

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.search import compiled
from boxfish.engine.dots.search.board import Tables, tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position

RECORD = 24  # Table.export_proven's record


def forgetting_keys(t: Tables, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each key (a position, boards of up to 64 lines), whether it holds an isolated
    chain or loop, and its key once those are forgotten: one row of bytes, the canonical key
    of the board with their lines drawn, then the sorted (loop, boxes) codes of the
    components. Vectorised over the keys: a table holds millions."""
    n, nb = len(keys), t.nb
    undrawn = [((keys >> np.uint64(ln)) & np.uint64(1)) == 0 for ln in range(t.nl)]
    chain = np.stack([np.bitwise_count(keys & np.uint64(m)) == 2 for m in t.box_mask], 1)
    pairs = [(ln, bs[0], bs[1]) for ln, bs in enumerate(t.line_boxes) if len(bs) == 2]
    bad = np.zeros((n, nb), bool)
    for ln, a, b in pairs:  # a chain box with an undrawn line to a box of another valence
        u = undrawn[ln]
        bad[:, a] |= u & chain[:, a] & ~chain[:, b]
        bad[:, b] |= u & chain[:, b] & ~chain[:, a]
    links = [(undrawn[ln] & chain[:, a] & chain[:, b], a, b) for ln, a, b in pairs]
    for _ in range(nb):  # spread along the component
        before = bad.copy()
        for u, a, b in links:
            spread = u & (bad[:, a] | bad[:, b])
            bad[:, a] |= spread
            bad[:, b] |= spread
        if np.array_equal(before, bad):
            break
    iso = chain & ~bad
    label = np.where(iso, np.arange(nb, dtype=np.int16), np.int16(nb))
    for _ in range(nb):  # each component's smallest box
        before = label.copy()
        for u, a, b in links:
            m = np.minimum(label[:, a], label[:, b])
            both = u & iso[:, a]
            label[:, a] = np.where(both, m, label[:, a])
            label[:, b] = np.where(both, m, label[:, b])
        if np.array_equal(before, label):
            break
    lines = np.zeros(n, np.uint64)
    for ln, bs in enumerate(t.line_boxes):
        on = undrawn[ln] & np.any(iso[:, list(bs)], 1)
        lines |= np.where(on, np.uint64(1 << ln), np.uint64(0))
    ground = np.zeros((n, nb), np.int16)
    for ln, bs in enumerate(t.line_boxes):
        if len(bs) == 1:
            ground[:, bs[0]] += undrawn[ln]
    codes = np.zeros((n, nb), np.int16)
    for c in range(nb):
        member = label == c
        size = member.sum(1)
        loop = (np.where(member, ground, 0).sum(1) == 0) & (size > 0)
        codes[:, c] = np.where(size > 0, loop * 64 + size, 0)
    codes.sort(1)
    has = iso.any(1)
    board = compiled.board(t)
    rest = np.array([board.key(int(k | x))[0] if h else int(k)
                     for k, x, h in zip(keys, lines, has, strict=True)], np.uint64)
    rows = np.concatenate([rest.view(np.uint8).reshape(n, 8),
                           codes.astype(np.uint8)], 1)
    return has, rows


def proven_keys(data: bytes) -> np.ndarray:
    """The keys of Table.export_proven's records (low 64 bits: boards of up to 64 lines)."""
    rec = np.frombuffer(data, np.uint8).reshape(-1, RECORD)
    return np.unique(rec[:, :8].copy().view(np.uint64).ravel())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="4x5-40")
    ap.add_argument("--positions", type=int, default=4)
    ap.add_argument("--cap", type=float, default=120.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--table-gb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=2023)
    args = ap.parse_args()
    rows, tot = [], [0, 0, 0]
    for name in args.sets.split(","):
        size, undrawn = name.split("-")
        w, h = (int(x) for x in size.split("x"))
        t = tables(w, h)
        for i, drawn in enumerate(positions(w, h, int(undrawn), args.positions, args.seed)):
            caches = DotsCaches(t, table_bytes=int(args.table_gb * GiB))
            a = analyse_position(w, h, drawn, Limit(time_ms=int(args.cap * 1000)), multipv=1,
                                 solve=True, caches=caches, core="c", threads=args.threads)
            keys = proven_keys(caches.compiled_table().export_proven())
            has, forgotten = forgetting_keys(t, keys)
            with_comp = int(has.sum())
            forgot = np.unique(forgotten, axis=0)
            tot[0] += len(keys)
            tot[1] += with_comp
            tot[2] += len(forgot)
            rows.append([name, i, "exact" if a.exact else "capped", f"{a.nodes:,}",
                         f"{len(keys):,}", f"{with_comp / len(keys):.1%}", f"{len(forgot):,}",
                         f"{1 - len(forgot) / len(keys):.1%}"])
            say("  " + " ".join(str(x) for x in rows[-1]))
    say(f"\nProven keys after each solve, seed {args.seed}:")
    table(["set", "#", "solve", "nodes", "keys", "with isolated", "keys forgetting them",
           "saved"], rows)
    say(f"Total: {tot[0]:,} keys, {tot[1] / tot[0]:.1%} with an isolated component; "
        f"{tot[2]:,} once forgotten ({1 - tot[2] / tot[0]:.1%} fewer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
