"""Game reviews (issue 33) over real HTTP against ``boxfish serve`` (embedded Redis, ``--workers``
RQ workers, the store of exact values on): a finished 5x5 game (random play that gives no box
away while it can, seed ``--seed``: a game this project never tuned on) reviewed at
``--time-ms`` per position, then reviewed again at ``--time-ms`` - 1 (another job, which reads
what the first stored), then the first request again (it joins the finished review).

Prints each pass's wall time, the ratios, how many of the review's moves came back exact, and
the fewest undrawn lines of a position that did not (all positions at <= 40 undrawn lines
should be exact), and whether the two reviews' exact moves agree (estimates may differ).

    python bench/review_bench.py [--time-ms 1000] [--workers 2] [--seed 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_bench import launch_serve, stop_serve

from boxfish import engine
from boxfish.client import Client
from boxfish.service.runtime.embedded_redis import free_port


def random_game(seed: int) -> list[list[int]]:
    """A finished 5x5 game: random lines that give no box away while there are such, else
    random lines, boxes taken whenever one can be."""
    game = engine.load_game("dots-and-boxes", width=5, height=5)
    state = game.new_state()
    rng = random.Random(seed)
    moves = []
    while not state.is_terminal():
        legal = list(state.legal_moves())
        takes = [m for m in legal if _completes(state, m)]
        safe = [m for m in legal if not _gives(state, m)]
        m = rng.choice(takes or safe or legal)
        state.play(m)
        moves.append(list(m))
    return moves


def _completes(state, m) -> bool:
    s = state.copy()
    before = list(s.scores)
    s.play(m)
    return list(s.scores) != before


def _gives(state, m) -> bool:
    s = state.copy()
    s.play(m)
    return any(_completes(s, x) for x in s.legal_moves())


def review(http: httpx.Client, game_id: str, time_ms: int) -> tuple[dict, float]:
    t = time.perf_counter()
    r = http.post(f"/v1/games/{game_id}/reviews", json={"time_ms": time_ms})
    assert r.status_code in (200, 202), r.text
    rid = r.json()["id"]
    while True:
        body = http.get(f"/v1/reviews/{rid}", params={"wait": 10}).json()
        if body["status"] in ("finished", "failed"):
            return body, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-ms", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    moves = random_game(args.seed)
    port = free_port()
    proc = launch_serve(port, args.workers, 1, 1,
                        env_extra={"BOXFISH_RATE_LIMIT_REVIEWS": "1000/minute"})
    base = f"http://127.0.0.1:{port}"
    try:
        with Client(base) as api:
            g = api.create_game(width=5, height=5)
            for m in moves:
                api.play(g.id, m, token=g.token)
        with httpx.Client(base_url=base, timeout=60) as http:
            first, t1 = review(http, g.id, args.time_ms)
            second, t2 = review(http, g.id, args.time_ms - 1)
            third, t3 = review(http, g.id, args.time_ms)
        assert first["status"] == second["status"] == "finished", (first, second)
        game = engine.load_game("dots-and-boxes", width=5, height=5)
        state = game.new_state()
        undrawn = []
        for m in moves:
            undrawn.append(len(list(state.legal_moves())))
            state.play(tuple(m))
        rows = first["moves"]
        exact = [m["exact"] for m in rows]
        not_exact = [u for u, m in zip(undrawn, rows, strict=True) if not m["exact"]]
        same = [m for m in rows if m["exact"]] == [m for m in second["moves"] if m["exact"]]
        print(f"5x5 game of {len(moves)} moves (seed {args.seed}), {args.workers} workers, "
              f"time_ms {args.time_ms} per position:")
        print("| pass | wall s |\n|---|---|")
        print(f"| first review | {t1:.1f} |\n| again, another job (store) | {t2:.1f} |\n"
              f"| the first request again (joins) | {t3:.2f} |")
        print(f"first / again: {t1 / t2:.1f}x; first / joined: {t1 / t3:.0f}x; the two reviews' "
              f"exact moves {'agree' if same else 'DIFFER'}")
        print(f"moves with an exact loss: {sum(exact)} of {len(exact)}; positions not exact: "
              f"{len(not_exact)}, the fewest undrawn lines among them: "
              f"{min(not_exact) if not_exact else '-'}")
    finally:
        stop_serve(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
