"""One run of `harvest bench pipeline`: its query on fresh topics, warmed up, fed by a paced
producer child, watched until idle, then measured from its topics and input dump, with
Spark's per-phase batch durations (the JVM side) and the instances' phase profile from
the metrics topic (the Python side)."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.kit.producer import start_producer
from bench.kit.profile import python_profile
from bench.kit.progress import wait_first_progress
from bench.kit.readback import read_topic
from bench.pipeline.measure import RunMeasure, cached_truth, measure
from bench.pipeline.workload import SETTLE_WINDOWS, TAIL, WARMUP, Case
from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.spec.model import Spec
from pipeline.spec.toml import with_overrides

log = get_logger(__name__)


def profiled(spec: Spec) -> Spec:
    """``spec`` with the instances' phase profile on (``[job] profile``)."""
    return with_overrides(spec, job={"profile": True})


def _run_config(case: Case, prefix: str, settings: Settings, workdir: Path,
                speedup: float) -> tuple[Any, Settings]:
    """The job config of ``case`` on the topics of ``prefix``, and settings naming them."""
    from pipeline.spark.submit import job_config

    spec = with_overrides(profiled(case.spec), job={"topic_prefix": prefix,
                                                    "speedup": speedup})
    run_settings = settings.model_copy(update={"topic_prefix": prefix})
    cfg = job_config(spec, run_settings, checkpoint=str(workdir / prefix / "checkpoint"))
    return cfg, run_settings


def _start_query(spark: Any, cfg: Any, settings: Settings) -> Any:
    from connectors.io.serde import AvroSerde
    from pipeline.spark.job import start_job

    return start_job(spark, cfg, AvroSerde.from_dir(settings.schemas_dir))


def run_case(case: Case, spark: Any, settings: Settings, workdir: Path, speedup: float,
             grace_s: float) -> RunMeasure:
    """Start the query, let it warm up, publish paced input, wait until idle, measure."""
    from pipeline.spark.submit import prepare_topics, watch

    prefix = f"bp{uuid.uuid4().hex[:8]}"
    case_dir = workdir / prefix
    case_dir.mkdir(parents=True, exist_ok=True)
    cfg, run_settings = _run_config(case, prefix, settings, workdir, speedup)
    prepare_topics(cfg, run_settings)
    start = time.monotonic()
    query = _start_query(spark, cfg, settings)
    wait_first_progress(query)
    producer = start_producer([
        *case.produce_args, "--rate", f"{case.rate:.3f}", "--speedup", f"{speedup:g}",
        "--dump", str(case_dir / "input.jsonl"), "--topic-prefix", prefix,
    ], case_dir, cfg.bootstrap)
    try:
        code = producer.wait(case.duration_s / speedup + 300.0)
        if code != 0:
            query.stop()
            raise InfraError(f"harvest produce failed; log tail:\n{producer.tail()}")
        # the input has ended: stop a run that has not caught up ``grace_s`` later
        report = watch(query, cfg, until_idle_s=8.0, log_every_s=15.0, max_s=grace_s)
    finally:
        producer.stop()
    wall = time.monotonic() - start
    log.info("bench case done", workload=case.workload, method=case.method,
             rate=round(case.rate, 1), input_rows=report.input_rows, wall_s=round(wall, 1),
             stopped=report.stopped)
    m = measure_case(case, prefix, settings, workdir, speedup, wall=wall,
                     batch_ms=report.batch_ms, stopped=report.stopped)
    return replace(m, jvm_ms={k: float(sum(v)) for k, v in report.phase_ms.items()},
                   jvm_rows=report.input_rows, stale=report.stale)


def measure_case(case: Case, prefix: str, settings: Settings, workdir: Path, speedup: float,
                 *, wall: float, batch_ms: list[float], stopped: str) -> RunMeasure:
    """Measure a finished run from its topics on the broker and its input dump."""
    cfg, run_settings = _run_config(case, prefix, settings, workdir, speedup)
    truth = cached_truth(cfg.spec.join, workdir / prefix / "input.jsonl")
    inputs = [c for s in cfg.input_topics for c in read_topic(run_settings, s)]
    results = read_topic(run_settings, cfg.output_topics[0])
    metrics = [c.record for c in read_topic(run_settings, cfg.output_topics[1])]
    m = measure(workload=case.workload, method=case.method, input_rate=case.rate,
                duration_s=case.duration_s, truth=truth, inputs=inputs, results=results,
                wall_s=wall, warmup=WARMUP, tail=TAIL,
                settle_ms=SETTLE_WINDOWS * max(case.spec.join.windows), speedup=speedup,
                batch_ms=batch_ms, stopped=stopped, topic_prefix=prefix)
    return replace(m, load=case.load, python_profile=python_profile(metrics),
                   window_s=max(case.spec.join.windows) / 1000.0)
