"""The README's bot example (``play_seat``, the same on the Python client's page) works: two of
them play a whole game against each other on a live server (gunicorn, Redis, a real RQ worker)."""

from __future__ import annotations

import re
import threading

from boxfish.client import Client
from tests.test_readme import CLIENT_PAGE, README, python_blocks


def test_the_client_page_shows_the_readme_bot():
    [readme] = [b for b in python_blocks(README) if "def play_seat(" in b]
    [page] = [b for b in python_blocks(CLIENT_PAGE) if "def play_seat(" in b]
    assert page == readme


def test_the_readme_bot_example_plays_a_whole_game(server_url, rq_worker):
    [example] = [b for b in python_blocks(README) if "def play_seat(" in b]
    assert len(example.strip().splitlines()) <= 15
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    play_seat = namespace["play_seat"]

    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        errors: list[BaseException] = []

        def seat(n: int) -> None:
            try:
                play_seat(server_url, game.id, game.token, n, time_ms=30)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=seat, args=(n,), daemon=True) for n in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors and not any(t.is_alive() for t in threads)
        final = api.state(game.id)
        moves = api.moves(game.id)
    assert final.finished and final.serial == 12
    assert [m.serial for m in moves] == list(range(1, 13))
    assert re.fullmatch(r"1+", final.raw["lines"])
