"""The results of a distributed solve in Redis (the job queue's): the proven bounds of
positions, a run's counters and the jobs it has out (keys: :mod:`.keys`, ``solve:*``).

A job's result is merged into what is known of its position atomically (one script): the
higher lower bound and the lower upper bound are kept, so results may arrive in any order and
twice. Positions are named by the application (the hex of a search key); this module keeps
what it is given.
"""

from __future__ import annotations

import time

import redis

from .keys import KeySpace

# KEYS: bounds, run, tests, news; ARGV: position, lower, upper, nodes, test name.
# Merges the bounds, adds the nodes and the job to the position's, the run's and the test's
# counters, wakes the coordinator; returns the merged {lower, upper}.
_MERGE = """
local lo, hi = tonumber(ARGV[2]), tonumber(ARGV[3])
local nodes, jobs = tonumber(ARGV[4]), 1
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local a, b, n, j = string.match(old, '^(%-?%d+) (%-?%d+) (%d+) (%d+)$')
  lo = math.max(lo, tonumber(a))
  hi = math.min(hi, tonumber(b))
  nodes = nodes + tonumber(n)
  jobs = jobs + tonumber(j)
end
redis.call('HSET', KEYS[1], ARGV[1], lo .. ' ' .. hi .. ' ' .. nodes .. ' ' .. jobs)
redis.call('HINCRBY', KEYS[2], 'nodes', ARGV[4])
redis.call('HINCRBY', KEYS[2], 'jobs', 1)
redis.call('HINCRBY', KEYS[3], ARGV[5], 1)
redis.call('RPUSH', KEYS[4], ARGV[5])
return {lo, hi}
"""

#: Fields read per HMGET.
_CHUNK = 4096


class SolveResults:
    """The results of distributed solves on ``connection`` under ``keys``."""

    def __init__(self, connection: redis.Redis, keys: KeySpace) -> None:
        self.redis = connection
        self.keys = keys

    def _run_keys(self, run_id: str) -> tuple[str, str, str, str]:
        k = self.keys
        return (k.solve_run(run_id, "run"), k.solve_run(run_id, "tests"),
                k.solve_run(run_id, "jobs"), k.solve_run(run_id, "news"))

    def record(self, width: int, height: int, position: str, lower: int, upper: int,
               nodes: int, run_id: str, test: str) -> tuple[int, int]:
        """Merge a job's proven bounds of ``position`` (its search of ``nodes`` nodes, the
        test ``test`` of run ``run_id``); returns the position's merged bounds."""
        run, tests, _jobs, news = self._run_keys(run_id)
        lo, hi = self.redis.eval(_MERGE, 4, self.keys.solve_bounds(width, height), run, tests,
                                 news, position, lower, upper, nodes, test)
        return int(lo), int(hi)

    def bounds(self, width: int, height: int, positions: list[str]
               ) -> dict[str, tuple[int, int, int, int]]:
        """(lower, upper, nodes, jobs) of each of ``positions`` that has any."""
        key = self.keys.solve_bounds(width, height)
        out = {}
        for i in range(0, len(positions), _CHUNK):
            chunk = positions[i:i + _CHUNK]
            for pos, raw in zip(chunk, self.redis.hmget(key, chunk), strict=True):
                if raw is not None:
                    lo, hi, nodes, jobs = (int(x) for x in raw.split())
                    out[pos] = (lo, hi, nodes, jobs)
        return out

    def start_run(self, run_id: str) -> None:
        """Note when run ``run_id`` first started (kept across restarts)."""
        self.redis.hsetnx(self._run_keys(run_id)[0], "started_at", round(time.time(), 3))

    def counters(self, run_id: str) -> dict[str, float]:
        """A run's nodes and jobs (0 before its first job) and ``started_at``."""
        raw = self.redis.hgetall(self._run_keys(run_id)[0])
        out = {"nodes": 0, "jobs": 0, "started_at": 0.0}
        for k, v in raw.items():
            name = k.decode()
            if name in out:
                out[name] = float(v) if name == "started_at" else int(v)
        return out

    def tests_done(self, run_id: str) -> dict[str, int]:
        """How many times each test of a run finished (test name -> count)."""
        return {k.decode(): int(v)
                for k, v in self.redis.hgetall(self._run_keys(run_id)[1]).items()}

    def jobs(self, run_id: str) -> dict[str, str]:
        """The run's jobs out: position -> RQ job id."""
        return {k.decode(): v.decode()
                for k, v in self.redis.hgetall(self._run_keys(run_id)[2]).items()}

    def set_job(self, run_id: str, position: str, job_id: str | None) -> None:
        """Note (or, with None, forget) the job out for ``position``."""
        key = self._run_keys(run_id)[2]
        if job_id is None:
            self.redis.hdel(key, position)
        else:
            self.redis.hset(key, position, job_id)

    def wait_news(self, run_id: str, timeout_s: float) -> int:
        """Block up to ``timeout_s`` for a finished job of the run; returns how many finished
        since the last call (and forgets them)."""
        news = self._run_keys(run_id)[3]
        got = self.redis.blpop([news], timeout=max(timeout_s, 0.01))
        if got is None:
            return 0
        with self.redis.pipeline() as p:
            p.llen(news)
            p.delete(news)
            n, _ = p.execute()
        return 1 + int(n)
