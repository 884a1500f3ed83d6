"""``boxfish bot``: two bots play a whole 3x3 game against each other on a live server (a
real gunicorn, Redis and RQ worker) that is restarted in the middle; a bot with a wrong token
or game stops at once with status 2; a bot whose game loses moves in a (simulated) store
failover takes the log's state and plays on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from boxfish.client import Client, Game
from boxfish.engine import load_game, replay
from tests.lost_moves import lose_moves


def start_bot(url: str, game_id: str, token: str, seat: int, log_path) -> subprocess.Popen:
    log = open(log_path, "wb")
    return subprocess.Popen(
        # --name=value: a token (or an id) may begin with "-"
        [sys.executable, "-m", "boxfish.service.runtime.cli", "bot", f"--url={url}",
         f"--game={game_id}", f"--token={token}", f"--seat={seat}", "--time-ms=50"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def test_two_bots_play_a_whole_game_across_an_api_restart(restartable_server, rq_worker,
                                                          tmp_path):
    server = restartable_server
    with Client(server.url, retries=12, backoff=0.1) as api:
        game = api.create_game(width=3, height=3)
        bots = [start_bot(server.url, game.id, game.token, seat, tmp_path / f"bot{seat}.log")
                for seat in (0, 1)]
        try:
            deadline = time.monotonic() + 60
            while api.state(game.id).serial < 5:
                assert time.monotonic() < deadline and all(bot.poll() is None for bot in bots), \
                    "the bots did not play 5 moves"
                time.sleep(0.05)
            # Frozen while the API stops, so that it stops in the middle of the game however
            # fast they play; they wake to a server that is down, and it starts again.
            for bot in bots:
                os.kill(bot.pid, signal.SIGSTOP)
            assert api.state(game.id).status == "in_progress"
            server.stop()
            for bot in bots:
                os.kill(bot.pid, signal.SIGCONT)
            server.start()
            codes = [bot.wait(timeout=120) for bot in bots]
        finally:
            for bot in bots:
                if bot.poll() is None:
                    bot.kill()
                    bot.wait()
        logs = [(tmp_path / f"bot{seat}.log").read_text() for seat in (0, 1)]
        assert codes == [0, 0], logs

        moves = api.moves(game.id)
        final = api.state(game.id)
    assert [m.serial for m in moves] == list(range(1, 25))  # 24 lines, each drawn once
    state = replay(load_game("dots-and-boxes", width=3, height=3),
                   [(m.serial, m.move) for m in moves])
    assert state.is_terminal()
    assert final.status == "finished" and final.serial == 24
    assert sum(final.scores) == 9
    # Each bot played its own moves: the side to move, the log says, is the one that played.
    for seat, log in enumerate(logs):
        played = [m for m in moves if m.player == seat]
        assert played and all(f"serial {m.serial}: played" in log for m in played), log
        assert "game over at serial 24" in log


def test_a_bot_refused_by_the_server_exits_2(server_url, rq_worker, tmp_path):
    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        other = api.create_game(width=2, height=2)
    # The bot is to move at once (seat 0): its move is refused for the other game's token.
    bot = start_bot(server_url, game.id, other.token, 0, tmp_path / "wrong-token.log")
    assert bot.wait(timeout=60) == 2
    assert "refused" in (tmp_path / "wrong-token.log").read_text()
    missing = start_bot(server_url, "no-such-game", game.token, 1, tmp_path / "missing.log")
    assert missing.wait(timeout=60) == 2
    assert "404" in (tmp_path / "missing.log").read_text()


def test_the_bot_takes_its_token_from_the_environment(server_url, rq_worker, tmp_path):
    """``BOXFISH_TOKEN`` instead of ``--token`` (kept out of the process list); the ids and
    tokens the server makes never begin with "-", so "--game ID" works too."""
    with Client(server_url) as api:
        game = api.create_game(width=2, height=1, engine={"seat": 1, "time_ms": 50})
    log_path = tmp_path / "env-token.log"
    with open(log_path, "wb") as log:
        bot = subprocess.run(
            [sys.executable, "-m", "boxfish.service.runtime.cli", "bot", "--url", server_url,
             "--game", game.id, "--seat", "0", "--time-ms", "50"],
            env={**os.environ, "BOXFISH_TOKEN": game.token}, stdout=log,
            stderr=subprocess.STDOUT, timeout=60)
    assert bot.returncode == 0, log_path.read_text()
    with Client(server_url) as api:
        assert api.state(game.id).finished  # the bot against the engine seat, to the end


def test_ids_and_tokens_never_begin_with_a_dash(monkeypatch):
    from boxfish.service.application import games

    made = iter(["-dash", "plain"])
    monkeypatch.setattr(games.secrets, "token_urlsafe", lambda n: next(made))
    assert games.new_game_id() == "plain"


def test_a_bot_whose_game_loses_moves_in_a_failover_resyncs_and_plays_on(
        server_url, rq_worker, settings, redis_client, tmp_path):
    """The bot plays seat 0; the test plays seat 1 by hand. Once the bot has played serial 3
    and waits for seat 1, the store loses move 3 (as a failover that lost it would): the log
    is at serial 2 with seat 0 to move. The bot's stream gets the log's state (a GameReset):
    the bot must take it and play serial 3 again, then go on to the end of the game."""
    log_path = tmp_path / "bot-reset.log"
    with Client(server_url) as api:
        game = api.create_game(width=2, height=2)
        bot = start_bot(server_url, game.id, game.token, 0, log_path)
        try:
            def wait_for_serial(serial: int) -> Game:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and bot.poll() is None:
                    state = api.state(game.id)
                    if state.serial >= serial:
                        return state
                    time.sleep(0.05)
                raise AssertionError(f"serial {serial} never came: {log_path.read_text()}")

            wait_for_serial(1)
            api.play(game.id, api.state(game.id).legal_moves[0], serial=2, token=game.token)
            third = wait_for_serial(3)
            assert third.to_move == 1 and api.moves(game.id, after=2)[0].player == 0
            # Lost at once: whether or not the bot's stream has handed out its move 3 yet, and
            # whether or not the bot has re-read the state after its turn (client/bot.py).
            lose_moves(redis_client, settings.key_prefix, game.id, keep=2)
            replayed = wait_for_serial(3)  # the bot plays serial 3 again
            moves = api.moves(game.id)
            assert moves[2].player == 0, log_path.read_text()
            # Seat 1 plays on, by hand, until the game is over.
            state = replayed
            deadline = time.monotonic() + 90
            while not state.finished and time.monotonic() < deadline:
                if state.to_move == 1:
                    api.play(game.id, state.legal_moves[0], serial=state.serial + 1,
                             token=game.token)
                else:
                    time.sleep(0.05)
                state = api.state(game.id)
            assert bot.wait(timeout=60) == 0, log_path.read_text()
        finally:
            if bot.poll() is None:
                bot.kill()
                bot.wait()
        log = log_path.read_text()
        final = api.state(game.id)
        moves = api.moves(game.id)
    assert final.finished and final.serial == 12
    assert "the game's history was rewritten (the store lost moves): the log is at serial 2, " \
           "seat 0 to move" in log, log
    assert "game over at serial 12" in log, log
    replay(load_game("dots-and-boxes", width=2, height=2), [(m.serial, m.move) for m in moves])
