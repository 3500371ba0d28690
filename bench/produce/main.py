"""`harvest bench produce`: records/s of :func:`connectors.io.producer.publish` into Kafka.

Sensor records (the ``sensor_reading`` schema) are published to a fresh topic of the
configured broker (started with ``harvest kafka up`` if none answers). Measured in the
same run, on the same records:

* ``publish`` - the full path: Avro single-object encoding + idempotent produce (target
  >= 50,000 records/s);
* ``raw_produce`` - the ceiling: produce the same records already encoded;
* ``encode_only`` - the serde's vectorized batch encoding alone, no Kafka;
* ``fastavro_encode`` - per-record encoding with fastavro (the serde's general path);
* ``avro_lib_encode`` - the baseline encoder: the official ``avro`` package (on a slice).

Each case runs ``repeats`` times; the best and median rates are reported (the machine is
shared, so the best run is the least disturbed one), together with the process CPU time
per record (all threads, librdkafka's included), which depends much less on other load.
Writes ``produce.json`` + ``produce.png``.
"""

from __future__ import annotations

import io
import os
import statistics
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from bench.kit.output import save_figure, write_json
from connectors.io.admin import delete_topics, ensure_topics
from connectors.io.producer import publish, publish_encoded
from connectors.io.producer_config import ProducerConfig, ProduceReport
from connectors.io.serde import AvroSerde
from pipeline.core.errors import KafkaUnavailableError, SerializationError
from pipeline.core.figures import new_figure
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

TARGET_RATE = 50_000.0
SCHEMA = "sensor_reading"
CASES = ("publish", "raw_produce", "encode_only", "fastavro_encode", "avro_lib_encode")


def sensor_records(n: int, streams: int = 3) -> list[dict[str, Any]]:
    """Deterministic sensor records in arrival order (values like the sensors workload)."""
    return [
        {
            "stream": f"s{1 + i % streams}",
            "seq": i // streams,
            "event_time": 1_700_000_000_000 + 10 * i - (i * 7919) % 400,
            "arrival_time": 1_700_000_000_000 + 10 * i,
            "value": ((i * 2654435761) % 10_000) / 100.0,
            "a1": (i * 31) % 97,
            "x": (i % 1000) / 10.0,
            "y": (i % 777) / 7.0,
        }
        for i in range(n)
    ]


def _ensure_broker(settings: Settings, console: Console) -> str:
    """The broker's bootstrap address; starts the local broker if none answers."""
    from connectors.io.admin import wait_for_broker

    bootstrap = settings.resolved_bootstrap()
    try:
        wait_for_broker(bootstrap, timeout=5.0, client_config=settings.kafka_client_config())
        return bootstrap
    except KafkaUnavailableError:
        if settings.bootstrap_servers:
            raise
    from connectors.launch.broker import LocalKafka
    from connectors.launch.broker_config import BrokerConfig

    console.print("no broker answered; starting the local one (harvest kafka up)")
    status = LocalKafka(BrokerConfig.from_settings(settings)).up()
    if status.bootstrap is None:
        raise KafkaUnavailableError("the local broker did not report a bootstrap address")
    return status.bootstrap


