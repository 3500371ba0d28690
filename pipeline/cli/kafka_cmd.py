"""`harvest kafka up|down|status`: the local single-node KRaft broker (connectors.launch.broker).

``up`` starts it (formatting storage on first use) and prints the bootstrap address;
``up --secure`` starts it with a SASL_SSL listener (SCRAM-SHA-512 over TLS) and ACLs
instead, on its own data directory, and writes ``clients/<principal>.env`` for the
principals admin, producer, job and reader; only one broker (either mode) runs at a time.
``status`` exits 0 when it runs and answers, 3 when it is stopped, 1 when it runs but
does not answer, and says which mode runs; ``down`` stops it.
"""

from __future__ import annotations

import argparse

from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from pipeline.cli.local_service import add_service_parser, run_action
from pipeline.core.errors import ConfigError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `kafka` subcommand."""
    p = add_service_parser(
        subparsers, "kafka", "the broker", 60.0,
        help="start/stop/inspect the local single-node Kafka broker (KRaft)",
        description="Manage the local Apache Kafka 4 broker under HARVEST_CACHE_DIR/kafka. "
        "Needs Java 17+ and the jars from `make jars`.",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="`up` only: SASL_SSL (SCRAM-SHA-512 over TLS) listener with ACLs and no "
        "plaintext client listener; writes HARVEST_CACHE_DIR/kafka/clients/<principal>.env "
        "for admin, producer, job and reader",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch `up`, `down` or `status`; prints one status line on stdout."""
    if args.secure and args.action != "up":
        raise ConfigError(f"--secure: only with `up` (got `{args.action}`)")
    broker = LocalKafka(BrokerConfig.from_settings(settings, secure=args.secure))
    return run_action(args.action, broker, "kafka", args.timeout,
                      lambda status: _warn_override(settings, status.bootstrap))


def _warn_override(settings: Settings, bootstrap: str | None) -> None:
    """Say so when HARVEST_BOOTSTRAP_SERVERS points the other commands elsewhere."""
    if settings.bootstrap_servers and settings.bootstrap_servers != bootstrap:
        log.warning(
            "HARVEST_BOOTSTRAP_SERVERS overrides the local broker for other commands",
            bootstrap_servers=settings.bootstrap_servers,
            local=bootstrap,
        )
