"""`harvest kafka up|down|status|stop-node|start-node`: the local Kafka — one KRaft broker
(connectors.launch.broker) or, with ``up --brokers N``, an N-node cluster
(connectors.launch.cluster).

``up`` starts it (formatting storage on first use) and prints the bootstrap address;
``up --secure`` starts it with a SASL_SSL listener (SCRAM-SHA-512 over TLS) and ACLs
instead, on its own data directory, and writes ``clients/<principal>.env`` for the
principals admin, producer, job and reader; one broker or cluster (either mode) runs at a
time. ``up --brokers N`` starts N nodes on free ports with replication factor min(3, N)
and min.insync.replicas min(2, N); the bootstrap address then lists every node.
``status`` exits 0 when it runs and answers, 3 when it is stopped, 1 when it runs but
does not answer, says which mode runs and, for a cluster, lists each node with its pid,
port and the partitions it leads. ``stop-node ID [--kill]`` stops one node of the cluster
(SIGTERM, or SIGKILL), ``start-node ID`` starts it again; an id that is not the cluster's
exits 2. ``down`` stops the broker or every node.
"""

from __future__ import annotations

import argparse

from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.cluster import ClusterStatus, LocalCluster
from connectors.launch.cluster_layout import check_nodes
from pipeline.cli.args import positive_int
from pipeline.cli.local_service import EXIT_NOT_RUNNING, add_service_parser, run_action
from pipeline.core.errors import ConfigError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)
NODE_ACTIONS = ("stop-node", "start-node")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `kafka` subcommand."""
    p = add_service_parser(
        subparsers, "kafka", "the broker", 60.0,
        help="start/stop/inspect the local Kafka broker or N-node cluster (KRaft)",
        description="Manage the local Apache Kafka 4 broker (or cluster) under "
        "HARVEST_CACHE_DIR/kafka. Needs Java 17+ and the jars from `make jars`.",
        extra_actions=NODE_ACTIONS,
    )
    p.add_argument("node", nargs="?", default=None,
                   help="stop-node / start-node: the node id (1..N)")
    p.add_argument(
        "--secure",
        action="store_true",
        help="`up` only: SASL_SSL (SCRAM-SHA-512 over TLS) listener with ACLs and no "
        "plaintext client listener; writes HARVEST_CACHE_DIR/kafka/clients/<principal>.env "
        "for admin, producer, job and reader",
    )
    p.add_argument("--brokers", type=positive_int, default=1,
                   help="`up` only: how many KRaft nodes (default 1: the single broker; "
                   "N > 1: a cluster under HARVEST_CACHE_DIR/kafka/cluster, every topic "
                   "replicated min(3, N) times with min.insync.replicas min(2, N))")
    p.add_argument("--kill", action="store_true",
                   help="`stop-node` only: SIGKILL instead of SIGTERM (fault injection)")
    p.set_defaults(handler=run)


def _check_args(args: argparse.Namespace) -> None:
    """ConfigError naming the option used with an action that does not take it."""
    if args.secure and args.action != "up":
        raise ConfigError(f"--secure: only with `up` (got `{args.action}`)")
    if args.brokers != 1 and args.action != "up":
        raise ConfigError(f"--brokers: only with `up` (got `{args.action}`)")
    if args.kill and args.action != "stop-node":
        raise ConfigError(f"--kill: only with `stop-node` (got `{args.action}`)")
    if args.action in NODE_ACTIONS and args.node is None:
        raise ConfigError(f"node: `{args.action}` needs a node id")
    if args.action not in NODE_ACTIONS and args.node is not None:
        raise ConfigError(f"node: only with stop-node / start-node, got {args.node!r}")
    check_nodes(args.brokers)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch the action; prints a status line (a cluster: one per node) on stdout."""
    _check_args(args)
    config = BrokerConfig.from_settings(settings, secure=args.secure)
    cluster = LocalCluster(config)
    record = cluster.record()
    cluster_up = record is not None and record.up
    if args.action == "up" and args.brokers > 1:
        return _report(cluster.up(args.brokers, timeout=args.timeout), settings)
    if args.action == "stop-node":
        ran = cluster.stop_node(args.node, kill=args.kill)
        how = "killed (SIGKILL)" if args.kill else "stopped"
        print(f"kafka: node {args.node} {how}" if ran else f"kafka: node {args.node} "
              "was not running")
        return 0
    if args.action == "start-node":
        return _report(cluster.start_node(args.node, timeout=args.timeout), settings)
    if cluster_up and args.action == "status":
        return _report(cluster.status(), settings)
    if cluster_up and args.action == "down":
        cluster.down()
        print("kafka: cluster stopped")
        return 0
    broker = LocalKafka(config)
    return run_action(args.action, broker, "kafka", args.timeout,
                      lambda status: _warn_override(settings, status.bootstrap))


def _report(status: ClusterStatus, settings: Settings) -> int:
    """Print a cluster's status; the exit code of `status` (0, 1 or 3)."""
    print(status.describe())
    if not status.running:
        return EXIT_NOT_RUNNING
    _warn_override(settings, status.bootstrap)
    return 0 if status.answering else 1


def _warn_override(settings: Settings, bootstrap: str | None) -> None:
    """Say so when HARVEST_BOOTSTRAP_SERVERS points the other commands elsewhere."""
    if settings.bootstrap_servers and settings.bootstrap_servers != bootstrap:
        log.warning(
            "HARVEST_BOOTSTRAP_SERVERS overrides the local broker for other commands",
            bootstrap_servers=settings.bootstrap_servers,
            local=bootstrap,
        )
