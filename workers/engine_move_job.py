"""The engine-move job: the engine plays its seat's move ``serial`` in a stored game (see
:mod:`service.application.engine_seats`, which enqueues it on the analysis queue).

The job reads the game from the move store. If the game is no longer at ``serial - 1`` with
the engine to move (someone moved, or a run of this job already did: a stale job), it does
nothing. Otherwise it rebuilds the state, searches it for the seat's ``time_ms`` with this
process's search cache, and appends the best move through the games service, as a client's
append goes: at ``serial`` (a :class:`~service.errors.SerialConflict` means the game moved
on: done, not an error), with the idempotency key ``engine:<serial>`` (a second run that gets
there later is answered with the first run's move), and told to the listeners of
:func:`service.application.wiring.game_listeners` (the event stream's readers see it in the
log; webhooks; the engine seat's listener enqueues the engine's next move when it completed a
box).

What a worker process keeps for these jobs belongs to an :class:`EngineMovePlayer`, made on
first use by :func:`process_player`: its connections (the move store's, a ``redis.Redis`` or a
``RedisCluster``, and the job queue's), the games service on them, and the process's
:class:`~workers.analysis_job.AnalysisRunner` (its search cache, shared with analysis jobs).
"""

from __future__ import annotations

import functools
from time import sleep

import redis

from boxfish import engine
from boxfish.service.application.engine_seats import (
    ENGINE_RETRIES,
    engine_idempotency_key,
    engine_to_move,
)
from boxfish.service.application.games import fingerprint
from boxfish.service.application.wiring import (
    game_service,
    redis_recorder,
    webhook_registrations,
)
from boxfish.service.config import Settings
from boxfish.service.store import connections
from boxfish.service.store.keys import KeySpace
from boxfish.service.store.recorder import NotReplicated, SerialConflict
from boxfish.workers.analysis_job import AnalysisRunner, process_runner

#: Pauses before a run that failed on the move store (a ``redis.RedisError`` or
#: ``NotReplicated``) raises, by how many retries it has used: RQ retries the job at once (the
#: workers run no scheduler), so without them the retries would be spent within a moment of a
#: store outage; with them they span about 7 s of it. The last run does not pause.
STORE_ERROR_PAUSES_S = (1.0, 2.0, 4.0)


class EngineMovePlayer:
    """Plays engine moves on the move store of ``conns`` with ``runner``'s search cache."""

    def __init__(self, settings: Settings, conns: connections.Connections,
                 runner: AnalysisRunner) -> None:
        self.connections = conns
        self.runner = runner
        keys = KeySpace(settings.key_prefix)
        recorder = redis_recorder(conns.store, keys, settings)
        self.games = game_service(settings, recorder, conns.queue, keys,
                                  webhook_registrations(recorder, conns.store, keys))

    def play(self, game_id: str, serial: int) -> dict:
        """Play the engine's move ``serial`` of the game, if it is still the engine's to play.
        Returns ``{"outcome": "played", "serial", "move"}`` (``replayed``: another run
        appended it first) or ``{"outcome": "stale", "serial": <the game's serial>}``.
        Raises ``GameNotFound``, and the store's errors (``redis.RedisError``, and
        ``NotReplicated``) for the job to be retried."""
        meta = self.games.meta(game_id)
        if meta.engine is None or meta.serial != serial - 1:
            return {"outcome": "stale", "serial": meta.serial}
        state = self.games.state_at(meta)
        if not engine_to_move(meta, state):
            return {"outcome": "stale", "serial": meta.serial}
        # one move is all the seat plays: a proven best move ends the search at once
        analysis = engine.analyse(state, time_ms=meta.engine.time_ms, multipv=1,
                                  cache=self.runner.search_cache, threads=self.runner.threads)
        if analysis.best_move is None:
            raise RuntimeError(f"the engine found no move at serial {meta.serial}")
        # The key and body name the engine's move at this serial, not the move chosen: a
        # second run that chose another answers with the first run's.
        body = {"engine": meta.engine.seat, "serial": serial}
        try:
            appended = self.games.append(meta, list(analysis.best_move), serial,
                                         engine_idempotency_key(serial), fingerprint(body))
        except SerialConflict as exc:
            return {"outcome": "stale", "serial": exc.current_serial}
        return {"outcome": "played", "serial": appended.event.serial,
                "move": list(appended.event.move), "replayed": appended.replayed}


@functools.cache
def process_player() -> EngineMovePlayer:
    """This process's player, made on first use from ``Settings()`` (the environment: the
    move store's ``REDIS_URL``, a Redis Cluster or not, and the queue's Redis) and kept for
    the life of the process. Raises ``ConfigurationError`` on settings it cannot connect
    with (then nothing is kept)."""
    settings = Settings()
    return EngineMovePlayer(settings, connections.connect(settings), process_runner())


def play_engine_move(game_id: str, serial: int, alive_key: str | None = None,
                     alive_ttl_s: float = 5.0) -> dict:
    """The RQ job: :meth:`EngineMovePlayer.play` by this process's :func:`process_player`.
    ``alive_key`` and ``alive_ttl_s`` are for the worker that runs the job, which keeps the key
    alive for the whole run, its append included (:func:`workers.liveness.job_liveness`, as
    for analysis jobs); the job itself ignores them."""
    from rq import get_current_job

    job = get_current_job()
    try:
        return process_player().play(game_id, serial)
    except (redis.RedisError, NotReplicated):
        if job is not None and job.retries_left:  # retried at once: give the store time
            used = ENGINE_RETRIES - job.retries_left
            sleep(STORE_ERROR_PAUSES_S[min(max(used, 0), len(STORE_ERROR_PAUSES_S) - 1)])
        raise
