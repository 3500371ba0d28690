"""`harvest schema --spec S`: print the Avro schema of the spec's results.

``join_result`` plus, with a non-empty ``[output] payload``, one field per stream holding
that stream's payload fields with their Avro types (generated from the input schemas,
deterministically). The spec is checked against its schema files first (exit 2 naming
the key).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from connectors.io.avsc import schema_text
from pipeline.core.settings import Settings
from pipeline.runtime.inputs import output_schema
from pipeline.spec.model import load_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `schema` subcommand."""
    p = subparsers.add_parser(
        "schema",
        help="print the Avro schema of the spec's results",
        description="Check the spec against its input schema files and print the result "
        "schema: join_result plus one payload record per stream when [output] payload is set.",
    )
    p.add_argument("--spec", type=Path, required=True, help="job spec (TOML)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Print the schema on stdout."""
    spec = load_spec(args.spec)
    sys.stdout.write(schema_text(output_schema(spec, settings.schemas_dir)))
    return 0
