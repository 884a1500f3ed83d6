"""Appending clients for the failover tests, and the ledger that holds what they were told
against the log (tests/service/test_outage.py, tests/service/test_cluster_api.py).

A :class:`Player` plays one game through the HTTP API. Each attempt draws its move at random
among the moves legal at that moment and has an ``Idempotency-Key`` of its own; a 503 is
retried with the same key and body, as a client should; a 409 makes it read the game and go on
from the server's state. The :class:`Ledger` keeps every 201 as an entry of its own (client,
game, serial, move, position), never overwritten, and reports each breach of "no acknowledged
move is lost":

* ``second_ack``: a second 201 for one serial of one game;
* ``conflict_below_ack``: a 409 whose ``current_serial`` is below a serial the client had
  acknowledged (one breach per such serial);
* ``lost``: after the load, an acknowledged entry that the log does not hold at its serial
  (another move, the same move at another position, or nothing).
"""

from __future__ import annotations

import http.client as httplib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

#: Longest a request may take before the client gives up on it (the tests' request timeout,
#: 10 s, plus scheduling slack).
DEFAULT_TIMEOUT_S = 15.0
#: A client's pause before it sends a 503'd request (or one that got no answer) again.
RETRY_PAUSE_S = 0.1
PROBLEM_JSON = "application/problem+json"
MOVES_PATH = "/v1/games/{}/moves"


