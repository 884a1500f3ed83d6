"""``boxfish analyse`` (alias ``analyze``): analyse a position from the command line.

Examples::

    boxfish analyse --size 3x3 --moves "1,1,1 2,1,2" --time 2000
    boxfish analyse --size 5x5 --lines 0010...  --to-move 1 --json
    boxfish analyse --game extreme-tictactoe --moves "5,5 4,4" --time 500
    boxfish analyse --size 4x4 --time 0 --threads 2      # solve on two threads

The ``boxfish`` console command (``boxfish.service.runtime.cli``) dispatches
``boxfish analyse ...`` to
``main(rest)``.
Exit status: 0 on success, 2 for bad arguments or an illegal move.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

DOTS = "dots-and-boxes"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="boxfish analyse",
        description="Best move and value of a position, within a time bound "
                    "(exact whenever the search proves it).")
    p.add_argument("--game", default=DOTS, help="game name (default: %(default)s)")
    p.add_argument("--size", default=None,
                   help="board size WxH in boxes for dots-and-boxes (default 5x5)")
    p.add_argument("--moves", default="",
                   help='moves played from the start, space separated: "x,y,o x,y,o ..." '
                        '(Extreme Tic-Tac-Toe: "r,c r,c ...")')
    p.add_argument("--lines", default=None,
                   help="dots-and-boxes position as an OpenSpiel line string (one 0/1 per "
                        "action id); use with --to-move")
    p.add_argument("--to-move", type=int, choices=(0, 1), default=0,
                   help="player to move for --lines (default 0)")
    p.add_argument("--time", type=int, default=2000, metavar="MS",
                   help="time limit in milliseconds (default %(default)s; 0 = no limit: "
                        "solve exactly)")
    p.add_argument("--depth", type=int, default=None, help="iterative-deepening depth limit")
    p.add_argument("--nodes", type=int, default=None, help="node limit")
    p.add_argument("--multipv", type=int, default=None, metavar="K",
                   help="report only the K best moves")
    p.add_argument("--core", choices=("c", "python"), default=None,
                   help="the search to run (default: the compiled core where it is built and "
                        "takes the board, else the Python one)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="search threads (default: every CPU this process may use; the "
                        "Python searches use one)")
    p.add_argument("--evaluation", choices=("learned", "fill"), default=None,
                   help="Dots and Boxes: the horizon evaluation (default: the learned one "
                        "where the board has a model, else fill)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress display even on a terminal")
    return p


def _parse_size(text: str) -> tuple[int, int]:
    try:
        a, b = text.lower().split("x")
        return int(a), int(b)
    except ValueError:
        raise ValueError(f"--size must look like 5x5, got {text!r}") from None


def _parse_moves(text: str) -> list[list[int]]:
    out = []
    for tok in text.replace(";", " ").split():
        try:
            out.append([int(v) for v in tok.strip("()[]").split(",") if v != ""])
        except ValueError:
            raise ValueError(f"bad move {tok!r}: expected comma-separated integers") from None
    return out


def _build_state(args):
    from boxfish import engine  # noqa: F401  (registers the games)
    from boxfish.engine.game import load_game

    params = {}
    if args.game == DOTS:
        w, h = _parse_size(args.size or "5x5")
        params = {"width": w, "height": h}
    elif args.size:
        w, h = _parse_size(args.size)
        params = {"width": w, "height": h}
    game = load_game(args.game, **params)
    if args.lines is not None:
        if not hasattr(game, "from_lines"):
            raise ValueError(f"--lines is not supported for {args.game}")
        state = game.from_lines(args.lines.strip(), to_move=args.to_move)
    else:
        state = game.new_state()
    for mv in _parse_moves(args.moves):
        state.play(game.parse_move(mv))
    return game, state


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        game, state = _build_state(args)
    except ValueError as exc:  # IllegalMove, UnknownGame, bad size/moves are ValueErrors
        print(f"boxfish analyse: error: {exc}", file=sys.stderr)
        return 2
    from boxfish.engine.analysis import analyse
    from boxfish.engine.text import analysis_text, format_move, format_value

    tty = sys.stdout.isatty() and not args.json and not args.no_progress
    progress = None
    if tty:
        def progress(p):
            sys.stderr.write(f"\r  depth {p.depth:>3}  best {format_move(p.best_move):<10} "
                             f"value {format_value(p.value, p.exact, 'estimate'):>6}  "
                             f"nodes {p.nodes:>9}  {p.time_ms / 1000:6.2f}s ")
            sys.stderr.flush()
    time_ms = args.time if args.time and args.time > 0 else None
    try:
        result = analyse(state, time_ms=time_ms, depth=args.depth, nodes=args.nodes,
                         multipv=args.multipv, on_progress=progress, core=args.core,
                         threads=args.threads, evaluation=args.evaluation)
    except ValueError as exc:
        print(f"boxfish analyse: error: {exc}", file=sys.stderr)
        return 2
    if tty:
        sys.stderr.write("\r" + " " * 78 + "\r")
        sys.stderr.flush()
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    print(analysis_text(game, state, result.to_dict()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    t0 = time.perf_counter()
    sys.exit(main())
