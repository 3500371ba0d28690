"""`harvest schema --spec S`: print the Avro schema of the spec's results.

``join_result`` plus, with a non-empty ``[output] payload``, one field per stream holding
that stream's payload fields with their Avro types (generated from the input schemas,
deterministically). The spec is checked against its schema files first (exit 2 naming
the key).

``harvest schema --subject SUBJECT [--version N]`` and ``--id N`` print a schema of the
schema registry instead (a topic's values are under ``<topic>-value``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from connectors.io.avsc import schema_text
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from pipeline.cli.args import positive_int
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings
from pipeline.runtime.inputs import output_schema, spec_registry
from pipeline.spec.model import load_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `schema` subcommand."""
    p = subparsers.add_parser(
        "schema",
        help="print the Avro schema of the spec's results, or one of the schema registry",
        description="Check the spec against its input schema files and print the result "
        "schema: join_result plus one payload record per stream when [output] payload is set. "
        "With --subject or --id, print a schema of the schema registry instead.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--spec", type=Path, help="job spec (TOML)")
    what.add_argument("--subject", help="a registry subject, e.g. orders-value: print its "
                      "latest version (or --version)")
    what.add_argument("--id", type=positive_int, help="print the registry's schema of this id")
    p.add_argument("--version", type=positive_int, default=None,
                   help="with --subject: this version instead of the latest")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Print the schema on stdout."""
    if args.version is not None and args.subject is None:
        raise ConfigError("--version: only with --subject")
    if args.spec is not None:
        spec = load_spec(args.spec)
        sys.stdout.write(schema_text(output_schema(spec, settings.schemas_dir,
                                                   spec_registry(spec, settings))))
        return 0
    registry = SchemaRegistry(RegistryOptions.from_settings(settings))
    if args.id is not None:
        text = registry.writer_schema(args.id)
    else:
        text = registry.version(args.subject, args.version or "latest").schema_json
    sys.stdout.write(schema_text(json.loads(text)))
    return 0
