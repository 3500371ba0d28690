"""The run of `harvest bench produce`: a fresh topic on the broker, the records checked
through the serde, every case ``repeats`` times, the report."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from bench.kit.broker import answering_broker
from bench.kit.output import write_json
from bench.produce.cases import Inputs, Timings, avro_lib_encoder, time_encoders, time_kafka_cases
from bench.produce.report import payload, plot, print_report
from bench.produce.workload import SCHEMA, sensor_records
from connectors.io.admin import delete_topics, ensure_topics
from connectors.io.producer_config import ProducerConfig
from connectors.io.serde import AvroSerde
from pipeline.core.errors import SerializationError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger("bench.produce")


def _inputs(n: int, bootstrap: str, settings: Settings) -> Inputs:
    """The records and their encoding (checked: what publish writes is exactly what the
    serde encodes), and a topic created before timing starts (not measured)."""
    serde = AvroSerde.from_dir(settings.schemas_dir)
    records = sensor_records(n)
    client_config = settings.kafka_client_config()
    config = ProducerConfig(bootstrap=bootstrap, client_config=client_config, create_topics=False)
    topic = f"{settings.topic_prefix}.bench.produce.{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [topic], client_config=client_config)
    encoded = serde.encode_many(SCHEMA, records)
    if serde.decode(encoded[-1]) != (SCHEMA, records[-1]):
        raise SerializationError("serde round trip changed a benchmark record")
    return Inputs(records, encoded, serde, config, topic, min(n, 20_000))


def _time_cases(inputs: Inputs, repeats: int, console: Console) -> Timings:
    """Every case, ``repeats`` times in turn."""
    timings = Timings()
    avro_encode = avro_lib_encoder(inputs.serde)
    with Progress(console=console, transient=True) as progress:
        for r in range(repeats):
            label = f"(run {r + 1}/{repeats})"
            time_kafka_cases(inputs, timings, progress, label)
            progress.add_task(f"encoders {label}", total=None)
            time_encoders(inputs, timings, avro_encode)
    return timings


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Run the benchmark; returns 0 (the verdict vs. the target is in the JSON)."""
    console = Console(stderr=True)
    n = 50_000 if quick else 300_000
    repeats = 1 if quick else 3
    bootstrap = answering_broker(settings, console.print)
    inputs = _inputs(n, bootstrap, settings)
    load_before = os.getloadavg()[0]
    try:
        timings = _time_cases(inputs, repeats, console)
    finally:
        delete_topics(bootstrap, [inputs.topic], client_config=settings.kafka_client_config())
    body = payload(inputs, timings, repeats,
                   {"before": load_before, "after": os.getloadavg()[0]})
    path = write_json("produce", body, results_dir)
    plot(body, results_dir)
    print_report(body, path, console)
    log.info("bench produce", **{k: round(v) for k, v in body["best_records_per_s"].items()})
    return 0
