"""``harvest dump``: read the spec's input topics from the beginning into a dump file.

One JSON line per tuple with the dump keys (``stream``, ``seq``, ``event_time``,
``arrival_time``, ``partition``, ``offset``), the predicate's attributes under their
``[join]`` names and the payload fields under ``payload`` — what ``harvest join`` and
``harvest oracle`` take, so the job's recall can be checked on the user's own data.
Records the job would dead-letter are left out and counted (with the first reasons).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.io.admin import list_topic_names
from connectors.io.avsc import strip_logical
from connectors.io.confluent import FORMAT as CONFLUENT
from connectors.io.confluent import ConfluentSerde
from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.foreign import ForeignSerde, JsonResultSerde
from connectors.io.registry_client import SchemaRegistry
from connectors.io.serde import AvroSerde
from pipeline.core.errors import ConfigError, SerializationError, TopicError
from pipeline.core.jsonl import write_jsonl
from pipeline.core.logging import get_logger
from pipeline.runtime.inputs import InputPlan, StreamPlan
from pipeline.runtime.tuples import to_tuple

log = get_logger(__name__)
_KEEP_REASONS = 5


@dataclass
class DumpReport:
    """Tuples written and records left out, per stream."""

    tuples: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"tuples": sum(self.tuples.values()), "rejected": sum(self.rejected.values()),
                "per_stream": {s: {"tuples": self.tuples[s], "rejected": self.rejected[s]}
                               for s in sorted(set(self.tuples) | set(self.rejected))},
                "reasons": self.reasons}


def stream_serde(plan: StreamPlan, serde: AvroSerde,
                 registry: SchemaRegistry | None = None) -> AvroSerde:
    """The decoder of one input topic: harvest's serde for its own topics; for
    ``avro-confluent`` the registry's writers resolved into the plan's reader."""
    if plan.own:
        return serde
    if plan.format == CONFLUENT:
        if registry is None:
            raise ConfigError(f"inputs.{plan.stream}.format: {CONFLUENT!r} needs a Schema "
                              "Registry (HARVEST_SCHEMA_REGISTRY_URL)")
        return ConfluentSerde(registry, reader=plan.schema, plain=True)
    return ForeignSerde(plan.format, plan.schema)


def topic_serde(plan: InputPlan, topic: str, results_topic: str, serde: AvroSerde,
                registry: SchemaRegistry | None = None) -> AvroSerde:
    """The decoder of any topic of the spec (``harvest consume --spec``): its input
    format for an input topic, the generated result schema (or JSON) for the results,
    harvest's own schemas for the rest (metrics, dead letters); the Confluent format
    for every output topic of ``[output] format = "avro-confluent"``."""
    for stream in plan.streams:
        if stream.topic == topic:
            return stream_serde(stream, serde, registry)
    if topic == results_topic and plan.output_format == "json":
        return JsonResultSerde()
    if plan.output_format == CONFLUENT and registry is not None:
        # logical types not applied, as for the other formats (a timestamp stays a long)
        return ConfluentSerde(registry, fallback=serde, plain=True)
    serde.register(strip_logical(plan.output_schema), current=True)
    return serde


def read_stream(plan: StreamPlan, config: ConsumerConfig, serde: AvroSerde,
                report: DumpReport, registry: SchemaRegistry | None = None
                ) -> list[dict[str, Any]]:
    """Every tuple of one input topic (rejected records counted in ``report``)."""
    rows: list[dict[str, Any]] = []
    decoder = stream_serde(plan, serde, registry)
    for item in consume([plan.topic], config=config, serde=decoder):
        try:
            if not isinstance(item, Consumed):
                raise SerializationError(item.reason)
            rows.append(to_tuple(plan, item.record, item.partition, item.offset,
                                 item.timestamp_ms))
        except SerializationError as exc:
            report.rejected[plan.stream] += 1
            if len(report.reasons) < _KEEP_REASONS:
                report.reasons.append(f"{item.topic}/{item.partition}@{item.offset}: {exc}")
            log.debug("record left out", topic=item.topic, partition=item.partition,
                      offset=item.offset, reason=str(exc))
            continue
        report.tuples[plan.stream] += 1
    return rows


def dump_inputs(plan: InputPlan, config: ConsumerConfig, serde: AvroSerde,
                output: Path, registry: SchemaRegistry | None = None) -> DumpReport:
    """Read every input topic to its end and write the tuples in arrival order."""
    present = list_topic_names(config.bootstrap, config.client_config,
                               timeout=config.connect_timeout_s)
    missing = [t for t in plan.topics if t not in present]
    if missing:
        raise TopicError(f"input topic(s) {missing} do not exist on {config.bootstrap}")
    report = DumpReport()
    rows: list[dict[str, Any]] = []
    for stream in plan.streams:
        rows += read_stream(stream, config, serde, report, registry)
    order = {s.stream: s.index for s in plan.streams}
    rows.sort(key=lambda r: (r["arrival_time"], order[r["stream"]], r["seq"]))
    write_jsonl(output, rows)
    return report
