"""Where the local N-node Kafka cluster (`harvest kafka up --brokers N`) keeps its state,
and its record: node count, cluster id, each node's ports, whether it is up.

Layout under ``Settings.kafka_dir`` (``.cache/kafka``)::

    cluster/cluster.json     the record (:class:`ClusterRecord`)
    cluster/<id>/            node ``id``'s directory: data/ (secure-data/), logs/,
                             server.properties, kafka.pid, ports.json, mode
    cluster/secure/          secure mode: the cluster's TLS material and credentials
    clients/<principal>.env  secure mode: client files (as for the single broker)
    bootstrap, mode          while the cluster is up: every node's address, its mode

The single broker (:mod:`connectors.launch.broker`) reads :func:`cluster_is_up` to refuse
to start beside a cluster; :mod:`connectors.launch.cluster` runs the nodes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from connectors.launch.broker_config import Ports
from connectors.launch.ports import LOOPBACK
from connectors.launch.secure import SecureLayout
from pipeline.core.errors import ConfigError, InfraError

#: the largest cluster `harvest kafka up --brokers` starts (every node is a controller)
MAX_NODES = 5


def check_nodes(nodes: int) -> int:
    """``nodes`` if a cluster of that many nodes can be started, else ConfigError."""
    if not 1 <= nodes <= MAX_NODES:
        raise ConfigError(f"--brokers: must be in 1..{MAX_NODES}, got {nodes}")
    return nodes


@dataclass(frozen=True)
class ClusterLayout:
    """The cluster's paths under ``kafka_dir`` (see the module docstring)."""

    kafka_dir: Path

    @property
    def root(self) -> Path:
        return self.kafka_dir / "cluster"

    @property
    def record_file(self) -> Path:
        return self.root / "cluster.json"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    def node_dir(self, node: int) -> Path:
        return self.root / str(node)

    @property
    def secure_layout(self) -> SecureLayout:
        """TLS material and credentials under ``cluster/secure``, client files in
        ``kafka/clients``."""
        return SecureLayout(self.root, clients_home=self.kafka_dir)

    @property
    def bootstrap_file(self) -> Path:
        """The address clients read (``Settings.resolved_bootstrap``), as for one broker."""
        return self.kafka_dir / "bootstrap"

    @property
    def mode_file(self) -> Path:
        return self.kafka_dir / "mode"


@dataclass(frozen=True)
class ClusterRecord:
    """``cluster.json``: what `harvest kafka up --brokers N` made (kept by ``down``, so
    the next ``up`` reuses the data directories and ports)."""

    nodes: int
    cluster_id: str
    ports: dict[int, Ports]
    secure: bool = False
    up: bool = False
    host: str = field(default=LOOPBACK)

    @property
    def voters(self) -> tuple[tuple[int, int], ...]:
        """``(node id, controller port)`` of every node (all are controllers)."""
        return tuple((n, self.ports[n].controller) for n in sorted(self.ports))

    @property
    def bootstrap(self) -> str:
        """Every node's client address, comma-separated (HARVEST_BOOTSTRAP_SERVERS)."""
        return ",".join(f"{self.host}:{self.ports[n].broker}" for n in sorted(self.ports))

    def address(self, node: int) -> str:
        return f"{self.host}:{self.ports[self.node(node)].broker}"

    def node(self, value: object) -> int:
        """The node id ``value`` names; ConfigError (field ``node``) when it is none of
        this cluster's ids."""
        ids = sorted(self.ports)
        try:
            node = int(str(value).strip())
        except ValueError:
            node = -1
        if node not in self.ports:
            raise ConfigError(f"node: {value!r} is not a node of the cluster (ids "
                              f"{ids[0]}..{ids[-1]})")
        return node

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"nodes": self.nodes, "cluster_id": self.cluster_id, "secure": self.secure,
                "up": self.up, "host": self.host,
                "ports": {str(n): [p.broker, p.controller] for n, p in self.ports.items()}}
        path.write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> ClusterRecord | None:
        """The record in ``path`` (None when there is none); InfraError when damaged."""
        try:
            text = path.read_text()
        except OSError:
            return None
        try:
            data = json.loads(text)
            ports = {int(n): Ports(int(p[0]), int(p[1])) for n, p in data["ports"].items()}
            return cls(int(data["nodes"]), str(data["cluster_id"]), ports,
                       bool(data.get("secure", False)), bool(data.get("up", False)),
                       str(data.get("host", LOOPBACK)))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise InfraError(f"damaged cluster record {path}: {exc}; remove "
                             f"{path.parent} to start over") from exc


def cluster_is_up(kafka_dir: Path) -> ClusterRecord | None:
    """The record of the cluster under ``kafka_dir`` if it is up (started by ``up`` and
    not stopped by ``down``, whichever of its nodes run), else None."""
    record = ClusterRecord.load(ClusterLayout(kafka_dir).record_file)
    return record if record is not None and record.up else None