def _avro_lib_encoder(serde: AvroSerde) -> Callable[[dict[str, Any]], bytes]:
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


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Run the benchmark; returns 0 (the verdict vs. the target is in the JSON)."""
    console = Console(stderr=True)
    n = 50_000 if quick else 300_000
    repeats = 1 if quick else 3
    n_avro = min(n, 20_000)
    bootstrap = _ensure_broker(settings, console)
    serde = AvroSerde.from_dir(settings.schemas_dir)
    records = sensor_records(n)
    client_config = settings.kafka_client_config()
    # The topic exists before timing starts, so topic creation is not measured.
    config = ProducerConfig(bootstrap=bootstrap, client_config=client_config, create_topics=False)
    topic = f"{settings.topic_prefix}.bench.produce.{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [topic], client_config=client_config)
    # Quality check first: what publish writes is exactly what the serde encodes.
    encoded = serde.encode_many(SCHEMA, records)
    if serde.decode(encoded[-1]) != (SCHEMA, records[-1]):
        raise SerializationError("serde round trip changed a benchmark record")

    rates: dict[str, list[float]] = {case: [] for case in CASES}
    cpu_us: dict[str, list[float]] = {case: [] for case in CASES}
    reports: list[ProduceReport] = []
    avro_encode = _avro_lib_encoder(serde)

    def measure(case: str, count: int, fn: Callable[[], ProduceReport | None]) -> None:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = fn()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if report is not None:  # Kafka cases: from the first send to the last ack
            reports.append(report)
            count, wall = report.delivered, report.seconds
        rates[case].append(count / wall)
        cpu_us[case].append(cpu / count * 1e6)

    load_before = os.getloadavg()[0]
    try:
        with Progress(console=console, transient=True) as progress:
            for r in range(repeats):
                run_no = f"(run {r + 1}/{repeats})"
                task = progress.add_task(f"publish {run_no}", total=n)
                measure("publish", n, partial(
                    publish, records, config=config, serde=serde, schema_name=SCHEMA,
                    topic_of=lambda rec: topic, key_of=lambda rec: rec["stream"].encode(),
                    on_progress=_advance(progress, task),
                ))
                task = progress.add_task(f"raw produce {run_no}", total=n)
                messages = [(topic, rec["stream"].encode(), v)
                            for rec, v in zip(records, encoded, strict=True)]
                measure("raw_produce", n, partial(
                    publish_encoded, messages, config=config,
                    on_progress=_advance(progress, task),
                ))
                progress.add_task(f"encoders {run_no}", total=None)
                measure("encode_only", n, lambda: _ignore(serde.encode_many(SCHEMA, records)))
                measure("fastavro_encode", n,
                        lambda: _ignore([serde.encode(SCHEMA, rec) for rec in records]))
                measure("avro_lib_encode", n_avro,
                        lambda: _ignore([avro_encode(rec) for rec in records[:n_avro]]))
    finally:
        delete_topics(bootstrap, [topic], client_config=client_config)

    failed = sum(rep.failed for rep in reports)
    best = {k: max(v) for k, v in rates.items()}
    median = {k: statistics.median(v) for k, v in rates.items()}
    payload: dict[str, Any] = {
        "records": n,
        "repeats": repeats,
        "avro_lib_records": n_avro,
        "schema": SCHEMA,
        "bytes_per_record": len(encoded[0]),
        "producer_config": config.snapshot(),
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "rates_per_run": rates,
        "cpu_us_per_record_per_run": cpu_us,
        "best_records_per_s": best,
        "median_records_per_s": median,
        "median_cpu_us_per_record": {k: statistics.median(v) for k, v in cpu_us.items()},
        "publish_vs_raw_produce": best["publish"] / best["raw_produce"],
        "serde_vs_avro_lib_encode": best["encode_only"] / best["avro_lib_encode"],
        "serde_vs_fastavro_encode": best["encode_only"] / best["fastavro_encode"],
        "delivery_failures": failed,
        "target_records_per_s": TARGET_RATE,
        "target_met": best["publish"] >= TARGET_RATE and failed == 0,
    }
    path = write_json("produce", payload, results_dir)
    _plot(best, median, payload["median_cpu_us_per_record"], n, results_dir)

    table = Table(title=f"harvest bench produce ({n:,} sensor records, {repeats} runs)")
    for col in ("case", "best rec/s", "median rec/s", "CPU µs/rec"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for k in rates:
        cpu = payload["median_cpu_us_per_record"][k]
        table.add_row(k, f"{best[k]:,.0f}", f"{median[k]:,.0f}", f"{cpu:.1f}")
    Console().print(table)
    console.print(
        f"publish / raw produce = {payload['publish_vs_raw_produce']:.2f}; "
        f"serde / avro lib encode = {payload['serde_vs_avro_lib_encode']:.1f}x; "
        f"target {TARGET_RATE:,.0f} rec/s {'met' if payload['target_met'] else 'NOT met'}; "
        f"wrote {path}"
    )
    log.info("bench produce", **{k: round(v) for k, v in best.items()})
    return 0


def _plot(
    best: dict[str, float], median: dict[str, float], cpu: dict[str, float], n: int,
    results_dir: Path,
) -> None:
    fig, (rate_ax, cpu_ax) = new_figure(ncols=2, size=(12.0, 4.5))
    names = list(best)
    xs = list(range(len(names)))
    rate_ax.bar([x - 0.2 for x in xs], [best[k] for k in names], width=0.4, label="best run")
    rate_ax.bar([x + 0.2 for x in xs], [median[k] for k in names], width=0.4, label="median run")
    rate_ax.axhline(TARGET_RATE, color="red", linestyle="--", label="target 50k rec/s")
    rate_ax.set_xticks(xs, names, rotation=20)
    rate_ax.set_ylabel("records / s (wall clock)")
    rate_ax.set_title(f"{n:,} sensor_reading records, Avro single-object")
    rate_ax.legend()
    cpu_ax.bar(xs, [cpu[k] for k in names], color="tab:gray")
    cpu_ax.set_yscale("log")
    cpu_ax.set_xticks(xs, names, rotation=20)
    cpu_ax.set_ylabel("process CPU µs / record (median run, log)")
    cpu_ax.set_title("CPU cost per record (all threads)")
    save_figure(fig, "produce", results_dir)