class Http:
    """One keep-alive HTTP/1.1 connection with JSON helpers (reconnects after an error)."""

    def __init__(self, port: int, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.port = port
        self.timeout = timeout
        self.conn: httplib.HTTPConnection | None = None

    def request(self, method: str, path: str, body=None, headers=None):
        """``(status, parsed JSON body or None, headers)``; an OSError (refused, reset,
        timed out) closes the connection and propagates."""
        if self.conn is None:
            self.conn = httplib.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body)
            hdrs["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=hdrs)
            resp = self.conn.getresponse()
            raw = resp.read()
        except (OSError, httplib.HTTPException):
            self.close()
            raise
        ctype = resp.getheader("Content-Type", "")
        parsed = json.loads(raw) if raw and "json" in ctype else None
        return resp.status, parsed, {k.lower(): v for k, v in resp.getheaders()}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Stream:
    """An open ``GET /v1/games/{id}/events`` read event by event."""

    def __init__(self, port: int, game_id: str, last_event_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.conn = httplib.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
        self.conn.request("GET", f"/v1/games/{game_id}/events", headers=headers)
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        assert self.resp.getheader("Content-Type").startswith("text/event-stream")

    def next(self, comments: bool = False) -> tuple[str, str | None, dict | None]:
        """``(event, id, data)``; ``("<end>", None, None)`` when the server closed it;
        ``("<comment>", None, None)`` for a keep-alive if ``comments``."""
        fields: dict[str, str] = {}
        while True:
            line = self.resp.readline()
            if not line:
                return "<end>", None, None
            text = line.decode().rstrip("\n")
            if text == "":
                if "event" in fields:
                    return fields["event"], fields.get("id"), json.loads(fields["data"])
                fields = {}
            elif text.startswith(":"):
                if comments:
                    return "<comment>", None, None
            else:
                key, _, value = text.partition(": ")
                fields[key] = value

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class Ack:
    """One 201: the client told, the serial and move of its game, the log position after it."""

    client: int
    game_id: str
    serial: int
    move: tuple[int, ...]
    position: str
    at: float  # time.monotonic() when the answer arrived


@dataclass(frozen=True)
class Breach:
    """A sign that an acknowledged move was lost (``kind``: see the module's docstring)."""

    kind: str
    client: int
    game_id: str
    serial: int
    detail: str

    def __str__(self) -> str:
        return (f"{self.kind}: client {self.client}, game {self.game_id}, serial {self.serial}: "
                f"{self.detail}")


class Ledger:
    """Every answer the players got: each 201 an entry of its own, the breaches they show,
    the status counts, the 503s' problem types, transport errors and answers slower than
    ``slow_s``. Thread-safe."""

    def __init__(self, slow_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.slow_s = slow_s
        self.lock = threading.Lock()
        self.acks: list[Ack] = []
        self.breaches: list[Breach] = []
        self.statuses: Counter[int] = Counter()
        self.problems: Counter[str] = Counter()
        self.transport_errors: list[str] = []
        self.slow: list[str] = []
        #: Players that stopped on an answer no client should get.
        self.failures: list[str] = []
        self._at: dict[tuple[str, int], list[Ack]] = {}

    def answered(self, status: int, took_s: float, what: str) -> None:
        with self.lock:
            self.statuses[status] += 1
            if took_s > self.slow_s:
                self.slow.append(f"{what}: {status} after {took_s:.1f} s")

    def acknowledge(self, ack: Ack) -> None:
        """Record a 201 (a second one for the serial is a ``second_ack`` breach)."""
        with self.lock:
            earlier = self._at.setdefault((ack.game_id, ack.serial), [])
            if earlier:
                first = earlier[0]
                self.breaches.append(Breach(
                    "second_ack", ack.client, ack.game_id, ack.serial,
                    f"201 for {list(ack.move)} at {ack.position}; the serial had 201 for "
                    f"{list(first.move)} at {first.position} before"))
            earlier.append(ack)
            self.acks.append(ack)

    def conflict(self, client: int, game_id: str, current_serial: int) -> None:
        """Record a 409 saying the log ends at ``current_serial`` (every serial above it
        that had a 201 is a ``conflict_below_ack`` breach)."""
        with self.lock:
            above = sorted({a.serial: a for a in self.acks
                            if a.game_id == game_id and a.serial > current_serial}.items())
            for serial, ack in above:
                self.breaches.append(Breach(
                    "conflict_below_ack", client, game_id, serial,
                    f"409 current_serial {current_serial}, but serial {serial} had 201 for "
                    f"{list(ack.move)} at {ack.position}"))

    def compare(self, game_id: str, log: list[tuple[int, tuple, str]]) -> None:
        """Hold every 201 of ``game_id`` against its ``log`` (``(serial, move, position)``,
        serial by serial): each acknowledged entry the log does not have is a ``lost``
        breach."""
        entries = {serial: (tuple(move), position) for serial, move, position in log}
        with self.lock:
            for ack in (a for a in self.acks if a.game_id == game_id):
                held = entries.get(ack.serial)
                if held != (ack.move, ack.position):
                    has = (f"{list(held[0])} at {held[1]}" if held else
                           f"nothing (it ends at serial {len(log)})")
                    self.breaches.append(Breach(
                        "lost", ack.client, game_id, ack.serial,
                        f"201 for {list(ack.move)} at {ack.position}; the log has {has}"))

    def report(self) -> str:
        with self.lock:
            shown = "\n".join(str(b) for b in self.breaches[:20])
            return f"{len(self.breaches)} signs of a lost acknowledged move:\n{shown}"

    def assert_no_loss(self) -> None:
        """Fail, naming each breach (the first 20), if any was recorded."""
        with self.lock:
            clean = not self.breaches
        assert clean, self.report()


class Player:
    """Client ``index``, appending to its ``game`` (the body of its creation) through the API
    on ``port``: :meth:`step` makes one request, :meth:`run` steps until told to stop or the
    game is over. Its moves are drawn from ``random.Random(f"{seed}:{index}")``."""

    def __init__(self, index: int, game: dict, port: int, ledger: Ledger, seed: int,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.index = index
        self.game_id = game["id"]
        self.auth = {"Authorization": f"Bearer {game['write_token']}"}
        self.port = port
        self.ledger = ledger
        self.http = Http(port, timeout_s)
        self.rng = random.Random(f"{seed}:{index}")
        self.serial = game["serial"] + 1
        self.legal = [tuple(m) for m in game["legal_moves"]]
        self.finished = game["status"] == "finished"
        #: The attempt awaiting a final answer: (serial, move, Idempotency-Key).
        self.pending: tuple[int, tuple, str] | None = None
        self.attempts = 0
        #: When each 201 arrived; when each 503 did, with its problem type.
        self.acked_at: list[float] = []
        self.problems_at: list[tuple[float, str]] = []

    def acks_since(self, since: float) -> int:
        return sum(1 for t in list(self.acked_at) if t > since)

    def problems_since(self, since: float, problem_type: str) -> int:
        return sum(1 for t, p in list(self.problems_at) if t > since and p == problem_type)

    def step(self) -> int | None:
        """One append: the pending attempt again, else a new one (the next serial, a move
        drawn among the legal ones). Returns the status, None when no answer came."""
        if self.pending is None:
            self.attempts += 1
            move = self.rng.choice(sorted(self.legal))
            self.pending = (self.serial, move, f"{self.serial}-{self.attempts}")
        serial, move, key = self.pending
        what = f"client {self.index}, game {self.game_id}, serial {serial}"
        began = time.monotonic()
        try:
            status, body, hdrs = self.http.request(
                "POST", MOVES_PATH.format(self.game_id), {"move": list(move), "serial": serial},
                {**self.auth, "Idempotency-Key": key})
        except (OSError, httplib.HTTPException) as exc:
            with self.ledger.lock:
                self.ledger.transport_errors.append(
                    f"{what}: {exc!r} after {time.monotonic() - began:.1f} s")
            return None
        self.ledger.answered(status, time.monotonic() - began, what)
        if status == 201:
            assert (body["serial"], tuple(body["move"])) == (serial, move), (what, body)
            assert body.get("position", "").startswith(f"{serial}."), (what, body)
            now = time.monotonic()
            self.ledger.acknowledge(Ack(self.index, self.game_id, serial, move,
                                        body["position"], now))
            self.acked_at.append(now)
            self.legal.remove(move)
            self.serial = serial + 1
            self.pending = None
            self.finished = body["status"] == "finished"
        elif status == 503:  # the same key and body again
            assert hdrs.get("content-type", "").startswith(PROBLEM_JSON), (what, hdrs, body)
            assert int(hdrs["retry-after"]) > 0, (what, hdrs)
            self.problems_at.append((time.monotonic(), body["type"]))
            with self.ledger.lock:
                self.ledger.problems[body["type"]] += 1
        elif status == 409 and "current_serial" in body:
            self.ledger.conflict(self.index, self.game_id, body["current_serial"])
            self.pending = None
            self.resync()
        else:
            raise AssertionError(f"{what}: {status} {body}")
        return status

    def resync(self, timeout_s: float = 60.0) -> None:
        """Go on from the server's state: its serial and legal moves (503s and lost
        connections are retried until ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                status, state, _ = self.http.request("GET", f"/v1/games/{self.game_id}")
            except (OSError, httplib.HTTPException):
                status, state = None, None
            if status == 200:
                break
            assert status in (None, 503) and time.monotonic() < deadline, (
                f"client {self.index}: reading game {self.game_id}: {status} {state}")
            time.sleep(RETRY_PAUSE_S)
        self.serial = state["serial"] + 1
        self.legal = [tuple(m) for m in state["legal_moves"]]
        self.finished = state["status"] == "finished"

    def run(self, stop: threading.Event, pace_s: float) -> None:
        """Step until ``stop`` is set or the game is over, ``pace_s`` after each 201; a
        failure is recorded in the ledger."""
        try:
            while not stop.is_set() and not self.finished:
                status = self.step()
                stop.wait(pace_s if status == 201 else RETRY_PAUSE_S)
        except Exception as exc:  # the test reports it
            with self.ledger.lock:
                self.ledger.failures.append(f"client {self.index}: {exc!r}")
        finally:
            self.http.close()


class Load:
    """``players`` running in threads of their own, ``pace_s`` after each 201."""

    def __init__(self, players: list[Player], pace_s: float) -> None:
        self.players = players
        self.ledger = players[0].ledger
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=p.run, args=(self.stop_event, pace_s),
                                         daemon=True) for p in players]

    def start(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def wait_until(self, what: str, done: Callable[[], bool], timeout_s: float) -> float:
        """Poll ``done()`` until it is true (returns the time it took); fail at the deadline
        or as soon as a player has failed."""
        began = time.monotonic()
        while True:
            with self.ledger.lock:
                failures = list(self.ledger.failures)
            assert not failures, failures
            if done():
                return time.monotonic() - began
            assert time.monotonic() < began + timeout_s, (
                f"not within {timeout_s:g} s: {what}; answers so far "
                f"{dict(self.ledger.statuses)}, 503s {dict(self.ledger.problems)}")
            time.sleep(0.05)

    def stop(self, join_s: float = DEFAULT_TIMEOUT_S + 5) -> list[int]:
        """Stop the players; the indexes of those still waiting for an answer after
        ``join_s``."""
        self.stop_event.set()
        for t in self.threads:
            t.join(join_s)
        return [p.index for p, t in zip(self.players, self.threads, strict=True)
                if t.is_alive()]


def read_log(port: int, store, keys, game_id: str) -> list[tuple[int, tuple, str]]:
    """The game's log, serial by serial, as ``(serial, move, position)``: its entries as the
    move store (``store``, a client of the cluster; ``keys``, the service's KeySpace) holds
    them, each event's JSON and the head beside it, checked against the moves the API lists
    (``GET /v1/games/{id}/moves`` on ``port``)."""
    log = []
    for entry_id, fields in store.xrange(keys.game_log(game_id)):
        event = json.loads(fields["e"])
        assert entry_id == f"{event['s']}-0" and fields.get("h"), (game_id, entry_id, fields)
        log.append((event["s"], tuple(event["m"]), f"{event['s']}.{fields['h']}"))
    http = Http(port)
    try:
        status, listed, _ = http.request("GET", MOVES_PATH.format(game_id))
    finally:
        http.close()
    assert status == 200, listed
    assert [(m["serial"], tuple(m["move"])) for m in listed["moves"]] == [
        (s, m) for s, m, _ in log], f"game {game_id}: the API lists other moves than the store"
    return log


def compare_logs(port: int, store, keys, ledger: Ledger, game_ids: list[str]) -> dict:
    """Read each game's log (:func:`read_log`), check it has every serial from 1 once and no
    line twice, and hold the ledger's entries against it (:meth:`Ledger.compare`). Returns
    the logs by game id."""
    logs = {}
    for game_id in game_ids:
        log = logs[game_id] = read_log(port, store, keys, game_id)
        assert [s for s, _, _ in log] == list(range(1, len(log) + 1)), (game_id, log)
        assert len({m for _, m, _ in log}) == len(log), (game_id, log)
        ledger.compare(game_id, log)
    return logs


NOT_REPLICATED = "urn:boxfish:problem:not-replicated"
STORE_UNAVAILABLE = "urn:boxfish:problem:store-unavailable"


@dataclass(frozen=True)
class Failover:
    """What :func:`fail_over_under_load` saw, in seconds from the kill."""

    promoted: object  # the ClusterNode that took over
    promoted_after: float
    healed_after: float
    recovered_after: float  # from the killed node's return to every client's third 201

    def __str__(self) -> str:
        return (f"{self.promoted.name} promoted after {self.promoted_after:.1f} s, the "
                f"killed master back after {self.healed_after:.1f} s, every client's third "
                f"201 since then {self.recovered_after:.1f} s later")


def fail_over_under_load(cluster, victim, load: Load, on_victim: set[int],
                         timeout_s: float = 30.0, recovery_s: float = 30.0) -> Failover:
    """With ``load`` running on a cluster whose appends wait for all of a master's replicas:
    once every client has had 3 201s, SIGKILL ``victim`` (the master of the games of the
    players ``on_victim``) and wait for its replica's promotion; wait until a game of the
    promoted master (one replica short) has had a 503 ``not_replicated`` and every other game
    a 201 since; restart ``victim`` (it comes back as a replica) and wait until every client
    has had 3 201s since, within ``recovery_s``."""
    players = load.players
    load.wait_until("3 201s for every client before the kill",
                    lambda: all(len(p.acked_at) >= 3 for p in players), timeout_s)
    killed_at = time.monotonic()
    cluster.kill(victim)
    promoted = cluster.wait_for_failover(victim, timeout_s)
    promoted_at = time.monotonic()
    load.wait_until(
        "a 503 not_replicated on a game of the promoted master, a 201 on every other game",
        lambda: (any(p.problems_since(promoted_at, NOT_REPLICATED) for p in players
                     if p.index in on_victim)
                 and all(p.acks_since(promoted_at) for p in players
                         if p.index not in on_victim)), timeout_s)
    cluster.restart(victim, timeout_s)
    healed_at = time.monotonic()
    recovered = load.wait_until(
        "3 201s for every client since the killed master's return",
        lambda: all(p.acks_since(healed_at) >= 3 for p in players), recovery_s)
    return Failover(promoted, promoted_at - killed_at, healed_at - killed_at, recovered)


def check_answers(ledger: Ledger, hung: list[int]) -> None:
    """The players all stopped; none failed, lost a connection or waited longer than the
    ledger's ``slow_s`` for an answer; every answer was a 201, 409 or 503, every 503
    ``store-unavailable`` or ``not_replicated``, and some ``not_replicated``."""
    assert not hung, f"clients {hung} still waiting for an answer"
    assert not ledger.failures, ledger.failures
    assert not ledger.transport_errors, ledger.transport_errors[:5]
    assert not ledger.slow, ledger.slow[:5]
    assert set(ledger.statuses) <= {201, 409, 503}, ledger.statuses
    assert set(ledger.problems) <= {STORE_UNAVAILABLE, NOT_REPLICATED}, ledger.problems
    assert ledger.problems[NOT_REPLICATED], ledger.problems
