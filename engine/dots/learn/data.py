"""Exact data: positions with the exact value of the position and of every legal move.

    python -m boxfish.engine.dots.learn.data --board 5x5 --undrawn 30-44 --per-count 40 \\
        --seed 1 --cap 300
    python -m boxfish.engine.dots.learn.data --report

For each position named by (board, source, seed, undrawn count ``u``, index ``i`` <
``--per-count``), of each source of :mod:`.sources`, the engine's untimed search
(:func:`exact_values`) gives the value of every legal move, and the record is appended at
once to the source's file (:mod:`.store`: ``<dir>/<w>x<h>/<source>-seed<seed>.jsonl``,
``<dir>`` from ``--dir``, else ``$BOXFISH_EXACT_DIR``, else ``~/.cache/boxfish/exact``).

* Resumable: a run skips every position already solved in its files, and one recorded as
  unsolved within a cap at least as large as its own; SIGINT and SIGTERM stop it at once
  (the position being solved is dropped and solved again by the next run; exit status 130 /
  143). The positions are taken index by index, each undrawn count and source in turn, so a
  run stopped early has covered every band alike.
* ``--cap S``: a solve still running after S seconds is recorded as unsolved with the cap and
  its proven bounds; a later run with a larger cap tries it again.
* ``--workers N`` processes solve positions side by side (default 1; ``0``: in this process,
  where a stop waits for the solve under way), each with a compiled table of at most
  ``--table-gb`` GiB that it keeps from position to position of a board, and ``--threads``
  search threads. With one worker the records are written in the order above; with more, in
  the order they finish. Solving is deterministic in its values, not in its time or nodes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...analysis import Limit
from ..game import dots_and_boxes
from ..geometry import bits
from ..search.board import tables
from ..search.caches import DotsCaches
from ..search.driver import analyse_position
from . import store
from .sources import SELFPLAY_NODES, SOURCES, generate, params

GiB = 1 << 30

__all__ = ["Job", "Outcome", "Solver", "exact_values", "main", "parse_board", "parse_counts",
           "report", "run"]


def exact_values(w: int, h: int, drawn: int, caches: DotsCaches | None = None,
                 cap: float | None = None, threads: int = 1) -> dict:
    """The exact value of ``drawn`` on a ``w`` x ``h`` board and of drawing each undrawn line
    (in increasing line order), for the player to move, as a record's fields (:mod:`.store`):
    ``value``, ``values``, ``s``, ``nodes``; or, past ``cap`` seconds, ``value`` and
    ``values`` None with ``cap`` and the value's proven ``lower`` / ``upper`` bounds.

    One untimed analysis with ``multipv`` covering every move (each proven by MTD(f) on the
    shared table: measured on 5x5 at 38-42 undrawn, as fast as proving the root value and then
    refining the other moves, and about twice the root value's proof alone). ``caches``: the
    board's caches to search with and keep (default: fresh ones). ``RuntimeError`` when the
    answer contradicts itself (a bug)."""
    legal = bits(tables(w, h).full & ~drawn)
    start = time.perf_counter()
    limit = Limit(time_ms=None if cap is None else max(1, round(cap * 1000)))
    a = analyse_position(w, h, drawn, limit, multipv=max(1, len(legal)), solve=True,
                         start=start, caches=caches, threads=threads)
    run = {"s": round(time.perf_counter() - start, 3), "nodes": a.nodes}
    game = dots_and_boxes(w, h)
    by_line = {game.move_to_action(m.move): m for m in a.moves}
    if not (a.exact and len(by_line) == len(legal) and all(m.exact for m in a.moves)):
        return {"value": None, "values": None, "cap": cap, "lower": a.lower,
                "upper": a.upper, **run}
    values = [int(by_line[ln].value) for ln in legal]
    if max(values, default=0) != a.value:
        raise RuntimeError(f"{w}x{h} {drawn:#x}: the value {a.value} is not the best move "
                           f"value {max(values)}")
    return {"value": int(a.value), "values": values, **run}


@dataclass(frozen=True)
class Job:
    """What a run makes: ``per_count`` positions of each count of ``undrawn`` lines from each
    of ``sources`` on a ``w`` x ``h`` board, with ``seed``, into the files under ``root``;
    how it solves them: ``cap`` seconds at most each (None: no cap), ``threads`` search
    threads, ``workers`` processes (0: this one), ``table_gb`` GiB of table each."""

    w: int
    h: int
    undrawn: tuple[int, ...]
    per_count: int
    seed: int
    root: Path
    sources: tuple[str, ...] = SOURCES
    cap: float | None = None
    threads: int = 1
    workers: int = 1
    table_gb: float = 2.0
    selfplay_nodes: int = SELFPLAY_NODES

    def params_of(self, source: str) -> dict:
        return params(source, self.selfplay_nodes)

    def path(self, source: str) -> Path:
        return store.data_path(self.root, self.w, self.h, source, self.seed)


# -- the solving side (a worker process, or this one) ---------------------------------------

class Solver:
    """What a solving process keeps from position to position: the caches of one board (the
    last one asked for; a new board size drops them), its table bound and search threads."""

    def __init__(self, table_bytes: int, threads: int):
        self.table_bytes = table_bytes
        self.threads = threads
        self._board: tuple[int, int] | None = None
        self._caches: DotsCaches | None = None

    def caches(self, w: int, h: int) -> DotsCaches:
        if self._board != (w, h):
            self._caches = DotsCaches(tables(w, h), table_bytes=self.table_bytes)
            self._board = (w, h)
        return self._caches

    def solve(self, task: tuple) -> tuple[str, dict]:
        """(source, record) of one position: ``task`` = (w, h, source, seed, u, i, params,
        cap)."""
        w, h, source, seed, u, i, prm, cap = task
        p = generate(source, w, h, seed, u, i, prm)
        rec = {"u": u, "i": i, "drawn": hex(p.drawn), "to_move": p.to_move}
        rec.update(exact_values(w, h, p.drawn, self.caches(w, h), cap, self.threads))
        return source, rec


class _Process:
    """A pool process's one solver, set by the pool's initializer (a process holds no other
    state of a run)."""

    solver: Solver | None = None

    @classmethod
    def init(cls, table_bytes: int, threads: int) -> None:
        # Ctrl-C reaches the whole process group: the run stops its workers itself, by
        # SIGTERM, whose handler a forked worker would otherwise inherit from the run
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        cls.solver = Solver(table_bytes, threads)

    @classmethod
    def solve(cls, task: tuple) -> tuple[str, dict]:
        return cls.solver.solve(task)


def _results(job: Job, tasks: list[tuple], stop: Callable[[], bool]
             ) -> Iterator[tuple[str, dict]]:
    """The solved tasks, until they are all done or ``stop()`` says so."""
    table_bytes = int(job.table_gb * GiB)
    if job.workers <= 0:
        solver = Solver(table_bytes, job.threads)
        for task in tasks:
            if stop():
                return
            yield solver.solve(task)
        return
    pool = multiprocessing.Pool(job.workers, _Process.init, (table_bytes, job.threads))
    try:
        it = pool.imap_unordered(_Process.solve, tasks, chunksize=1)
        for _ in tasks:
            while True:
                if stop():
                    return
                try:
                    result = it.next(timeout=0.2)
                    break
                except multiprocessing.TimeoutError:
                    continue
            yield result
    finally:
        pool.terminate()
        pool.join()


def _todo(job: Job, files: dict[str, store.DataFile]) -> list[tuple]:
    """The tasks of ``job`` its files do not hold yet: index by index, each count in turn."""
    tasks = []
    for i in range(job.per_count):
        for u in job.undrawn:
            for source in job.sources:
                old = files[source].records.get((u, i))
                if old is not None and (old["value"] is not None or (
                        job.cap is not None and old["cap"] is not None
                        and old["cap"] >= job.cap)):
                    continue
                tasks.append((job.w, job.h, source, job.seed, u, i, job.params_of(source),
                              job.cap))
    return tasks


@dataclass
class Outcome:
    """What a run did: positions solved and unsolved now, left to do, and whether it was
    stopped before the end."""

    solved: int = 0
    unsolved: int = 0
    todo: int = 0
    stopped: bool = False
    seconds: float = 0.0
    by_source: dict = field(default_factory=dict)


def run(job: Job, stop: Callable[[], bool] = lambda: False,
        on_record: Callable[[str, dict, Outcome], None] | None = None) -> Outcome:
    """Make ``job``'s data: solve what its files lack, appending each record as it comes.
    ``stop()`` is asked between positions (and, with workers, every 0.2 s): true stops the
    run, dropping the positions under way. ``on_record(source, record, outcome)`` after each
    record is written. ``FormatError`` when a file holds other data."""
    for u in job.undrawn:
        if not 0 < u <= tables(job.w, job.h).nl:
            raise ValueError(f"undrawn counts are 1..{tables(job.w, job.h).nl} on "
                             f"{job.w}x{job.h}, got {u}")
    files: dict[str, store.DataFile] = {}
    out = Outcome()
    try:
        for source in job.sources:
            files[source] = store.DataFile(job.path(source), store.header(
                job.w, job.h, source, job.seed, job.params_of(source)))
        tasks = _todo(job, files)
        out.todo = len(tasks)
        for source, rec in _results(job, tasks, stop):
            files[source].append(rec)
            out.todo -= 1
            out.seconds += rec["s"]
            if rec["value"] is None:
                out.unsolved += 1
            else:
                out.solved += 1
            if on_record is not None:
                on_record(source, rec, out)
        out.stopped = out.todo > 0
    finally:
        for f in files.values():
            f.close()
    return out


# -- the report --------------------------------------------------------------------------------

def _row(label, recs: list[dict], attempts: list[dict]) -> str:
    solved = [r["s"] for r in recs if r["value"] is not None]
    caps = {r["cap"] for r in recs if r["value"] is None}
    unsolved = len(recs) - len(solved)
    cap = f" (cap {max(caps):g} s)" if caps else ""
    times = (f"{statistics.mean(solved):9.3f} {statistics.median(solved):9.3f} "
             f"{max(solved):9.3f}" if solved else f"{'-':>9} {'-':>9} {'-':>9}")
    spent = sum(r["s"] for r in attempts)
    return f"{label:>8} {len(solved):7d} {unsolved:8d} {times} {spent:10.0f}{cap}"


def report(root: str | Path, board: str | None = None) -> list[str]:
    """The report of the data under ``root`` (only ``board``'s, e.g. ``"5x5"``, when given):
    per file and undrawn count the positions solved and unsolved (with the largest cap tried),
    the solve seconds of the solved ones (mean, median, max) and all solve seconds spent
    there (every attempt, unsolved ones included)."""
    root = Path(root)
    lines = []
    for path in sorted(root.glob(f"{board or '*x*'}/*.jsonl")):
        head, rows = store.read(path)
        if head is None:
            continue
        last = store.latest(rows)
        lines.append(f"{head['width']}x{head['height']} {head['source']} seed {head['seed']}: "
                     f"{path}")
        lines.append(f"{'undrawn':>8} {'solved':>7} {'unsolved':>8} {'mean s':>9} "
                     f"{'median s':>9} {'max s':>9} {'spent s':>10}")
        for u in sorted({u for u, _i in last}):
            lines.append(_row(u, [r for (v, _i), r in last.items() if v == u],
                              [r for r in rows if r["u"] == u]))
        lines.append(_row("all", list(last.values()), rows))
        lines.append("")
    if not lines:
        lines.append(f"no data under {root}")
    return lines


# -- the command -------------------------------------------------------------------------------

def parse_counts(text: str) -> tuple[int, ...]:
    """``"30-44"``, ``"30,32,40-42"`` -> the counts, in increasing order."""
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(out))


def parse_board(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m boxfish.engine.dots.learn.data",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--board", default=None,
                    help="WxH boxes (default 5x5; with --report: every board)")
    ap.add_argument("--undrawn", default="30-44", help="undrawn counts: 30-44, or 30,32,40-42")
    ap.add_argument("--per-count", type=int, default=40,
                    help="positions per undrawn count and source")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sources", default=",".join(SOURCES),
                    help=f"a comma list of {', '.join(SOURCES)} (default: all)")
    ap.add_argument("--cap", type=float, default=300.0,
                    help="seconds at most per solve (0: none); unsolved positions are "
                         "recorded with the cap and tried again by a run with a larger one")
    ap.add_argument("--threads", type=int, default=1, help="search threads per solve")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes solving positions side by side (0: this process)")
    ap.add_argument("--table-gb", type=float, default=2.0,
                    help="GiB of transposition table per worker, kept across positions")
    ap.add_argument("--selfplay-nodes", type=int, default=SELFPLAY_NODES,
                    help="node limit of each self-play move")
    ap.add_argument("--dir", default=None,
                    help=f"the data folder (default ${store.ENV}, else ~/.cache/boxfish/exact)")
    ap.add_argument("--report", action="store_true",
                    help="print what the folder holds (only --board's when given) and exit")
    ap.add_argument("-q", "--quiet", action="store_true", help="no line per position")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    root = Path(args.dir).expanduser() if args.dir else store.default_dir()
    if args.report:
        print("\n".join(report(root, args.board)))
        return 0
    w, h = parse_board(args.board or "5x5")
    job = Job(w, h, parse_counts(args.undrawn), args.per_count, args.seed, root,
              tuple(s for s in args.sources.split(",") if s), args.cap or None, args.threads,
              args.workers, args.table_gb, args.selfplay_nodes)
    for s in job.sources:
        if s not in SOURCES:
            ap.error(f"unknown source {s!r}: one of {', '.join(SOURCES)}")
    got: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda n, _f: got.append(n))

    def say(source: str, rec: dict, out: Outcome) -> None:
        if not args.quiet:
            value = "unsolved" if rec["value"] is None else f"{rec['value']:+d}"
            print(f"{w}x{h} {source} u={rec['u']} #{rec['i']}: {value} in {rec['s']:.2f} s "
                  f"({out.todo} to do)", file=sys.stderr, flush=True)

    print(f"{w}x{h}, undrawn {args.undrawn}, {job.per_count} per count and source, seed "
          f"{job.seed}, cap {job.cap} s: {root}", file=sys.stderr, flush=True)
    out = run(job, stop=lambda: bool(got), on_record=say)
    print(f"{out.solved} solved, {out.unsolved} unsolved in {out.seconds:.0f} s of solves; "
          f"{out.todo} left{' (stopped)' if out.stopped else ''}", file=sys.stderr, flush=True)
    if got:
        return 128 + got[0]
    return 0


if __name__ == "__main__":
    sys.exit(main())
