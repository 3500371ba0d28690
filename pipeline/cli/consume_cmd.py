"""`harvest consume <topic>`: print the decoded Avro records of a topic.

stdout carries data only (JSON lines or a rich table); logs, progress and the summary of
undecodable records go to stderr. In ``jsonl`` output ``bytes`` fields are base64 strings.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from connectors.io.confluent import ConfluentSerde
from connectors.io.consumer import Consumed, ConsumerConfig, Undecodable, consume
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from connectors.io.serde import AvroSerde
from pipeline.cli.args import positive_float, positive_int
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.runtime.dump import topic_serde
from pipeline.runtime.inputs import resolve_inputs, spec_registry, topic_prefix
from pipeline.spec.model import load_spec

log = get_logger(__name__)

_TABLE_CHUNK = 200  # rows per printed table, so long reads stream out
_PROGRESS_EVERY_S = 5.0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `consume` subcommand."""
    p = subparsers.add_parser(
        "consume",
        help="print the decoded Avro records of a topic",
        description="Read every partition of TOPIC and print its records decoded with the "
        "schemas in schemas/, or, for records in the Confluent wire format, with their "
        "writer schemas from the schema registry (HARVEST_SCHEMA_REGISTRY_URL or the one "
        "`harvest registry up` runs). Undecodable records are reported on stderr.",
    )
    p.add_argument("topic", help="topic name, e.g. harvest.results")
    p.add_argument(
        "--format",
        choices=["table", "jsonl"],
        default="table",
        help="table (rich, default) or jsonl (one JSON object per record; bytes as base64)",
    )
    p.add_argument("--max", type=positive_int, default=None, help="stop after N records")
    p.add_argument(
        "--from-beginning", action="store_true", help="read from the earliest offset, not the end"
    )
    p.add_argument(
        "--read-committed",
        action="store_true",
        help="isolation.level=read_committed: only records of committed transactions (the "
        "exactly-once results; stops at the last stable offset). Default: read_uncommitted",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=10.0,
        help="stop after this many seconds without a new record (default 10)",
    )
    p.add_argument(
        "--group",
        default=None,
        help="consumer group id: resume at its committed offsets and commit what is read "
        "(default: a fresh group, nothing committed)",
    )
    p.add_argument(
        "--spec",
        type=Path,
        default=None,
        help="job spec (TOML): decode its results with the generated result schema (payload "
        "fields; or JSON with [output] format = \"json\") and its [inputs] topics in their "
        "formats",
    )
    p.set_defaults(handler=run)


def _serde(args: argparse.Namespace, settings: Settings) -> AvroSerde:
    """harvest's serde (reading the Confluent wire format too when a schema registry is
    set or runs locally), or with ``--spec`` the decoder of that spec's topic."""
    serde = AvroSerde.from_dir(settings.schemas_dir)
    if args.spec is None:
        if settings.resolved_schema_registry_url() is None:
            return serde
        registry = SchemaRegistry(RegistryOptions.from_settings(settings))
        return ConfluentSerde(registry, fallback=serde)
    spec = load_spec(args.spec)
    prefix = topic_prefix(spec, settings.topic_prefix)
    spec_reg = spec_registry(spec, settings)
    plan = resolve_inputs(spec, settings.schemas_dir, prefix=prefix, registry=spec_reg)
    return topic_serde(plan, args.topic, spec.output.topics(prefix)[0], serde, spec_reg)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Consume and print; exit 0 (undecodable records are counted on stderr, not fatal)."""
    serde = _serde(args, settings)
    config = ConsumerConfig.from_settings(
        settings,
        group_id=args.group,
        from_beginning=args.from_beginning,
        max_records=args.max,
        idle_timeout_s=args.timeout,
        read_committed=args.read_committed,
    )
    items = consume([args.topic], config=config, serde=serde)
    out = sys.stdout
    try:
        if args.format == "jsonl":
            good, bad = write_jsonl(items, out)
        else:
            good, bad = write_tables(items, out)
    except BrokenPipeError:  # e.g. `harvest consume ... | head`: the reader is gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    log.info("consumed", topic=args.topic, records=good, undecodable=bad)
    return 0


def to_json_value(value: Any) -> Any:
    """A decoded Avro value as JSON-ready data: bytes become base64 strings."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: to_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json_value(v) for v in value]
    return value


def _report_bad(item: Undecodable) -> None:
    log.warning(
        "undecodable record",
        topic=item.topic,
        partition=item.partition,
        offset=item.offset,
        reason=item.reason,
    )


class _Progress:
    """A log line on stderr every few seconds while records keep coming."""

    def __init__(self) -> None:
        self._next = time.monotonic() + _PROGRESS_EVERY_S

    def tick(self, count: int) -> None:
        now = time.monotonic()
        if now >= self._next:
            log.info("consuming", records=count)
            self._next = now + _PROGRESS_EVERY_S


def write_jsonl(items: Iterable[Consumed | Undecodable], out: TextIO) -> tuple[int, int]:
    """One JSON object per decoded record; returns (records, undecodable)."""
    good = bad = 0
    progress = _Progress()
    for item in items:
        if isinstance(item, Undecodable):
            bad += 1
            _report_bad(item)
            continue
        out.write(json.dumps(to_json_value(item.record), separators=(",", ":")) + "\n")
        good += 1
        progress.tick(good)
    out.flush()
    return good, bad


def compact(value: Any) -> str:
    """A short cell text: members as ``stream#seq@event_time``, maps as ``k=v``."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and {"stream", "seq"} <= v.keys() for v in value):
            return " ".join(
                f"{v['stream']}#{v['seq']}" + (f"@{v['event_time']}" if "event_time" in v else "")
                for v in value
            )
        return "[" + ", ".join(compact(v) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k}={compact(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, bytes | bytearray):
        return value.hex() if len(value) <= 16 else value[:16].hex() + "..."
    if value is None:
        return "-"
    return str(value)


def write_tables(items: Iterable[Consumed | Undecodable], out: TextIO) -> tuple[int, int]:
    """Rich tables of up to ``_TABLE_CHUNK`` rows, one per schema run; returns counts."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, soft_wrap=False)
    good = bad = 0
    progress = _Progress()
    rows: list[dict[str, Any]] = []
    schema: str | None = None

    def flush() -> None:
        if not rows:
            return
        console.print(f"{schema} ({len(rows)} records)", style="bold", highlight=False)
        table = Table()
        for column in rows[0]:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(compact(v) for v in row.values()))
        console.print(table)
        rows.clear()

    for item in items:
        if isinstance(item, Undecodable):
            bad += 1
            _report_bad(item)
            continue
        if item.schema != schema or len(rows) >= _TABLE_CHUNK:
            flush()
            schema = item.schema
        rows.append(item.record)
        good += 1
        progress.tick(good)
    flush()
    out.flush()
    return good, bad
