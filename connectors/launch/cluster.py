"""The local N-node Kafka cluster: `harvest kafka up --brokers N`, ``status``,
``stop-node ID [--kill]``, ``start-node ID`` and ``down``.

Every node is a combined broker + controller (Apache Kafka 4.x, KRaft) on 127.0.0.1 with
its own directory ``cluster/<id>`` (:mod:`connectors.launch.cluster_layout`), one static
controller quorum of all N, and replication factor ``min(3, N)`` with
``min.insync.replicas = min(2, N)`` for every topic created without an explicit factor
(internal ones included). Each node is a :class:`~connectors.launch.broker.LocalKafka`
of a node config (``node_id``, ``voters``, the shared ``cluster_id``): this module picks
the ports, starts all nodes before waiting for any (a node answers only once a quorum
runs), and records the cluster. Ports come from the free (ephemeral) range and are kept
in the record, so a node restarted by ``start-node`` comes back where the others and the
clients expect it. ``--secure``: one set of TLS material and credentials for every node
(``cluster/secure``), client files in ``kafka/clients`` listing every node.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from connectors.io.admin import partition_leaders
from connectors.launch import secure as sec
from connectors.launch.broker import LocalKafka, is_broker_process, prepare_secure
from connectors.launch.broker_config import BrokerConfig, Ports, new_cluster_id
from connectors.launch.cluster_layout import (
    ClusterLayout,
    ClusterRecord,
    check_nodes,
)
from connectors.launch.jars import check_java, find_java, kafka_jars
from connectors.launch.ports import ephemeral_port, port_is_free
from connectors.launch.service import Clock, locked, read_int
from pipeline.core.errors import ConfigError, HarvestError, InfraError
from pipeline.core.logging import get_logger
from pipeline.core.secrets import ClientOptions

log = get_logger(__name__)


@dataclass(frozen=True)
class NodeStatus:
    """One node as `harvest kafka status` lists it."""

    node: int
    port: int
    pid: int | None
    #: ``(topic, partition)`` pairs it leads (None: the cluster did not answer)
    leads: tuple[tuple[str, int], ...] | None

    @property
    def running(self) -> bool:
        return self.pid is not None

    def describe(self) -> str:
        state = f"running (pid {self.pid})" if self.pid is not None else "stopped"
        if self.leads is None:
            leads = "leads ?"
        else:
            user = [f"{t}[{p}]" for t, p in self.leads if not t.startswith("__")]
            shown = ", ".join(user[:6]) + (f", … {len(user) - 6} more" if len(user) > 6 else "")
            leads = (f"leads {len(self.leads)} partitions ({len(user)} of user topics"
                     + (f": {shown}" if user else "") + ")")
        return f"  node {self.node}: 127.0.0.1:{self.port} {state}; {leads}"


@dataclass(frozen=True)
class ClusterStatus:
    """What `harvest kafka up|status` reports for a cluster."""

    up: bool
    bootstrap: str | None
    nodes: tuple[NodeStatus, ...] = ()
    answering: bool = False
    secure: bool = False
    clients_dir: Path | None = None
    startup_s: float | None = None

    @property
    def running(self) -> bool:
        """True while the cluster is up and one of its nodes runs."""
        return self.up and any(n.running for n in self.nodes)

    def describe(self) -> str:
        """A headline and one line per node."""
        if not self.up:
            return "kafka: stopped (no cluster up)"
        alive = sum(n.running for n in self.nodes)
        took = f" started in {self.startup_s:.1f} s;" if self.startup_s is not None else ""
        health = "" if self.answering else " NOT answering metadata requests;"
        mode = (f"secure ({sec.PROTOCOL} {sec.MECHANISM} + ACLs, client settings in "
                f"{self.clients_dir}/<principal>.env)" if self.secure else "plaintext")
        head = (f"kafka: cluster of {len(self.nodes)} nodes ({alive} running);{took}{health} "
                f"bootstrap {self.bootstrap}; mode {mode}")
        return "\n".join([head, *(n.describe() for n in self.nodes)])


class LocalCluster:
    """Start, stop and inspect the local cluster under ``base.kafka_dir`` (``base``: the
    single broker's config, whose JVM settings and mode every node takes)."""

    def __init__(self, base: BrokerConfig, clock: Clock = time.monotonic) -> None:
        self.base = base
        self.layout = ClusterLayout(base.kafka_dir)
        self._clock = clock
        self._nodes: dict[int, LocalKafka] = {}

    # -- records and nodes ---------------------------------------------------------------
    def record(self) -> ClusterRecord | None:
        """The cluster's record (None: never started here)."""
        return ClusterRecord.load(self.layout.record_file)

    def _up_record(self) -> ClusterRecord:
        record = self.record()
        if record is None or not record.up:
            raise ConfigError("node: no cluster is up under "
                              f"{self.base.kafka_dir}; start one with "
                              "`harvest kafka up --brokers 3`")
        return record

    def node(self, record: ClusterRecord, node: int) -> LocalKafka:
        """The :class:`LocalKafka` of ``node`` (one object per node, so the JVM it starts
        is watched while it starts)."""
        if node not in self._nodes:
            config = dataclasses.replace(
                self.base, kafka_dir=self.layout.node_dir(node), node_id=node,
                voters=record.voters, cluster_id=record.cluster_id,
                preferred_port=record.ports[node].broker, secure=record.secure,
                shared_layout=self.layout.secure_layout if record.secure else None)
            self._nodes[node] = LocalKafka(config, self._clock)
        return self._nodes[node]

    def _pid(self, record: ClusterRecord, node: int) -> int | None:
        pid = read_int(self.node(record, node).config.pid_file)
        return pid if pid is not None and is_broker_process(pid) else None

    def _new_record(self, nodes: int) -> ClusterRecord:
        """The record of a cluster of ``nodes``: the previous one's id and ports when it
        had as many nodes, else a new id and free ports (refused while old node data is
        there: its quorum would not match)."""
        old = self.record()
        if old is not None and old.nodes == nodes:
            return old
        if old is not None and any(self.layout.node_dir(n).exists() for n in old.ports):
            raise ConfigError(
                f"--brokers: the cluster under {self.layout.root} has {old.nodes} nodes, "
                f"not {nodes}; remove {self.layout.root} to make a new one")
        taken: list[int] = []
        ports: dict[int, Ports] = {}
        for node in range(1, nodes + 1):
            broker = ephemeral_port(self.base.host, exclude=taken)
            controller = ephemeral_port(self.base.host, exclude=[*taken, broker])
            taken += [broker, controller]
            ports[node] = Ports(broker, controller)
        return ClusterRecord(nodes, new_cluster_id(), ports, host=self.base.host)

    def _check_ports_free(self, record: ClusterRecord, nodes: list[int]) -> None:
        for node in nodes:
            for port in (record.ports[node].broker, record.ports[node].controller):
                if not port_is_free(port, record.host):
                    raise InfraError(
                        f"node {node}: port {port} of the cluster record {self.layout.record_file} "
                        "is taken by another process; free it or remove "
                        f"{self.layout.root} to make a new cluster")

    # -- public API ----------------------------------------------------------------------
    def up(self, nodes: int, timeout: float | None = None) -> ClusterStatus:
        """Start a cluster of ``nodes`` (its stopped nodes, when it is up already) and
        return once every node answers; the bootstrap file then lists every node."""
        check_nodes(nodes)
        limit = self.base.start_timeout_s if timeout is None else timeout
        java = find_java(self.base.java_home)
        kafka_jars(self.base.jars_dir)
        single = LocalKafka(self.base)
        with locked(self.layout.lock_file):
            pid = read_int(self.base.pid_file)
            if pid is not None and is_broker_process(pid):
                raise InfraError(
                    f"the single broker runs under {self.base.kafka_dir} (pid {pid}); one "
                    "broker or cluster runs at a time: stop it with `harvest kafka down`")
            record = self._new_record(nodes)
            if record.up and record.secure != self.base.secure:
                raise InfraError(
                    f"a {'secure' if record.secure else 'plaintext'} cluster is up; stop it "
                    "with `harvest kafka down` first")
            record = dataclasses.replace(record, secure=self.base.secure)
            self._nodes.clear()
            check_java(java)
            took = self._start(record, java, limit)
            record = dataclasses.replace(record, up=True)
            record.save(self.layout.record_file)
            self.layout.bootstrap_file.write_text(record.bootstrap + "\n")
            self.layout.mode_file.write_text(single.config.mode + "\n")
        log.info("kafka cluster ready", nodes=nodes, bootstrap=record.bootstrap,
                 seconds=round(took, 1))
        return dataclasses.replace(self.status(), startup_s=took)

    def _start(self, record: ClusterRecord, java: Path, limit: float) -> float:
        """Launch every stopped node, then wait for each; stop them all on failure."""
        start = self._clock()
        stopped = [n for n in sorted(record.ports) if self._pid(record, n) is None]
        self._check_ports_free(record, stopped)
        creds = None
        if record.secure:
            fresh = not any((self.layout.node_dir(n) / "secure-data" / "meta.properties")
                            .exists() for n in record.ports)
            creds = prepare_secure(java, self.layout.secure_layout, fresh=fresh)
        record.save(self.layout.record_file)
        launched: dict[int, int] = {}
        try:
            for node in stopped:
                launched[node] = self.node(record, node).launch(java, record.ports[node], creds)
            for node, pid in launched.items():
                self.node(record, node).await_started(pid, start, limit)
            if creds is not None:
                self.node(record, min(record.ports)).grant(record.bootstrap, creds)
        except HarvestError:
            self._stop_all(record, list(launched))
            raise
        return self._clock() - start

    def status(self, probe_timeout: float = 3.0) -> ClusterStatus:
        """Each node's pid, port and the partitions it leads (from the cluster's metadata)."""
        record = self.record()
        if record is None or not record.up:
            return ClusterStatus(False, None)
        pids = {n: self._pid(record, n) for n in sorted(record.ports)}
        leaders: dict[int, list[tuple[str, int]]] | None = None
        if any(pids.values()):
            try:
                leaders = partition_leaders(record.bootstrap, self.admin_options(record),
                                            probe_timeout)
            except HarvestError:
                leaders = None
        nodes = tuple(NodeStatus(n, record.ports[n].broker, pids[n],
                                 None if leaders is None else tuple(leaders.get(n, ())))
                      for n in sorted(record.ports))
        clients = self.layout.secure_layout.clients_dir if record.secure else None
        return ClusterStatus(True, record.bootstrap, nodes, leaders is not None,
                             record.secure, clients)

    def admin_options(self, record: ClusterRecord) -> ClientOptions:
        """The launcher's client settings: none, or ``admin`` over SASL_SSL."""
        if not record.secure:
            return ClientOptions()
        creds = sec.Credentials.load(self.layout.secure_layout.credentials_file)
        return sec.client_options(self.layout.secure_layout, creds, "admin")

    def stop_node(self, value: object, kill: bool = False) -> bool:
        """Stop node ``value`` (SIGTERM, or SIGKILL with ``kill``); True if it ran.
        ConfigError (field ``node``) for an id that is not the cluster's."""
        record = self._up_record()
        node = record.node(value)
        return self.node(record, node).stop(kill=kill)

    def start_node(self, value: object, timeout: float | None = None) -> ClusterStatus:
        """Start node ``value`` again on its recorded ports and wait until it answers."""
        record = self._up_record()
        node = record.node(value)
        limit = self.base.start_timeout_s if timeout is None else timeout
        java = find_java(self.base.java_home)
        with locked(self.layout.lock_file):
            if self._pid(record, node) is None:
                self._start(record, java, limit)
        return self.status()

    def down(self) -> bool:
        """Stop every node (all signalled at once, so none waits for a lost quorum);
        True if the cluster was up."""
        record = self.record()
        if record is None or not record.up:
            return False
        with locked(self.layout.lock_file):
            self._stop_all(record, sorted(record.ports))
            dataclasses.replace(record, up=False).save(self.layout.record_file)
            for path in (self.layout.bootstrap_file, self.layout.mode_file):
                path.unlink(missing_ok=True)
        return True

    def _stop_all(self, record: ClusterRecord, nodes: list[int]) -> None:
        """SIGTERM to every node, then wait; SIGKILL what is left after the stop timeout."""
        pids = {n: self._pid(record, n) for n in nodes}
        for node, pid in pids.items():
            if pid is not None:
                self.node(record, node).signal_stop()
        deadline = self._clock() + self.base.stop_timeout_s
        for node, pid in pids.items():
            if pid is not None and not self.node(record, node).wait_stopped(
                    pid, max(0.0, deadline - self._clock())):
                self.node(record, node).stop(kill=True)
            self.node(record, node).stop(kill=True)  # clears its runtime files
