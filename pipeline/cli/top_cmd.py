"""`harvest top --spec S` (or ``--metrics-topic T``): a live view of a running job.

Follows the job's metrics and results topics and reads its checkpoint; every second it
shows, per operator instance, the input and output rates, z and the harvest fractions,
K, queue drops, validation rejects, estimated recall and state size, sparklines of the
output rate and z over the last minutes, and for the query its micro-batch durations,
input rows/s and lag behind the input (end offsets minus committed offsets). ``q``
quits. ``--from-beginning`` reads a finished run from its start. Without a terminal on
stdout (or with ``--json``) it prints one JSON line per refresh instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from connectors.io.confluent import ConfluentSerde
from connectors.io.consumer import ConsumerConfig
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from connectors.io.serde import AvroSerde
from connectors.io.topics import validate_topic
from pipeline.app.top.keys import quit_keys
from pipeline.app.top.live import Target, follow
from pipeline.app.top.view import json_line, render
from pipeline.cli.args import positive_float
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings
from pipeline.runtime.dump import topic_serde
from pipeline.runtime.inputs import default_checkpoint, resolve_inputs, spec_registry, topic_prefix
from pipeline.spec.model import load_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `top` subcommand."""
    p = subparsers.add_parser(
        "top",
        help="a live view of a running job (metrics and results topics, checkpoint)",
        description="Follow a job's metrics and results topics and its checkpoint and show, "
        "per operator instance and refreshed every second, rates, z and the harvest "
        "configuration, K, queue drops, validation rejects, estimated recall and state size, "
        "with the query's micro-batch durations and lag. q quits. Without a terminal: one "
        "JSON line per refresh.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--spec", type=Path, help="the job's spec: its topics and checkpoint")
    what.add_argument("--metrics-topic", default=None, metavar="T",
                      help="follow this metrics topic (no spec)")
    p.add_argument("--results-topic", default=None, metavar="T",
                   help="with --metrics-topic: the results topic (default: T's prefix + "
                   ".results when T ends in .metrics)")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="the job's checkpoint, for micro-batch durations and lag (default "
                   "with --spec: the one `harvest submit --spec` uses)")
    p.add_argument("--topic-prefix", default=None,
                   help="with --spec: topic prefix (default: [job] topic_prefix, else "
                   "HARVEST_TOPIC_PREFIX)")
    p.add_argument("--from-beginning", action="store_true",
                   help="read the topics from their start (a finished run), not from now")
    p.add_argument("--refresh", type=positive_float, default=1.0, metavar="S",
                   help="seconds between refreshes (default 1)")
    p.add_argument("--duration", type=positive_float, default=None, metavar="S",
                   help="stop after S seconds (default: until q or Ctrl-C)")
    p.add_argument("--json", action="store_true",
                   help="one JSON line per refresh even on a terminal")
    p.set_defaults(handler=run)


def _harvest_serde(settings: Settings) -> AvroSerde:
    """harvest's schemas, and the Confluent format when a registry is known."""
    serde = AvroSerde.from_dir(settings.schemas_dir)
    if settings.resolved_schema_registry_url() is None:
        return serde
    return ConfluentSerde(SchemaRegistry(RegistryOptions.from_settings(settings)),
                          fallback=serde)


def spec_target(args: argparse.Namespace, settings: Settings) -> Target:
    """The topics, decoders and checkpoint of ``--spec`` (as `harvest submit` resolves
    them)."""
    spec = load_spec(args.spec)
    prefix = args.topic_prefix or topic_prefix(spec, settings.topic_prefix)
    results, metrics, _ = spec.output.topics(prefix)
    registry = spec_registry(spec, settings)
    plan = resolve_inputs(spec, settings.schemas_dir, prefix=prefix, registry=registry)
    serdes = {t: topic_serde(plan, t, results, AvroSerde.from_dir(settings.schemas_dir),
                             registry) for t in (results, metrics)}
    checkpoint = args.checkpoint or spec.job.checkpoint or str(
        default_checkpoint(spec, settings.cache_dir, prefix, spec.job.mode))
    return Target(metrics, results, checkpoint, serdes,
                  title=f"harvest top: {Path(args.spec).stem} ({prefix})")


def topic_target(args: argparse.Namespace, settings: Settings) -> Target:
    """``--metrics-topic T`` (and its results topic) with harvest's schemas."""
    metrics = validate_topic(args.metrics_topic)
    results = args.results_topic
    if results is None and metrics.endswith(".metrics"):
        results = metrics.removesuffix(".metrics") + ".results"
    serde = _harvest_serde(settings)
    serdes = {metrics: serde, **({results: serde} if results else {})}
    return Target(metrics, results, args.checkpoint, serdes, title=f"harvest top: {metrics}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Follow until q, Ctrl-C or ``--duration``."""
    if args.spec is None and args.topic_prefix is not None:
        raise ConfigError("--topic-prefix: only with --spec")
    if args.spec is not None and args.results_topic is not None:
        raise ConfigError("--results-topic: only with --metrics-topic (a spec names it)")
    target = spec_target(args, settings) if args.spec is not None else topic_target(
        args, settings)
    config = ConsumerConfig.from_settings(settings, from_beginning=args.from_beginning)
    if args.json or not sys.stdout.isatty():
        def show_json(snap: dict[str, object]) -> None:
            print(json_line(snap), flush=True)

        with quit_keys() as wait:
            follow(target, config, show_json, wait, refresh_s=args.refresh,
                   duration_s=args.duration)
        return 0
    from rich.console import Console
    from rich.live import Live

    console = Console()
    with Live(console=console, auto_refresh=False, transient=False) as live, \
            quit_keys() as wait:
        follow(target, config, lambda snap: live.update(render(snap, target.title),
                                                        refresh=True),
               wait, refresh_s=args.refresh, duration_s=args.duration)
    return 0
