"""``boxfish solve W H --distributed``: a solve spread over the workers of an RQ queue
(:mod:`boxfish.service.application.distributed_solve`; docs/distributed-solve.md).

Examples::

    REDIS_URL=redis://queue-host:6379 boxfish solve 4 4 --distributed --every-move
    boxfish solve 4 5 --distributed --redis redis://h:6379 --queue solve --split-depth 4

The workers are ``boxfish worker`` processes on the same Redis and queue (any number, on any
machine). A progress line goes to stderr every ``--progress`` seconds, the result to stdout
(``--json``). SIGINT or SIGTERM stops the coordinator (the jobs out go on); started again
with the same arguments, it resumes. Exit status: 0 solved, 2 bad arguments, 1 a subproblem
that keeps failing, 128 + the signal when stopped.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from boxfish.engine.solve_cli import Stop, position, solve_parser, stoppable

from ..config import SOLVE_SPLIT_DEPTH, Settings


def _parser():
    p = solve_parser("boxfish solve --distributed", "Exact value of a Dots-and-Boxes "
                     "position, its subproblems solved by the workers of an RQ queue.")
    p.add_argument("--distributed", action="store_true", required=True)
    p.add_argument("--redis", default=None, metavar="URL",
                   help="the Redis of the jobs and results (default: $BOXFISH_QUEUE_REDIS_URL, "
                        "else $REDIS_URL); the workers must use the same")
    p.add_argument("--queue", default=None, metavar="NAME",
                   help="the RQ queue (default: $BOXFISH_QUEUE_NAME, the workers' queue)")
    p.add_argument("--split-depth", type=int, default=SOLVE_SPLIT_DEPTH, metavar="N",
                   help="plies unfolded before the subproblems (default %(default)s)")
    p.add_argument("--every-move", action="store_true",
                   help="every first move's exact value too (more work)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return stoppable(lambda stop: _run(args, stop))


def _run(args, stop: Stop) -> int:
    from boxfish.engine.dots.split import Split

    from ..application.distributed_solve import DistributedSolve
    from ..application.wiring import exact_values
    from ..errors import ConfigurationError, SubproblemFailed
    from ..store import connections
    from ..store.keys import KeySpace

    settings = Settings()
    if args.redis:
        settings = settings.model_copy(update={"redis_url": args.redis,
                                               "queue_redis_url": None})
    try:
        state = position(args)
        split = Split(args.width, args.height, state.drawn, args.split_depth)
        conns = connections.connect(settings)
    except (ValueError, ConfigurationError) as exc:
        print(f"boxfish solve: error: {exc}", file=sys.stderr)
        return 2
    solve = DistributedSolve(
        conns.queue, settings, split, args.queue or settings.queue_name,
        every_move=args.every_move,
        exact_values=exact_values(conns.store, KeySpace(settings.key_prefix), settings))
    stop.attach(solve)
    print(f"boxfish solve: {args.width}x{args.height} distributed, run {solve.run_id}: "
          f"{len(split.leaves)} subproblems {args.split_depth} plies deep, queue "
          f"{solve.queue.name}", file=sys.stderr, flush=True)

    def report(p) -> None:
        print(progress_line(p), file=sys.stderr, flush=True)

    try:
        p = solve.run(on_progress=report if args.progress > 0 else None,
                      progress_s=args.progress or 1e9)
    except SubproblemFailed as exc:
        print(f"boxfish solve: {exc}", file=sys.stderr)
        return 1
    if not p.done:
        print("boxfish solve: stopped; the results are kept in Redis, the jobs out go on: "
              "run it again to resume", file=sys.stderr)
        return 128 + (stop.signal or 2)
    moves = {ln: list(split.t.moves[ln]) for ln in split.root_children()}
    result = {"width": args.width, "height": args.height, "value": p.value,
              "best_move": moves.get(p.best_line), "nodes": p.nodes, "jobs": p.jobs,
              "subproblems": p.subproblems, "time_s": round(p.elapsed_s, 3),
              "root_moves": [{"move": moves[ln], "value": lo} for ln, lo, _hi in p.moves]}
    if args.json:
        print(json.dumps(result))
    else:
        best = ",".join(map(str, result["best_move"] or [])) or "-"
        print(f"value {p.value:+d} for the player to move; best move {best}; {p.nodes} nodes "
              f"in {p.jobs} jobs, {p.elapsed_s:.1f} s")
    return 0


def progress_line(p) -> str:
    """A progress line: subproblems, jobs, nodes, the projection, the root's bounds."""
    d = dataclasses.asdict(p)
    # (a job adopted from an earlier start counts whole: a rough rate at first)
    searched = p.nodes_this_start + p.running_nodes
    rate = searched / p.elapsed_s if p.elapsed_s > 0 else 0.0
    projection = "-"
    if p.projected_nodes is not None:
        low, high = p.projected_nodes
        projection = f"{low / 1e6:.1f}M-{high / 1e6:.1f}M nodes"
        if rate > 0:
            projection += f" (~{low / rate:.0f}-{high / rate:.0f} s at this rate)"
    return ("subproblems {proven}/{subproblems} proven ({exact} exact) | jobs: {jobs} done, "
            "{running} running, {queued} queued, {wanted} wanted | ".format(**d)
            + f"{p.nodes / 1e6:.1f}M nodes (+{p.running_nodes / 1e6:.1f}M in running jobs), "
            f"{rate / 1e6:.2f}M/s | remaining {projection} | "
            f"root in [{p.root[0]:+d}, {p.root[1]:+d}] | {p.elapsed_s:.0f} s")
