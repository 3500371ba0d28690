"""`harvest dump --spec S --output DUMP.jsonl`: the spec's input topics as a dump file.

Reads every input topic of the spec from the beginning to its end — the ``[inputs]``
topics, or harvest's own ``<prefix>.in.<workload>.<stream>`` — and writes one JSON line
per tuple: ``stream``, ``seq``, ``event_time``, ``arrival_time``, ``partition``, ``offset``,
the predicate's attributes (``[join] attribute`` or ``x``/``y``) and ``payload``. That
file is what `harvest join` and `harvest oracle` take with the same spec. Records the job
would dead-letter are left out and counted on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from connectors.io.consumer import ConsumerConfig
from connectors.io.serde import AvroSerde
from pipeline.cli.args import positive_float
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.runtime.dump import dump_inputs
from pipeline.runtime.inputs import resolve_inputs, spec_registry, topic_prefix
from pipeline.spec.model import load_spec

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `dump` subcommand."""
    p = subparsers.add_parser(
        "dump",
        help="read the spec's input topics into a dump (for harvest join / oracle)",
        description="Read the spec's input topics from the beginning and write one JSON "
        "line per tuple (stream, seq, event_time, arrival_time, partition, offset, the "
        "predicate's attributes, payload), as `harvest join` and `harvest oracle` take it.",
    )
    p.add_argument("--spec", type=Path, required=True, help="job spec (TOML)")
    p.add_argument("--output", type=Path, required=True, help="dump (JSON lines)")
    p.add_argument("--timeout", type=positive_float, default=10.0,
                   help="stop reading a topic after this many seconds without a new record "
                   "(default 10; it stops at the topic's end anyway)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Resolve the inputs, read them, write the dump; print a JSON summary line."""
    spec = load_spec(args.spec)
    registry = spec_registry(spec, settings)
    plan = resolve_inputs(spec, settings.schemas_dir,
                          prefix=topic_prefix(spec, settings.topic_prefix), registry=registry)
    config = ConsumerConfig.from_settings(settings, from_beginning=True, until_end=True,
                                          idle_timeout_s=args.timeout)
    report = dump_inputs(plan, config, AvroSerde.from_dir(settings.schemas_dir), args.output,
                         registry=registry)
    for reason in report.reasons:
        log.warning("record left out", reason=reason)
    print(json.dumps({**report.to_json(), "output": str(args.output)}), flush=True)
    return 0

