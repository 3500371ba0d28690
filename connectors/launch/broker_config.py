"""Configuration of the local Kafka broker: paths, listener ports, rendered properties,
JVM command lines. Pure functions only; :mod:`connectors.launch.broker` runs the processes.
"""

from __future__ import annotations

import base64
import string
import uuid
from dataclasses import dataclass
from pathlib import Path

from connectors.launch.ports import LOOPBACK, choose_port
from connectors.launch.secure import SecureLayout
from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings


@dataclass(frozen=True)
class BrokerConfig:
    """Where and how the local broker runs (built from :class:`Settings`, never mutated)."""

    kafka_dir: Path
    jars_dir: Path
    #: ``Settings.infra_dir``: holds ``kafka/server.properties.template`` and ``log4j2.xml``
    infra_dir: Path
    java_home: Path | None = None
    preferred_port: int = 9092
    host: str = LOOPBACK
    heap: str = "512m"
    start_timeout_s: float = 60.0
    stop_timeout_s: float = 30.0
    #: `harvest kafka up --secure`: SASL_SSL + ACLs, own data directory (connectors.launch.secure)
    secure: bool = False
    #: a node of `harvest kafka up --brokers N` (connectors.launch.cluster): its KRaft id,
    #: the quorum's ``(node id, controller port)`` voters (empty: the standalone broker),
    #: the cluster id every node is formatted with, and the cluster's TLS material
    node_id: int = 1
    voters: tuple[tuple[int, int], ...] = ()
    cluster_id: str | None = None
    shared_layout: SecureLayout | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> BrokerConfig:
        """The broker config for ``settings`` (``kafka_dir``, ``jars_dir``, ``kafka_port``)."""
        base: dict[str, object] = {
            "kafka_dir": settings.kafka_dir,
            "jars_dir": settings.jars_dir,
            "infra_dir": settings.infra_dir,
            "java_home": settings.java_home,
            "preferred_port": settings.kafka_port,
        }
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]

    @property
    def template(self) -> Path:
        """The broker's ``server.properties`` template."""
        return self.infra_dir / "kafka" / "server.properties.template"

    @property
    def log4j_config(self) -> Path:
        """The broker's log4j2 configuration."""
        return self.infra_dir / "kafka" / "log4j2.xml"

    @property
    def secure_template(self) -> Path:
        """The SASL_SSL overlay of the template (secure mode)."""
        return self.infra_dir / "kafka" / "secure.properties.template"

    @property
    def secure_layout(self) -> SecureLayout:
        """TLS material, credentials and client files of the secure mode (a cluster
        node: the cluster's, shared by its nodes)."""
        return self.shared_layout or SecureLayout(self.kafka_dir)

    @property
    def nodes(self) -> int:
        """How many nodes the quorum has (1: the standalone broker)."""
        return max(1, len(self.voters))

    @property
    def mode(self) -> str:
        """``secure`` or ``plaintext``."""
        return "secure" if self.secure else "plaintext"

    @property
    def data_dir(self) -> Path:
        """KRaft data: ``data/`` (plaintext) or ``secure/data/`` — the modes never share it
        (a cluster node: ``data/`` or ``secure-data/`` in its own directory)."""
        if self.voters:
            return self.kafka_dir / ("secure-data" if self.secure else "data")
        return self.secure_layout.data_dir if self.secure else self.kafka_dir / "data"

    @property
    def logs_dir(self) -> Path:
        return self.kafka_dir / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "console.log"

    @property
    def properties_file(self) -> Path:
        return self.kafka_dir / "server.properties"

    @property
    def pid_file(self) -> Path:
        return self.kafka_dir / "kafka.pid"

    @property
    def ports_file(self) -> Path:
        return self.kafka_dir / "ports.json"

    @property
    def bootstrap_file(self) -> Path:
        return self.kafka_dir / "bootstrap"

    @property
    def mode_file(self) -> Path:
        """``secure`` or ``plaintext``: the mode of the running broker."""
        return self.kafka_dir / "mode"

    @property
    def lock_file(self) -> Path:
        return self.kafka_dir / ".lock"


@dataclass(frozen=True)
class Ports:
    """The broker's two listeners: clients (PLAINTEXT) and the KRaft controller."""

    broker: int
    controller: int


def replication_of(nodes: int) -> tuple[int, int]:
    """``(replication factor, min.insync.replicas)`` of an N-node cluster's topics:
    ``(min(3, N), min(2, N))``."""
    return min(3, nodes), min(2, nodes)


def quorum_voters(voters: tuple[tuple[int, int], ...], host: str = LOOPBACK) -> str:
    """``controller.quorum.voters``: ``id@host:port`` of every voter, comma-separated."""
    return ",".join(f"{node}@{host}:{port}" for node, port in voters)


def render_properties(template: str, ports: Ports, data_dir: Path, *, node_id: int = 1,
                      voters: tuple[tuple[int, int], ...] = ()) -> str:
    """Fill ``server.properties.template`` (``string.Template`` placeholders): the
    standalone broker (no ``voters``) or node ``node_id`` of a static quorum of ``voters``,
    with the replication of :func:`replication_of`."""
    replication, min_isr = replication_of(max(1, len(voters)))
    if voters:
        quorum_key, quorum = "controller.quorum.voters", quorum_voters(voters)
    else:
        quorum_key, quorum = "controller.quorum.bootstrap.servers", f"{LOOPBACK}:{ports.controller}"
    try:
        return string.Template(template).substitute(
            broker_port=ports.broker, controller_port=ports.controller, data_dir=data_dir,
            node_id=node_id, quorum_key=quorum_key, quorum=quorum,
            replication=replication, min_isr=min_isr,
        )
    except (KeyError, ValueError) as exc:
        raise InfraError(f"bad placeholder in the broker template: {exc}") from exc


def pick_ports(preferred: int, previous: Ports | None, host: str = LOOPBACK) -> Ports:
    """Client port: ``preferred`` (9092) if free, else the previous run's, else any free one.
    Controller port: the previous run's if free, else ``preferred + 1``, else any free one."""
    broker = choose_port([preferred, previous.broker if previous else None], host)
    controller = choose_port(
        [previous.controller if previous else None, preferred + 1 if preferred < 65535 else None],
        host,
        exclude=[broker],
    )
    return Ports(broker, controller)


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars),
    never starting with ``-`` (it would read as a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def java_command(config: BrokerConfig, java: Path, main_class: str, *args: str) -> list[str]:
    """The JVM command line for a Kafka main class with the jars from `make jars`."""
    return [
        str(java),
        "-Xms64m",
        f"-Xmx{config.heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={config.logs_dir}",
        f"-Dlog4j2.configurationFile={config.log4j_config}",
        "-cp",
        str(config.jars_dir / "kafka" / "*"),
        main_class,
        *args,
    ]
