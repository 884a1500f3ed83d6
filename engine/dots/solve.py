"""Long exact solves that survive a restart: ``boxfish solve``.

A :class:`Solve` proves the value of a Dots-and-Boxes position root move by root move with
the compiled core, saving what it has proven to a checkpoint file at intervals and when it is
stopped (:meth:`Solve.stop`, which ``boxfish solve`` calls on SIGINT and SIGTERM). Started
again with the same file, it loads the table's proven entries and the root moves already
settled and goes on from there; a resumed solve gives the same value and searches fewer nodes
than a fresh one.

The root: the first root move's value is proven exactly (MTD(f) from 0); every later move is
first tested against the best value so far with one zero-window search (most fail: their
value is at most the best, which settles them), and only a move that beats it is solved
exactly (MTD(f) from the best value so far). The position's value is the best move's.

The search runs in slices of ``SLICE_S`` seconds: when a slice ends, the slice's search is
aborted and resumed from the table, which keeps everything the slice proved. That is how a
stop request or a checkpoint interval is noticed while the compiled core (which releases the
GIL) searches. A checkpoint holds proven entries only: heuristic entries are not worth
their room.

Checkpoint file: one line of JSON (the position, the root moves settled, the current move's
proven bounds, the counters), then the table's proven entries as the compiled core exports
them (``Table.export_proven``). It is written to a temporary file beside it and renamed, so a
crash mid-write leaves the previous checkpoint whole.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CheckpointMismatch, SearchAborted
from .search import compiled
from .search.board import Tables, tables
from .search.caches import DotsCaches
from .search.driver import _mtd_beta
from .search.node import CompiledSearcher
from .search.table import INF, PROVEN

#: Seconds of search between two looks at a stop request and the checkpoint interval. An
#: abort costs a re-descent from the root through the table: solving 3x4 from the empty board
#: on one thread took 6,125,217 nodes without slices, 6,125,323 in slices of 1 s and
#: 6,126,194 in slices of 0.25 s (4.54 / 4.60 / 5.19 s).
SLICE_S = 1.0
#: The checkpoint file's format.
FORMAT = "boxfish-solve/1"


@dataclass(slots=True)
class RootResult:
    """A settled root move: its proven ``lower`` and ``upper`` bounds (equal when its value is
    exact; a move that cannot beat the best has only ``upper``)."""

    line: int
    lower: int
    upper: int

    @property
    def exact(self) -> bool:
        return self.lower == self.upper


@dataclass(slots=True)
class SolveProgress:
    """What a solve has done so far, as :meth:`Solve.run` reports it."""

    settled: list[RootResult]
    root_moves: int
    current: int | None          # the root move being searched (None: done)
    current_bounds: tuple[int, int]
    best: int | None             # the best settled value so far
    nodes: int                   # this run's nodes
    nodes_total: int             # over every run of this checkpoint
    elapsed_s: float             # this run's
    table_entries: int
    table_capacity: int
    done: bool = False
    saved: bool = False
    value: int | None = None
    best_line: int | None = None


class Solve:
    """An exact solve of ``drawn`` on a ``w`` x ``h`` board with the compiled core.

    ``checkpoint``: a file to resume from (when it exists) and to save to every
    ``interval_s`` seconds, on :meth:`stop` and at the end. ``table_bytes``: the table's
    budget (default: :func:`~boxfish.engine.dots.search.caches.own_table_bytes`). ``threads``: the
    compiled core's search threads (default: every CPU this process may use).
    Raises ``RuntimeError`` when the compiled core is not available, ``ValueError`` for a
    board it does not take, :class:`CheckpointMismatch` for a checkpoint of another solve."""

    def __init__(self, w: int, h: int, drawn: int = 0, *, checkpoint: str | None = None,
                 interval_s: float = 300.0, table_bytes: int | None = None,
                 threads: int | None = None) -> None:
        if not compiled.available():
            raise RuntimeError(compiled.UNAVAILABLE_REASON)
        self.t: Tables = tables(w, h)
        if drawn & ~self.t.full:
            raise ValueError(f"drawn has lines outside a {w}x{h} board")
        self.w, self.h, self.drawn = w, h, drawn
        self.checkpoint = checkpoint
        self.interval_s = interval_s
        if threads is None:
            from ..analysis import usable_cores
            threads = usable_cores()
        self.caches = DotsCaches(self.t, table_bytes=table_bytes)
        self.searcher = CompiledSearcher(self.t, caches=self.caches, threads=threads)
        self.order = self.searcher.root_order(drawn)
        self.settled: dict[int, RootResult] = {}
        #: the proven bounds of the root move being searched (``current_line``)
        self.current_line: int | None = None
        self.current_bounds: tuple[int, int] = (-INF, INF)
        self.nodes_before = 0
        self._stop = False
        #: whether the solve goes on from a checkpoint
        self.resumed = checkpoint is not None and os.path.exists(checkpoint)
        if self.resumed:
            self._load(checkpoint)

    # -- the solve -------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask a running :meth:`run` to save and return at the end of the current slice
        (safe to call from a signal handler)."""
        self._stop = True

    def run(self, on_progress: Callable[[SolveProgress], None] | None = None,
            progress_s: float = 5.0) -> SolveProgress:
        """Solve on until done or stopped; returns the last progress (``done`` and ``value``
        when solved). ``on_progress`` is called every ``progress_s`` seconds and at the end."""
        s = self.searcher
        start = last_save = last_report = time.monotonic()
        nodes0 = s.nodes
        for ln in self.order:
            if ln in self.settled:
                continue
            if self.current_line != ln:
                self.current_line, self.current_bounds = ln, (-INF, INF)
            lo, hi = self.current_bounds
            best = self._best()
            while True:
                # A move the last slice settled is settled before a stop or a checkpoint
                # looks at it, so they count it (a stop right after its proof once saved it
                # as the current move, and the resumed run said one root move fewer).
                if _settles(lo, hi, best):
                    break
                now = time.monotonic()
                if self._stop:
                    return self._finish(start, nodes0, ln, on_progress, saved=True)
                if self.checkpoint is not None and now - last_save >= self.interval_s:
                    self._save(self.checkpoint, nodes0, ln)
                    last_save = now
                if on_progress is not None and now - last_report >= progress_s:
                    on_progress(self._progress(start, nodes0, ln))
                    last_report = now
                # a move after the first only needs to know whether it beats the best
                beta = best + 1 if best is not None and lo <= best else _mtd_beta(
                    lo if lo > -INF else 0, lo, hi)
                s.deadline = time.perf_counter() + SLICE_S
                try:
                    v = s.child_value(self.drawn, ln, beta - 1, beta, PROVEN)
                except SearchAborted:
                    continue
                if v >= beta:
                    lo = v
                else:
                    hi = v
                self.current_bounds = (lo, hi)
            self.settled[ln] = RootResult(ln, lo, hi)
            self.current_line, self.current_bounds = None, (-INF, INF)
        return self._finish(start, nodes0, None, on_progress,
                            saved=self.checkpoint is not None)

    def _best(self) -> int | None:
        exact = [r.lower for r in self.settled.values() if r.exact]
        return max(exact) if exact else None

    def _finish(self, start: float, nodes0: int, current: int | None,
                on_progress, saved: bool) -> SolveProgress:
        self.searcher.deadline = None
        if saved and self.checkpoint is not None:
            self._save(self.checkpoint, nodes0, current)
        p = self._progress(start, nodes0, current)
        p.saved = saved and self.checkpoint is not None
        if on_progress is not None:
            on_progress(p)
        return p

    def _progress(self, start: float, nodes0: int, current: int | None) -> SolveProgress:
        st = self.caches.compiled.stats()
        done = all(ln in self.settled for ln in self.order)
        best = self._best()
        best_line = None
        if best is not None:
            best_line = next(r.line for r in self.settled.values()
                             if r.exact and r.lower == best)
        nodes = self.searcher.nodes - nodes0
        return SolveProgress(
            settled=[self.settled[ln] for ln in self.order if ln in self.settled],
            root_moves=len(self.order), current=current, current_bounds=self.current_bounds,
            best=best, nodes=nodes, nodes_total=self.nodes_before + nodes,
            elapsed_s=time.monotonic() - start, table_entries=st["entries"],
            table_capacity=self.caches.compiled.max_capacity, done=done,
            value=best if done else None, best_line=best_line if done else None)

    # -- checkpoints -----------------------------------------------------------------------

    def _header(self, nodes0: int, current: int | None) -> dict:
        return {"format": FORMAT, "width": self.w, "height": self.h, "drawn": self.drawn,
                "settled": [[r.line, _enc(r.lower), _enc(r.upper)]
                            for r in self.settled.values()],
                "current": current,
                "current_bounds": [_enc(b) for b in self.current_bounds],
                "nodes": self.nodes_before + self.searcher.nodes - nodes0}

    def _save(self, path: str, nodes0: int, current: int | None) -> None:
        header = json.dumps(self._header(nodes0, current)).encode() + b"\n"
        entries = self.caches.compiled.export_proven()
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as f:
            f.write(header)
            f.write(entries)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def _load(self, path: str) -> None:
        with open(path, "rb") as f:
            line = f.readline()
            try:
                header = json.loads(line)
            except ValueError as exc:
                raise CheckpointMismatch(f"{path} is not a boxfish solve checkpoint") from exc
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise CheckpointMismatch(f"{path} is not a {FORMAT} checkpoint")
            mine = (self.w, self.h, self.drawn)
            theirs = (header.get("width"), header.get("height"), header.get("drawn"))
            if mine != theirs:
                raise CheckpointMismatch(
                    f"{path} is the checkpoint of {theirs[0]}x{theirs[1]} position "
                    f"{theirs[2]}, not of {self.w}x{self.h} position {self.drawn}")
            self.caches.compiled.import_proven(f.read())
        for ln, lo, hi in header["settled"]:
            self.settled[ln] = RootResult(ln, *_bounds(lo, hi))
        if header.get("current") is not None:
            current, bounds = header["current"], _bounds(*header["current_bounds"])
            if _settles(*bounds, self._best()):
                # a checkpoint of an earlier version, saved right after the current move's
                # proof: that move is settled
                self.settled[current] = RootResult(current, *bounds)
            else:
                self.current_line, self.current_bounds = current, bounds
        self.nodes_before = header["nodes"]


def _settles(lo: int, hi: int, best: int | None) -> bool:
    """Whether a root move with proven bounds ``lo``..``hi`` is settled: its value is exact,
    or it cannot beat the ``best`` settled value."""
    return lo == hi or (best is not None and hi <= best)


def _enc(v: int) -> int | None:
    """A bound for JSON: None where there is none (+-INF)."""
    return None if abs(v) >= INF else v


def _bounds(lo: int | None, hi: int | None) -> tuple[int, int]:
    return (-INF if lo is None else lo, INF if hi is None else hi)


__all__ = ["CheckpointMismatch", "RootResult", "Solve", "SolveProgress", "SLICE_S"]
