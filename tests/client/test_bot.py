"""``boxfish bot``: two bots play a whole 3x3 game against each other on a live server (a
real gunicorn, Redis and RQ worker) that is restarted in the middle; a bot with a wrong token
or game stops at once with status 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from boxfish.client import Client
from boxfish.engine import load_game, replay


def start_bot(url: str, game_id: str, token: str, seat: int, log_path) -> subprocess.Popen:
    log = open(log_path, "wb")
    return subprocess.Popen(
        # --name=value: a token (or an id) may begin with "-"
        [sys.executable, "-m", "boxfish.service.cli", "bot", f"--url={url}", f"--game={game_id}",
         f"--token={token}", f"--seat={seat}", "--time-ms=50"],
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
            while (api.state(game.id).serial < 5 and time.monotonic() < deadline
                   and all(bot.poll() is None for bot in bots)):
                time.sleep(0.05)
            assert api.state(game.id).status == "in_progress"
            server.restart()
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
            [sys.executable, "-m", "boxfish.service.cli", "bot", "--url", server_url,
             "--game", game.id, "--seat", "0", "--time-ms", "50"],
            env={**os.environ, "BOXFISH_TOKEN": game.token}, stdout=log,
            stderr=subprocess.STDOUT, timeout=60)
    assert bot.returncode == 0, log_path.read_text()
    with Client(server_url) as api:
        assert api.state(game.id).finished  # the bot against the engine seat, to the end


def test_ids_and_tokens_never_begin_with_a_dash(monkeypatch):
    from boxfish.service import games

    made = iter(["-dash", "plain"])
    monkeypatch.setattr(games.secrets, "token_urlsafe", lambda n: next(made))
    assert games.new_game_id() == "plain"
