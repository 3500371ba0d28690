"""Entry point of the `harvest` console script.

Each subcommand lives in its own module exposing ``register(subparsers)``; the module's
handler receives the parsed namespace and the process :class:`Settings` and returns an
exit code. :class:`ConfigError` and :class:`SetupRequiredError` (jars missing: run
`harvest setup`) become exit code 2, any other :class:`HarvestError` 1. A ``--spec``
that is no file here may name a packaged example (:mod:`pipeline.cli.spec_path`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pipeline.cli.spec_path import resolve_spec
from pipeline.core.errors import ConfigError, HarvestError, SetupRequiredError
from pipeline.core.logging import configure_logging
from pipeline.core.settings import load_settings

SUBCOMMAND_MODULES = (
    "pipeline.cli.setup_cmd",
    "pipeline.cli.kafka_cmd",
    "pipeline.cli.registry_cmd",
    "pipeline.cli.produce_cmd",
    "pipeline.cli.consume_cmd",
    "pipeline.cli.dump_cmd",
    "pipeline.cli.schema_cmd",
    "pipeline.cli.submit_cmd",
    "pipeline.cli.join_cmd",
    "pipeline.cli.oracle_cmd",
    "pipeline.cli.evaluate_cmd",
    "pipeline.cli.bench_cmd",
    "pipeline.cli.demo_cmd",
    "pipeline.cli.spark_cluster_cmd",
    "pipeline.cli.top_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every module of :data:`SUBCOMMAND_MODULES` registers its subcommand."""
    parser = argparse.ArgumentParser(
        prog="harvest",
        description="Adaptive m-way stream join with window harvesting on Kafka + Spark.",
    )
    parser.add_argument("--log-format", choices=["auto", "console", "json"], default=None)
    parser.add_argument(
        "--log-level", choices=["debug", "info", "warning", "error"], default=None
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, build settings, dispatch. Returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        overrides: dict[str, object] = {}
        if args.log_format:
            overrides["log_format"] = args.log_format
        if args.log_level:
            overrides["log_level"] = args.log_level
        settings = load_settings(**overrides)
        configure_logging(settings.log_format, settings.log_level)
        if getattr(args, "spec", None) is not None:
            args.spec = resolve_spec(args.spec, settings.examples_dir)
        code: int = args.handler(args, settings)
        return code
    except (ConfigError, SetupRequiredError) as exc:
        print(f"harvest {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except HarvestError as exc:
        print(f"harvest {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"harvest {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
