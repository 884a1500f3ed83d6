"""A state is safe to share between threads that only read it.

The service keeps rebuilt states in a cache and serves them to many request threads at once;
its readers call ``to_dict()`` (opportunities, pitfalls, chains), ``index()`` and ``copy()``.
None of these may change the state, even for a moment.
"""

from __future__ import annotations

import random
import sys
import threading

from boxfish.engine import load_game


def _midgame(seed: int, moves: int):
    game = load_game("dots-and-boxes", width=6, height=6)
    state = game.new_state()
    rng = random.Random(seed)
    for _ in range(moves):
        state.play_unchecked(rng.choice(state.legal_actions()))
    return state


def test_reads_do_not_change_the_state():
    state = _midgame(1, 50)
    before = (state.to_lines(), state.serial, state.to_move, state.scores, state.history)
    state.chains()
    snapshot = state.copy()
    state.to_dict(), state.opportunities(), state.pitfalls(), state.index()
    assert (state.to_lines(), state.serial, state.to_move, state.scores, state.history) == before
    assert state == snapshot


def test_concurrent_readers_of_one_state_all_see_the_same_position():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible to expose races
    try:
        for seed in range(3):
            state = _midgame(seed, 45)
            fresh = state.copy()
            want_dict, want_index = fresh.to_dict(), fresh.index()
            state.play_unchecked(state.legal_actions()[0])  # leave chain work to the readers
            state.undo_unchecked()
            bad: list = []

            def read(state=state, want_dict=want_dict, want_index=want_index, bad=bad):
                for _ in range(30):
                    try:
                        got = state.to_dict()
                        copy = state.copy()
                        if got != want_dict or copy.to_dict() != want_dict:
                            bad.append("to_dict")
                        if state.index() != want_index or copy.serial != want_dict["serial"]:
                            bad.append("index/serial")
                    except Exception as exc:  # a race shows as any error
                        bad.append(repr(exc))

            threads = [threading.Thread(target=read) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not bad, bad[:5]
            assert state.to_dict() == want_dict
    finally:
        sys.setswitchinterval(old)
