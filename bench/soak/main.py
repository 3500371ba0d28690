"""The run of `harvest bench soak` (the package docstring says what it measures): plan,
start the query and the producer, sample until the minutes are up, report."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from bench.kit.broker import kafka_up
from bench.kit.output import write_json
from bench.kit.producer import start_producer
from bench.kit.progress import wait_first_progress
from bench.kit.spark import spark_session
from bench.soak.plan import Soak, minutes_of, plan, soak_session
from bench.soak.report import payload, plot
from bench.soak.rows import Samples
from bench.soak.sampling import (
    fold_progress,
    minute_note,
    sample_native,
    sample_processes,
    state_tuples,
)
from pipeline.core.errors import InfraError
from pipeline.core.procs import Child
from pipeline.core.settings import Settings

SAMPLE_EVERY_S = 5.0


def _watch(soak: Soak, query: Any, producer: Child, samples: Samples, seen: set[int],
           t0: float, t0_wall_ms: float) -> None:
    """Sample every ``SAMPLE_EVERY_S`` until the minutes are up; a line per minute."""
    end = t0 + 60.0 * soak.minutes
    next_note = t0 + 60.0
    while time.monotonic() < end:
        if not query.isActive:
            raise InfraError(f"the soak query stopped: {query.exception()}")
        if not producer.running():
            raise InfraError(f"harvest produce exited early:\n{producer.tail()}")
        now = time.monotonic()
        sample_processes(samples, now - t0)
        fold_progress(query.recentProgress, seen, t0_wall_ms, samples)
        if now >= next_note:
            sample_native(samples, now - t0)
            print(minute_note(samples, now - t0, soak.minutes), flush=True)
            next_note += 60.0
        time.sleep(SAMPLE_EVERY_S)
    fold_progress(query.recentProgress, seen, t0_wall_ms, samples)
    query.stop()


def _soak(soak: Soak, spark: Any, samples: Samples) -> float:
    """Run the query and the producer for the soak's minutes, sampling; returns the wall
    time (ms) the input started at."""
    from connectors.io.serde import AvroSerde
    from pipeline.spark.job import start_job

    seen: set[int] = set()
    producer: Child | None = None
    try:
        query = start_job(spark, soak.cfg, AvroSerde.from_dir(soak.settings.schemas_dir))
        wait_first_progress(query)
        seen.update(p.batchId for p in query.recentProgress)
        producer = start_producer(soak.producer_args(), soak.workdir, soak.cfg.bootstrap)
        t0 = time.monotonic()
        t0_wall_ms = time.time() * 1000.0
        _watch(soak, query, producer, samples, seen, t0, t0_wall_ms)
    finally:
        if producer is not None:
            producer.stop()
    return t0_wall_ms


def run(quick: bool, results_dir: Path, settings: Settings,
        minutes: float | None = None, *, method: str = "grubjoin",
        capacity: Any = None, name: str = "soak") -> int:
    """Benchmark entry point (see the package docstring). For experiments (not the CLI):
    ``method`` — another shedder in the same conditions, ``capacity`` — a
    :class:`~pipeline.app.capacity.Capacity` measured before (not calibrated again),
    ``name`` — the results' file name."""
    n_minutes = minutes_of(quick, minutes)
    load_start = os.getloadavg()
    settings = kafka_up(settings)
    soak = plan(quick, n_minutes, method, capacity, settings)
    print(f"capacity: {soak.capacity.describe()}; soak at {soak.rate:.0f}/s per stream for "
          f"{n_minutes} min", flush=True)
    session = soak_session(settings)
    samples = Samples()
    with spark_session(session) as spark:
        t0_wall_ms = _soak(soak, spark, samples)
    state_tuples(soak.settings, soak.cfg.output_topics[1], t0_wall_ms, samples)
    body = payload(soak, samples, session, load_start)
    write_json(name, body, results_dir)
    plot(body["rows"], results_dir, name)
    print(json.dumps({k: body[k] for k in ("state_growth", "rss_growth", "output_drift",
                                           "targets_met")}, default=str))
    return 0
