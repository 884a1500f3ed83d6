"""Timed analyses as a user asks for them: ``POST /v1/analyses`` to a real ``boxfish serve``.

Starts ``boxfish serve`` (embedded Redis, ``--workers`` RQ analysis workers, gunicorn) on a
free port, generates ``--positions`` 5x5 positions of ``--undrawn`` lines (a range, e.g.
38-43; half from ``safe_play``, half from ``biased_play`` with ``p_safe`` 0.8, seeded by
``--seed``, quiet: no box with three sides), POSTs them all at once with ``time_ms``
(``--time-ms``) and polls each job until it is ``finished`` or ``failed``. Then each answer is
checked against the independent reference solver (tests/engine/dots/reference, within
``--ref-cap`` seconds per position): the value, and the reference value of the best move the
server gave. Prints one line per position as it is checked, then a summary: jobs finished
and failed, answers exact, exact answers that are wrong (must be 0), inexact answers whose
best move is value-optimal, and the positions the reference did not solve in time. No figure
is asserted: it only prints.

    python bench/served_timed_bench.py --positions 6 --undrawn 38-43 --time-ms 10000
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the reference solver lives in the tests

from boxfish.engine.dots.positions import biased_play, safe_play  # noqa: E402
from boxfish.engine.dots.search.board import tables  # noqa: E402
from boxfish.service.runtime.embedded_redis import free_port  # noqa: E402
from tests.engine.dots.reference import (  # noqa: E402
    ReferenceGaveUp,
    reference_move_values,
    reference_value,
)


def say(*parts) -> None:
    print(*parts, flush=True)


def positions(count: int, low: int, high: int, seed: int) -> list[tuple[str, int]]:
    """``(generator, drawn)`` of ``count`` quiet 5x5 positions, undrawn lines spread over
    ``low..high``."""
    rng = random.Random(seed)
    t = tables(5, 5)
    out = []
    for i in range(count):
        undrawn = low + i * (high - low + 1) // max(1, count) if count > 1 else low
        gen = "safe" if i % 2 == 0 else "biased"
        while True:
            p = (safe_play(rng, 5, 5, undrawn) if gen == "safe"
                 else biased_play(rng, 5, 5, undrawn, 0.8))
            if 3 not in t.valences(p.drawn):
                out.append((gen, p.drawn))
                break
    return out


def serve(workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BOXFISH_REDIS_URL")}
    env["BOXFISH_DATA_DIR"] = tempfile.mkdtemp(prefix="boxfish-served-bench-")
    proc = subprocess.Popen([sys.executable, "-m", "boxfish.service.runtime.cli", "serve", "--port",
                             str(port), "--workers", str(workers), "--webhook-workers", "0",
                             "--threads", "8"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            r = httpx.get(f"{base}/readyz", timeout=5)
            if r.status_code == 200 and r.json().get("workers") == workers:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("boxfish serve did not start")
        time.sleep(0.2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--positions", type=int, default=6)
    p.add_argument("--undrawn", default="38-43", help="a range of undrawn lines, LOW-HIGH")
    p.add_argument("--time-ms", type=int, default=10_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=77)
    p.add_argument("--ref-cap", type=float, default=600.0,
                   help="seconds the reference solver may take per position")
    args = p.parse_args()
    low, _, high = args.undrawn.partition("-")
    low, high = int(low), int(high or low)
    t = tables(5, 5)
    todo = positions(args.positions, low, high, args.seed)
    proc, base = serve(args.workers)
    say(f"boxfish serve --workers {args.workers} on {base}; {len(todo)} 5x5 positions of "
        f"{low}-{high} undrawn lines (seed {args.seed}), time_ms {args.time_ms}, all at once")
    results: dict[str, dict] = {}
    try:
        with httpx.Client(base_url=base, timeout=30) as http:
            jobs = []
            t0 = time.monotonic()
            for _, drawn in todo:
                lines = "".join("1" if drawn >> i & 1 else "0" for i in range(t.nl))
                r = http.post("/v1/analyses", json={
                    "game": "dots-and-boxes", "width": 5, "height": 5, "lines": lines,
                    "to_move": 0, "time_ms": args.time_ms, "multipv": 1})
                if r.status_code not in (200, 202):
                    raise SystemExit(f"POST /v1/analyses: {r.status_code} {r.text}")
                jobs.append(r.json()["id"])
            while len(results) < len(jobs):
                for job_id in jobs:
                    if job_id in results:
                        continue
                    body = http.get(f"/v1/analyses/{job_id}").json()
                    if body["status"] in ("finished", "failed"):
                        body["wall_s"] = time.monotonic() - t0
                        results[job_id] = body
                time.sleep(0.25)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    say("| # | generator | undrawn | drawn lines (mask) | status | answer | best move | depth "
        "| reference value | best move's reference value | job done at s |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    counts = {"failed": 0, "exact": 0, "wrong_exact": 0, "inexact": 0, "inexact_optimal": 0,
              "unchecked": 0}
    for i, ((gen, drawn), job_id) in enumerate(zip(todo, jobs, strict=True), 1):
        body = results[job_id]
        undrawn = t.nl - drawn.bit_count()
        if body["status"] != "finished":
            counts["failed"] += 1
            say(f"| {i} | {gen} | {undrawn} | {drawn:#x} | {body['status']} | "
                f"{body.get('error')} | | | | | {body['wall_s']:.1f} |")
            continue
        res = body["result"]
        best = t.geo.line_id(*res["best_move"])
        answer = f"{res['value']:+d} {res['bound']}"
        try:
            ref = reference_value(5, 5, drawn, max_seconds=args.ref_cap)
            ref_best = reference_move_values(5, 5, drawn, [best],
                                             max_seconds=args.ref_cap)[best]
        except ReferenceGaveUp:
            ref = ref_best = None
            counts["unchecked"] += 1
        if res["exact"]:
            counts["exact"] += 1
            if ref is not None and (res["value"] != ref or ref_best != ref):
                counts["wrong_exact"] += 1
        else:
            counts["inexact"] += 1
            if ref is not None and ref_best == ref:
                counts["inexact_optimal"] += 1
        shown = lambda v: "gave up" if v is None else f"{v:+d}"  # noqa: E731
        say(f"| {i} | {gen} | {undrawn} | {drawn:#x} | finished | {answer} | "
            f"{','.join(map(str, res['best_move']))} | {res['depth']} | {shown(ref)} "
            f"| {shown(ref_best)} | {body['wall_s']:.1f} |")
    say(f"\n{len(jobs)} jobs: {len(jobs) - counts['failed']} finished, {counts['failed']} "
        f"failed; exact {counts['exact']} (wrong: {counts['wrong_exact']}); inexact "
        f"{counts['inexact']}, of which the best move is value-optimal in "
        f"{counts['inexact_optimal']}; not checked (reference past {args.ref_cap:g} s): "
        f"{counts['unchecked']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
