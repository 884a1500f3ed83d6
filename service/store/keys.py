"""Every Redis key the service writes, named once.

Games are spread over the feed's partitions (``feed.partition_of``: CRC-32 of the id, modulo
``feed.FEED_PARTITIONS``). A partition's keys (its games' keys and its feed) share the hash tag
``{games:<partition>}``, so that on a Redis Cluster they live in one slot (on one master) and
the append script may write a move and its feed entry together::

    <prefix>:{games:<p>}:game:<id>:log    Stream, one entry per move; entry id "<serial>-0"
    <prefix>:{games:<p>}:game:<id>:meta   Hash: game, params, serial, status, token_sha256,
                                created_at, head, engine (JSON {"seat", "time_ms"}; only in a
                                game with an engine seat)
    <prefix>:{games:<p>}:game:<id>:idem:<sha256 hex of the Idempotency-Key>
                                String "<body fingerprint> <serial>" with a TTL (the record
                                expires: BOXFISH_IDEMPOTENCY_TTL_S, default 24 h)
    <prefix>:{games:<p>}:game:<id>:webhooks
                                Hash: webhook id -> JSON (url, events, secret, created_at,
                                active, disabled_reason, disabled_at): the game's webhook
                                registrations, with the game (same slot, same master, its
                                replicas)
    <prefix>:{games:<p>}:feed   Stream: the partition's feed, one entry per game created and
                                per move; entry id "<feed serial>-0", fields f (the feed's
                                head after it), g (game id), k (created | move), e (the
                                event's JSON, or the created game's), h (the game log's head
                                after a move)

The index of recent games (no hash tag: on a Redis Cluster it lives in a slot of its own,
so it is written after the game's create script, as a separate command)::

    <prefix>:games:recent                    Sorted set: game id, scored by created_at (ms);
                                             capped to the newest BOXFISH_RECENT_GAMES_KEPT

Analysis keys::

    <prefix>:analysis:job:<queue>:<request digest>   String: id of the RQ job for that request
    <prefix>:analysis:alive:<job id>         String with a short TTL, refreshed by the running job
                                             (a review's job too)
    <prefix>:review:job:<queue>:<request digest>     String: id of the review job for that
                                             request (game, log position, time_ms)

Webhook keys (in the job queue's Redis, like the analysis keys)::

    <prefix>:webhook:deliveries:<webhook id> List of JSON attempt records, newest first,
                                             capped (``webhooks.DELIVERIES_KEPT``)
    <prefix>:webhook:enqueued:<message id>   String with a TTL: the delivery of that message
                                             was enqueued (a replayed append enqueues none)
    <prefix>:analysis:callbacks:<job id>     List of JSON callbacks ({url, secret}), with a TTL
    <prefix>:analysis:ended:<job id>         String with a TTL: the job's event
                                             (analysis.finished / analysis.failed) as JSON
    <prefix>:analysis:callback:deliveries:<job id>
                                             List of JSON attempt records of the job's
                                             callbacks, newest first, capped
                                             (``webhooks.DELIVERIES_KEPT``), with a TTL

The store of exact values (``exact_values.ExactValueStore``), in the move store's Redis, in
``EXACT_SHARDS`` shards, each its own hash tag (spread over a cluster's slots)::

    <prefix>:{exact:<shard>}:entries   Hash: "<game>:<params>:<canonical position>" -> JSON
                                       entry (value, move values, engine, proof seconds)
    <prefix>:{exact:<shard>}:costs     Sorted set: the same fields, scored by proof seconds
                                       (the cheapest proof is evicted first)
    <prefix>:{exact:<shard>}:stats     Hash: hits, misses, writes, evictions

Stored analyses (answered from the store of exact values, with no job)::

    <prefix>:analysis:stored:<id>      String with a TTL (BOXFISH_RESULT_TTL_S): the
                                       analysis resource as JSON

A distributed solve (``solve_results.SolveResults``, in the job queue's Redis)::

    <prefix>:solve:bounds:<w>x<h>      Hash: position (hex of its search key) -> "lower upper
                                       nodes jobs": the proven bounds of its value, and the
                                       nodes and jobs spent on it (shared by every run on
                                       that board size: a bound is a fact about a position)
    <prefix>:solve:run:<run id>        Hash: nodes, jobs (a run's counters), started_at
    <prefix>:solve:tests:<run id>      Hash: "<position hex>:<beta>" -> how many times that
                                       subproblem test finished
    <prefix>:solve:jobs:<run id>       Hash: position hex -> id of the RQ job testing it
    <prefix>:solve:news:<run id>       List: one item per finished job (wakes the coordinator)
    <prefix>:solve:alive:<job id>      String with a short TTL, refreshed by the running job

Projections (``projections.ProjectionStore``, in the move store's Redis; see
docs/projections.md). Each version of a projection has its own hash tag, so that one script
applies a game's contribution together with its ledger entry and the checkpoint::

    <prefix>:proj:<name>                 Hash: current (the version readers read), target
                                         (the version being built, >= current),
                                         schema:<version> (the projection's code schema that
                                         built it)
    <prefix>:{proj:<name>:v<N>}:checkpoints
                                         Hash: feed partition -> "<serial>.<head>", the last
                                         feed entry version N took in
    <prefix>:{proj:<name>:v<N>}:ledger:<p>
                                         Hash: game id (of feed partition p) -> "<game log
                                         head> <source JSON>": what version N counted of it
    <prefix>:{proj:<name>:v<N>}:b:<bucket>
                                         Hash: the projection's counters and samples of one
                                         bucket (the explorer: one position)

RQ keeps its own keys (``rq:*``) for queues, jobs and results.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .feed import partition_of

DEFAULT_PREFIX = "boxfish"

GAMES = "games"
GAME = "game"
FEED = "feed"
GAME_LOG = "log"
GAME_META = "meta"
GAME_IDEMPOTENCY = "idem"
GAME_WEBHOOKS = "webhooks"
GAMES_RECENT = "games:recent"
ANALYSIS_JOB = "analysis:job"
ANALYSIS_ALIVE = "analysis:alive"
REVIEW_JOB = "review:job"
ANALYSIS_CALLBACKS = "analysis:callbacks"
ANALYSIS_ENDED = "analysis:ended"
ANALYSIS_CALLBACK_DELIVERIES = "analysis:callback:deliveries"
ANALYSIS_STORED = "analysis:stored"
EXACT = "exact"
EXACT_ENTRIES = "entries"
EXACT_COSTS = "costs"
EXACT_STATS = "stats"
SOLVE = "solve"
WEBHOOK_DELIVERIES = "webhook:deliveries"
WEBHOOK_ENQUEUED = "webhook:enqueued"
PROJECTION = "proj"
PROJECTION_CHECKPOINTS = "checkpoints"
PROJECTION_LEDGER = "ledger"
PROJECTION_BUCKET = "b"


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Builds the keys under one prefix."""

    prefix: str = DEFAULT_PREFIX

    def _game(self, game_id: str, part: str) -> str:
        return f"{self.prefix}:{{{GAMES}:{partition_of(game_id)}}}:{GAME}:{game_id}:{part}"

    def feed(self, partition: int) -> str:
        """The feed of a partition of the games (with its games, in their slot)."""
        return f"{self.prefix}:{{{GAMES}:{partition}}}:{FEED}"

    def game_log(self, game_id: str) -> str:
        return self._game(game_id, GAME_LOG)

    def game_meta(self, game_id: str) -> str:
        return self._game(game_id, GAME_META)

    def idempotency_record(self, game_id: str, idempotency_key: str) -> str:
        """The key of one idempotency record: the client's key is hashed, so any length or
        character is fine and the Redis key stays short."""
        digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
        return self._game(game_id, f"{GAME_IDEMPOTENCY}:{digest}")

    def game_webhooks(self, game_id: str) -> str:
        """The game's webhook registrations (with the game, on its master)."""
        return self._game(game_id, GAME_WEBHOOKS)

    def games_recent(self) -> str:
        """The sorted set of the newest games' ids, scored by their ``created_at``."""
        return f"{self.prefix}:{GAMES_RECENT}"

    def analysis_job(self, queue: str, request_digest: str) -> str:
        """The key naming the job of a request (``AnalysisRequest.digest()``) on ``queue``."""
        return f"{self.prefix}:{ANALYSIS_JOB}:{queue}:{request_digest}"

    def review_job(self, queue: str, request_digest: str) -> str:
        """The key naming the review job of a request (``ReviewRequest.digest()``)."""
        return f"{self.prefix}:{REVIEW_JOB}:{queue}:{request_digest}"

    def analysis_alive(self, job_id: str) -> str:
        return f"{self.prefix}:{ANALYSIS_ALIVE}:{job_id}"

    def analysis_callbacks(self, job_id: str) -> str:
        return f"{self.prefix}:{ANALYSIS_CALLBACKS}:{job_id}"

    def analysis_ended(self, job_id: str) -> str:
        return f"{self.prefix}:{ANALYSIS_ENDED}:{job_id}"

    def analysis_callback_deliveries(self, job_id: str) -> str:
        return f"{self.prefix}:{ANALYSIS_CALLBACK_DELIVERIES}:{job_id}"

    def analysis_stored(self, analysis_id: str) -> str:
        """An analysis answered from the store of exact values (its resource, as JSON)."""
        return f"{self.prefix}:{ANALYSIS_STORED}:{analysis_id}"

    def exact_shard(self, shard: int) -> tuple[str, str, str]:
        """The entries, costs and stats keys of one shard of the store of exact values (one
        hash tag: one slot, so one script may touch all three)."""
        base = f"{self.prefix}:{{{EXACT}:{shard}}}"
        return f"{base}:{EXACT_ENTRIES}", f"{base}:{EXACT_COSTS}", f"{base}:{EXACT_STATS}"

    def solve_bounds(self, width: int, height: int) -> str:
        """The proven bounds of positions of a ``width`` x ``height`` board (a distributed
        solve's results)."""
        return f"{self.prefix}:{SOLVE}:bounds:{width}x{height}"

    def solve_run(self, run_id: str, part: str) -> str:
        """A distributed solve's ``part`` (``run``, ``tests``, ``jobs``, ``news``)."""
        return f"{self.prefix}:{SOLVE}:{part}:{run_id}"

    def solve_alive(self, job_id: str) -> str:
        """The liveness key of a distributed solve's job."""
        return f"{self.prefix}:{SOLVE}:alive:{job_id}"

    def webhook_deliveries(self, webhook_id: str) -> str:
        return f"{self.prefix}:{WEBHOOK_DELIVERIES}:{webhook_id}"

    def webhook_enqueued(self, message_id: str) -> str:
        return f"{self.prefix}:{WEBHOOK_ENQUEUED}:{message_id}"

    def projection_pointer(self, name: str) -> str:
        """The versions of projection ``name`` (current, target, their schemas)."""
        return f"{self.prefix}:{PROJECTION}:{name}"

    def projection_base(self, name: str, version: int) -> str:
        """The prefix (with its hash tag) of every key of version ``version`` of ``name``."""
        return f"{self.prefix}:{{{PROJECTION}:{name}:v{version}}}"

    def projection_checkpoints(self, name: str, version: int) -> str:
        return f"{self.projection_base(name, version)}:{PROJECTION_CHECKPOINTS}"

    def projection_ledger(self, name: str, version: int, partition: int) -> str:
        """The ledger of the games of one feed partition."""
        return f"{self.projection_base(name, version)}:{PROJECTION_LEDGER}:{partition}"

    def projection_bucket(self, name: str, version: int, bucket: str) -> str:
        return f"{self.projection_base(name, version)}:{PROJECTION_BUCKET}:{bucket}"
