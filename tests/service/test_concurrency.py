"""Many threads on one game, over real HTTP on the real gunicorn server: every answer is right.

32 threads mix ``GET`` of the state, of the moves and of the move index with appends (with and
without a serial) on one game, 30 rounds each (a count, not a time: a loaded host does as
much, more slowly). Afterwards every answer is checked against the
log: states and indexes equal the replay of the log at their serial, move lists are slices of
it, every 201 is in it once, and a refused move was refused for a reason that held.
"""

from __future__ import annotations

import random
import re
import threading
import time

from boxfish import engine

from .test_server import Http, create

THREADS = 32
ROUNDS = 30
SIZE = 12


def _worker(base: str, game_id: str, auth: dict, seed: int, out: list) -> None:
    rng = random.Random(seed)
    http = Http(base)
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    seen_serial, seen_lines = 0, None
    try:
        for _ in range(ROUNDS):
            kind = rng.choice(("state", "state", "moves", "index", "append", "append_serial"))
            if kind == "state":
                status, body, resp = http.request("GET", f"/v1/games/{game_id}")
                out.append(("state", status, body, resp.getheader("ETag")))
                if status == 200:
                    seen_serial, seen_lines = body["serial"], body["lines"]
            elif kind == "moves":
                after = rng.randint(0, seen_serial)
                status, body, _ = http.request("GET", f"/v1/games/{game_id}/moves?after={after}")
                out.append(("moves", status, body, after))
            elif kind == "index":
                status, body, resp = http.request("GET", f"/v1/games/{game_id}/index")
                out.append(("index", status, body, resp.getheader("ETag")))
            else:
                if seen_lines is None:
                    continue
                undrawn = [i for i, c in enumerate(seen_lines) if c == "0"]
                if not undrawn:
                    continue
                move = list(game.action_to_move(rng.choice(undrawn)))
                payload = {"move": move}
                if kind == "append_serial":
                    payload["serial"] = seen_serial + 1
                status, body, _ = http.request("POST", f"/v1/games/{game_id}/moves",
                                               payload, auth)
                out.append((kind, status, body, (move, seen_serial)))
    except Exception as exc:  # reported by the test
        out.append(("exception", 0, repr(exc), None))
    finally:
        http.close()


def test_32_threads_on_one_game_get_only_right_answers(server_url):
    game_id, auth = create(server_url, width=SIZE, height=SIZE)
    outs: list[list] = [[] for _ in range(THREADS)]
    threads = [threading.Thread(target=_worker, args=(server_url, game_id, auth, i, outs[i]))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 300
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "the clients did not finish"
    answers = [a for out in outs for a in out]

    status, log, _ = Http(server_url).request("GET", f"/v1/games/{game_id}/moves?after=0")
    assert status == 200
    moves = [(m["serial"], tuple(m["move"])) for m in log["moves"]]
    assert [s for s, _ in moves] == list(range(1, len(moves) + 1))
    game = engine.load_game("dots-and-boxes", width=SIZE, height=SIZE)
    states = [game.new_state()]
    for s, mv in moves:
        st = states[-1].copy()
        st.play(mv)
        assert st.serial == s
        states.append(st)

    errors = [a for a in answers if a[0] == "exception" or a[1] >= 500]
    assert not errors, errors[:5]
    kinds = {a[0] for a in answers}
    assert {"state", "moves", "index", "append", "append_serial"} <= kinds
    appended = 0
    etags: dict[int, set[str]] = {}  # serial -> the ETags seen for it (one: no failover)
    for kind, status, body, extra in answers:
        if kind == "state":
            assert status == 200, body
            assert extra.startswith(f'"{body["serial"]}'), (extra, body["serial"])
            etags.setdefault(body["serial"], set()).add(extra)
            want = states[body["serial"]].to_dict()
            assert {k: body[k] for k in want} == want
        elif kind == "index":
            assert status == 200, body
            serial = int(extra.strip('"').partition(".")[0])
            etags.setdefault(serial, set()).add(extra)
            want = {str(x): {str(y): {str(o): s for o, s in os_.items()}
                             for y, os_ in ys.items()}
                    for x, ys in states[serial].index().items()}
            assert body == want
        elif kind == "moves":
            assert status == 200, body
            after = extra
            got = [(m["serial"], tuple(m["move"])) for m in body["moves"]]
            assert got == moves[after:after + len(got)]
            assert len(got) == body["serial"] - after
        elif kind in ("append", "append_serial"):
            move, seen = extra
            if status == 201:
                appended += 1
                assert moves[body["serial"] - 1] == (body["serial"], tuple(move)), body
            elif status == 409:
                # with a serial: it was stale; without one: the server lost every one of its
                # retries to other writers (the issue allows 201 / 409 for a legal move)
                assert body["current_serial"] >= seen, body
                if kind == "append_serial":
                    assert body["current_serial"] != seen, body
            else:
                # Without a serial a move chosen from an older state may have been drawn
                # since; that is the only refusal a legal move may get.
                assert status == 422 and kind == "append", body
                assert body["reason"] in ("already_drawn", "game_over"), body
                assert tuple(move) in {mv for _, mv in moves}, body
    assert appended == len(moves)
    assert appended > 20
    # One log position per serial: its ETag is "<serial>.<head>" (the bare serial at 0).
    pattern = re.compile(r'"(0|[1-9][0-9]*\.[0-9a-f]{16})"')
    assert all(len(seen) == 1 and pattern.fullmatch(next(iter(seen)))
               for seen in etags.values()), etags
