"""One query of `harvest bench delivery` on fresh topics: start it, let it warm up,
publish, wait until idle, read its results back."""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.delivery.measures import Run
from bench.delivery.readback import LiveReader, latencies, percentile, result_counts
from bench.delivery.workload import DRAIN_OFFSETS, EPSILON, PACED_EPSILON, spec
from bench.kit.progress import wait_first_progress
from pipeline.core.settings import Settings


def _publish(settings: Settings, prefix: str, records: Sequence[dict[str, Any]],
             paced: bool) -> None:
    from connectors.io.producer import publish
    from connectors.io.producer_config import Pacing, ProducerConfig
    from connectors.io.serde import AvroSerde
    from connectors.io.topics import input_topic

    report = publish(
        records, config=ProducerConfig.from_settings(settings),
        serde=AvroSerde.from_dir(settings.schemas_dir), schema_name="sensor_reading",
        topic_of=lambda r: input_topic(prefix, "sensors", str(r["stream"])),
        key_of=lambda r: str(r["stream"]).encode(),
        pace=Pacing(speedup=1.0) if paced else None)
    report.raise_on_failure()


def _start(spark: Any, settings: Settings, workdir: Path, phase: str, delivery: str,
           slack_ms: int) -> tuple[Any, Any, Settings]:
    """The query of one run on fresh topics, past its first (empty) micro-batch; its job
    config and the settings naming its topics."""
    from connectors.io.serde import AvroSerde
    from pipeline.spark.job import start_job
    from pipeline.spark.submit import job_config, prepare_topics

    prefix = f"bd{uuid.uuid4().hex[:8]}"
    paced = phase == "paced"
    job_spec = spec(delivery, prefix, slack_ms, None if paced else DRAIN_OFFSETS,
                    PACED_EPSILON if paced else EPSILON)
    run_settings = settings.model_copy(update={"topic_prefix": prefix})
    cfg = job_config(job_spec, run_settings, checkpoint=str(workdir / prefix / "checkpoint"))
    prepare_topics(cfg, run_settings)
    query = start_job(spark, cfg, AvroSerde.from_dir(settings.schemas_dir))
    wait_first_progress(query)
    return query, cfg, run_settings


def _transactions(run: Run, query: Any) -> None:
    """Exactly-once: the run's transaction and commit times (the driver's writer)."""
    from pipeline.spark import job as job_module

    writer = job_module.WRITERS.pop(str(query.id), None)
    if writer is None:
        return
    writer.close()
    if writer.writes:
        run.transactions = len(writer.writes)
        run.txn_ms_p50 = round(1000 * statistics.median(w.seconds for w in writer.writes), 2)
        run.commit_ms_p50 = round(
            1000 * statistics.median(w.commit_seconds for w in writer.writes), 2)


def run_query(spark: Any, settings: Settings, workdir: Path, phase: str, delivery: str,
              records: list[dict[str, Any]], truth: set[str], slack_ms: int) -> Run:
    """One query on fresh topics: start it, let it warm up, publish, wait until idle."""
    from pipeline.spark.submit import watch

    start = time.monotonic()
    query, cfg, run_settings = _start(spark, settings, workdir, phase, delivery, slack_ms)
    prefix, paced = run_settings.topic_prefix, phase == "paced"
    reader = LiveReader(run_settings, cfg.output_topics[0]) if paced else None
    if reader is not None:
        reader.start()
    publisher = threading.Thread(target=_publish, args=(run_settings, prefix, records, paced),
                                 daemon=True)
    publisher.start()
    publisher.join()
    report = watch(query, cfg, until_idle_s=8.0, log_every_s=15.0, max_s=900.0)
    wall = time.monotonic() - start
    run = Run(phase=phase, delivery=delivery, input_records=report.input_rows, results=0,
              true_results=len(truth), equals_oracle=False, duplicates=0,
              batches=report.batches, wall_s=round(wall, 1),
              batch_ms_p50=percentile(report.batch_ms, 0.5), topic_prefix=prefix,
              extra={"stopped": report.stopped})
    _transactions(run, query)
    if reader is not None:
        reader.join(timeout=120.0)
        if reader.error is not None:
            raise reader.error
    got = result_counts(run_settings, cfg.output_topics[0])
    run.results, run.equals_oracle = len(got), set(got) == truth
    run.duplicates = sum(got.values()) - len(got)
    busy_s = sum(report.batch_ms) / 1000.0
    if not paced and busy_s > 0:
        run.throughput = round(report.input_rows / busy_s, 1)
        run.results_per_s = round(sum(got.values()) / busy_s, 1)
    if reader is not None:
        latencies(run, reader.seen, run_settings, cfg.input_topics)
    return run
