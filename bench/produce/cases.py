"""The cases `harvest bench produce` times on the same records: the full publish path, the
raw produce ceiling, and three encoders (the serde's batch and per-record paths, the
official ``avro`` package as the baseline)."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rich.progress import Progress, TaskID

from bench.produce.workload import SCHEMA
from connectors.io.producer import publish, publish_encoded
from connectors.io.producer_config import ProducerConfig, ProduceReport
from connectors.io.serde import AvroSerde

CASES = ("publish", "raw_produce", "encode_only", "fastavro_encode", "avro_lib_encode")


@dataclass
class Timings:
    """Per case, each run's records/s (wall) and process CPU µs per record; the Kafka
    cases' delivery reports."""

    rates: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CASES})
    cpu_us: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CASES})
    reports: list[ProduceReport] = field(default_factory=list)

    def measure(self, case: str, count: int, fn: Callable[[], ProduceReport | None]) -> None:
        """Time ``fn`` (``count`` records); a Kafka case counts from its first send to its
        last ack (its report)."""
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = fn()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if report is not None:
            self.reports.append(report)
            count, wall = report.delivered, report.seconds
        self.rates[case].append(count / wall)
        self.cpu_us[case].append(cpu / count * 1e6)


@dataclass(frozen=True)
class Inputs:
    """What every run of the cases uses: records, their encoding, the topic, the config."""

    records: list[dict[str, Any]]
    encoded: list[bytes]
    serde: AvroSerde
    config: ProducerConfig
    topic: str
    n_avro: int  # records the slow baseline encoder runs on


def avro_lib_encoder(serde: AvroSerde) -> Callable[[dict[str, Any]], bytes]:
    """The baseline encoder: the official ``avro`` package, with the serde's header."""
    import avro.io
    import avro.schema

    schema = avro.schema.parse(serde.schema_json(SCHEMA))
    writer = avro.io.DatumWriter(schema)
    header = serde.header(SCHEMA)

    def encode(record: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        buf.write(header)
        writer.write(record, avro.io.BinaryEncoder(buf))
        return buf.getvalue()

    return encode


def _advance(progress: Progress, task: TaskID) -> Callable[[int], None]:
    def advance(k: int) -> None:
        progress.advance(task, k)

    return advance


def _ignore(_: object) -> None:
    """Discard a benchmark case's output (it was checked before timing)."""


def time_kafka_cases(inputs: Inputs, timings: Timings, progress: Progress, label: str) -> None:
    """``publish`` and ``raw_produce`` of the records, once each."""
    records, topic, n = inputs.records, inputs.topic, len(inputs.records)
    task = progress.add_task(f"publish {label}", total=n)
    timings.measure("publish", n, partial(
        publish, records, config=inputs.config, serde=inputs.serde, schema_name=SCHEMA,
        topic_of=lambda rec: topic, key_of=lambda rec: rec["stream"].encode(),
        on_progress=_advance(progress, task),
    ))
    task = progress.add_task(f"raw produce {label}", total=n)
    messages = [(topic, rec["stream"].encode(), v)
                for rec, v in zip(records, inputs.encoded, strict=True)]
    timings.measure("raw_produce", n, partial(
        publish_encoded, messages, config=inputs.config, on_progress=_advance(progress, task),
    ))


def time_encoders(inputs: Inputs, timings: Timings,
                  avro_encode: Callable[[dict[str, Any]], bytes]) -> None:
    """The three encoders without Kafka, once each."""
    records, serde, n = inputs.records, inputs.serde, len(inputs.records)
    timings.measure("encode_only", n, lambda: _ignore(serde.encode_many(SCHEMA, records)))
    timings.measure("fastavro_encode", n,
                    lambda: _ignore([serde.encode(SCHEMA, rec) for rec in records]))
    timings.measure("avro_lib_encode", inputs.n_avro,
                    lambda: _ignore([avro_encode(rec) for rec in records[:inputs.n_avro]]))
