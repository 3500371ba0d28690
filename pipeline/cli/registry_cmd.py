"""`harvest registry up|down|status`: the local Schema Registry (connectors.launch.registry).

``up`` starts Apicurio Registry in memory on 127.0.0.1 (downloading it from Maven
Central on first use; needs Java 21+) and prints its Confluent-compatible URL, which
later commands use without a setting. ``status`` exits 0 when it runs and answers, 3 when
it is stopped, 1 when it runs but does not answer; ``down`` stops it (its schemas go
with it: the storage is in memory).
"""

from __future__ import annotations

import argparse

from connectors.launch.registry import LocalRegistry, RegistryConfig
from pipeline.cli.local_service import add_service_parser, run_action
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `registry` subcommand."""
    p = add_service_parser(
        subparsers, "registry", "the registry", 120.0,
        help="start/stop/inspect the local Schema Registry (Apicurio, Confluent API)",
        description="Manage the local Apicurio Registry under HARVEST_CACHE_DIR/registry "
        "(in-memory storage, Confluent-compatible API under /apis/ccompat/v7). Needs Java "
        "21+; the distribution is fetched from Maven Central on first use.",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch `up`, `down` or `status`; prints one status line on stdout."""
    registry = LocalRegistry(RegistryConfig.from_settings(settings))
    return run_action(args.action, registry, "registry", args.timeout,
                      lambda status: _warn_override(settings, status.url))


def _warn_override(settings: Settings, url: str | None) -> None:
    """Say so when HARVEST_SCHEMA_REGISTRY_URL points the other commands elsewhere."""
    if settings.schema_registry_url and settings.schema_registry_url.rstrip("/") != url:
        log.warning("HARVEST_SCHEMA_REGISTRY_URL overrides the local registry for other "
                    "commands", schema_registry_url=settings.schema_registry_url, local=url)
