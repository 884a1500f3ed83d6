"""``boxfish solve``: prove a Dots-and-Boxes position's value, however long it takes, with a
checkpoint that survives a restart (:mod:`boxfish.engine.dots.solve`).

Examples::

    boxfish solve 3 4
    boxfish solve 4 5 --threads 2 --table-gb 8 --checkpoint 4x5.ckpt
    boxfish solve 5 5 --lines 0110... --checkpoint pos.ckpt --interval 600

It says on stderr what it solves and whether it resumes, then prints a progress line every
``--progress`` seconds there (the root moves settled with their values, nodes per second, the
table's fill, the root moves left) and the result on stdout (``--json`` for JSON). SIGINT or
SIGTERM (even while the checkpoint loads) saves the checkpoint and exits with 130 or 143;
started again with the same ``--checkpoint``, it resumes. Exit status: 0 when solved, 2 for
bad arguments or a checkpoint of another position.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from .cli import _parse_moves
from .dots.search.table import INF


def _parser() -> argparse.ArgumentParser:
    p = solve_parser("boxfish solve", "Exact value of a Dots-and-Boxes position, with a "
                     "checkpoint to resume from (the compiled core only).")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="search threads (default: every CPU this process may use)")
    p.add_argument("--table-gb", type=float, default=None, metavar="G",
                   help="the table's budget in GiB (default: the library's, see docs/engine.md)")
    p.add_argument("--checkpoint", default=None, metavar="FILE",
                   help="resume from FILE when it exists; save to it every --interval "
                        "seconds, on SIGINT/SIGTERM and at the end")
    p.add_argument("--interval", type=float, default=300.0, metavar="S",
                   help="seconds between checkpoints (default %(default)s)")
    return p


def solve_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A solve's parser: the position (``width height [--moves ...] [--lines ...]``, read by
    :func:`position`), ``--progress`` and ``--json``."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("width", type=int, help="boxes across")
    p.add_argument("height", type=int, help="boxes down")
    p.add_argument("--moves", default="", help='moves from the empty board: "x,y,o x,y,o ..."')
    p.add_argument("--lines", default=None,
                   help="the position as an OpenSpiel line string (one 0/1 per action id)")
    p.add_argument("--progress", type=float, default=10.0, metavar="S",
                   help="seconds between progress lines (default %(default)s; 0: none)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def position(args):
    """The engine state of the position ``args`` (this parser's) names: ``--lines`` on a
    ``width`` x ``height`` board, then ``--moves``. Raises ValueError (IllegalMove, ...)."""
    from boxfish.engine.game import load_game

    game = load_game("dots-and-boxes", width=args.width, height=args.height)
    state = game.from_lines(args.lines.strip()) if args.lines is not None else game.new_state()
    for mv in _parse_moves(args.moves):
        state.play(game.parse_move(mv))
    return state


def _value(v: int) -> str:
    return "?" if abs(v) >= INF else f"{v:+d}"


def _settled_text(t, r) -> str:
    move = ",".join(str(c) for c in t.moves[r.line])
    if r.exact:
        return f"{move}={_value(r.lower)}"
    return f"{move}<={_value(r.upper)}"


def _progress_line(t, p) -> str:
    rate = p.nodes / p.elapsed_s if p.elapsed_s > 0 else 0.0
    fill = p.table_entries / p.table_capacity if p.table_capacity else 0.0
    settled = " ".join(_settled_text(t, r) for r in p.settled) or "-"
    current = ""
    if p.current is not None:
        lo, hi = p.current_bounds
        move = ",".join(str(c) for c in t.moves[p.current])
        current = f" | now {move} in [{_value(lo)}, {_value(hi)}]"
    return (f"root moves {len(p.settled)}/{p.root_moves} settled: {settled}{current} | "
            f"{p.nodes_total / 1e6:.1f}M nodes, {rate / 1e6:.2f}M/s | table "
            f"{fill:.0%} of {p.table_capacity / 1e6:.0f}M entries | {p.elapsed_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return stoppable(lambda stop: _solve(args, stop))


def stoppable(body) -> int:
    """``body(stop)`` with SIGINT and SIGTERM handed to ``stop`` (a :class:`Stop`) from the
    start, so that a signal before the solve exists stops it too; the previous handlers are
    put back on return."""
    stop = Stop()
    previous = {sig: signal.signal(sig, stop.on_signal)
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return body(stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Stop:
    """The signal that stopped the solve, passed on to it (its ``stop()``) once it exists."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.solve = None

    def on_signal(self, signum, _frame) -> None:
        self.signal = signum
        if self.solve is not None:
            self.solve.stop()

    def attach(self, solve) -> None:
        self.solve = solve
        if self.signal is not None:
            solve.stop()


def _solve(args, stop: Stop) -> int:
    from boxfish.engine.dots.solve import CheckpointMismatch, Solve

    try:
        state = position(args)
        table_bytes = (int(args.table_gb * 2**30) if args.table_gb is not None else None)
        solve = Solve(args.width, args.height, state.drawn, checkpoint=args.checkpoint,
                      interval_s=args.interval, table_bytes=table_bytes,
                      threads=args.threads)
    except (ValueError, RuntimeError) as exc:
        kind = "checkpoint" if isinstance(exc, CheckpointMismatch) else "error"
        print(f"boxfish solve: {kind}: {exc}", file=sys.stderr)
        return 2
    stop.attach(solve)
    print(f"boxfish solve: {args.width}x{args.height}, {len(solve.order)} lines to draw, "
          f"{solve.searcher.core.threads} thread(s); " + (
              "no checkpoint" if args.checkpoint is None
              else f"resumed from {args.checkpoint} ({len(solve.settled)} root moves settled)"
              if solve.resumed else f"checkpoint {args.checkpoint} (new)"),
          file=sys.stderr, flush=True)

    def report(p):
        if args.progress > 0 or p.done or p.saved:
            print(_progress_line(solve.t, p), file=sys.stderr, flush=True)

    p = solve.run(on_progress=report, progress_s=args.progress if args.progress > 0 else 1e9)
    if not p.done:
        print(f"boxfish solve: stopped; checkpoint saved to {args.checkpoint}"
              if p.saved else "boxfish solve: stopped (no --checkpoint: nothing saved)",
              file=sys.stderr)
        return 128 + (stop.signal or signal.SIGINT)
    best = list(solve.t.moves[p.best_line])
    result = {"width": args.width, "height": args.height, "value": p.value,
              "best_move": best, "nodes": p.nodes, "nodes_total": p.nodes_total,
              "time_s": round(p.elapsed_s, 3),
              "root_moves": [{"move": list(solve.t.moves[r.line]), "lower": _finite(r.lower),
                              "upper": _finite(r.upper)} for r in p.settled]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"value {p.value:+d} for the player to move; best move "
              f"{','.join(map(str, best))}; {p.nodes} nodes this run "
              f"({p.nodes_total} in all), {p.elapsed_s:.1f} s")
    return 0


def _finite(v: int) -> int | None:
    return None if abs(v) >= INF else v
