"""The run of `harvest bench pipeline` (the package docstring says what it measures):
the broker, the capacity, one Spark session for the sweep's cases, the JSON rewritten after
every case; and ``--only remeasure``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.kit.broker import kafka_up
from bench.kit.output import write_json
from bench.kit.spark import session_config, spark_session
from bench.pipeline.measure import RunMeasure
from bench.pipeline.plot import plot
from bench.pipeline.report import payload, progress_line, publish
from bench.pipeline.runs import measure_case, run_case
from bench.pipeline.workload import (
    DURATION_S,
    EQUI_DURATION_S,
    SPEEDUP,
    TRIGGER_MS,
    Case,
    cases,
    equi_spec,
    measure_capacity,
    sensor_spec,
)
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.settings import Settings

#: a run still behind this long after its input ended is stopped
GRACE_S = 60.0


def _remeasure_row(row: dict[str, Any], old: dict[str, Any], settings: Settings,
                   workdir: Path) -> RunMeasure:
    """One row of the old JSON measured again; what only the run saw is kept."""
    prefix = str(row["topic_prefix"])
    equi = row["workload"] == "equi"
    case = Case(row["workload"], row["method"], float(row["input_rate"]),
                equi_spec() if equi else sensor_spec(row["method"], settings), (),
                EQUI_DURATION_S if equi else float(old["duration_s"]))
    m = measure_case(case, prefix, settings, workdir, float(old["speedup"]),
                     wall=float(row["wall_s"]), batch_ms=[],
                     stopped=str(row.get("stopped", "")))
    print(f"re-measured {case.workload} {case.method} at {case.rate:.0f}/s ({prefix})",
          flush=True)
    return replace(m, batch_ms_p50=row.get("batch_ms_p50"),
                   batch_ms_max=row.get("batch_ms_max"))


def remeasure(results_dir: Path, settings: Settings) -> int:
    """``--only remeasure``: measure the runs of the existing ``pipeline.json`` again from
    their topics (``topic_prefix`` of each row; the broker keeps them) and input dumps,
    with this package's measures; what only the run itself saw (wall time, micro-batch
    durations, why it stopped) is kept from the row."""
    old = json.loads((results_dir / "pipeline.json").read_text())
    for row in old["rows"]:
        if not row.get("topic_prefix"):
            raise InfraError(f"bench pipeline: row {row['workload']}/{row['method']} at "
                             f"{row['input_rate']:.0f}/s names no topic_prefix to re-measure")
    settings = kafka_up(settings)
    workdir = settings.cache_dir / "bench-pipeline"
    rows = [_remeasure_row(row, old, settings, workdir) for row in old["rows"]]
    body = payload(rows, old["capacity"], bool(old["quick"]), float(old["speedup"]),
                   float(old["duration_s"]), int(old["trigger_ms"]), settings)
    body["remeasured"] = True
    return publish(rows, body, results_dir)


def _write_partial(rows: list[RunMeasure], cap: Any, quick: bool, of: int,
                   settings: Settings, results_dir: Path) -> None:
    """What is done so far, should the rest not finish (marked ``partial``)."""
    body = payload(rows, cap.snapshot(), quick, SPEEDUP, DURATION_S, TRIGGER_MS, settings)
    body["partial"] = f"{len(rows)} of {of} runs done"
    body["note"] = f"PARTIAL ({len(rows)} of {of} runs): {body['note']}"
    write_json("pipeline", body, results_dir)
    plot(rows, results_dir, cap.capacity_rate)


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Benchmark entry point (see the package docstring); ``only="remeasure"``: see
    :func:`remeasure`."""
    if only is not None:
        if only != "remeasure":
            raise ConfigError(f"--only: bench pipeline takes 'remeasure', got {only!r}")
        return remeasure(results_dir, settings)
    settings = kafka_up(settings)
    cap = measure_capacity(settings)
    print(f"capacity: {cap.describe()}", flush=True)
    workdir = settings.cache_dir / "bench-pipeline"
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[RunMeasure] = []
    todo = cases(quick, cap.capacity_rate, DURATION_S, settings)
    config = session_config(settings, "harvest-bench-pipeline")
    with spark_session(config) as spark:
        for i, case in enumerate(todo, 1):
            print(f"[bench pipeline {i}/{len(todo)}] {case.workload} {case.method} "
                  f"at {case.rate:.0f}/s per stream", flush=True)
            rows.append(run_case(case, spark, settings, workdir, SPEEDUP, GRACE_S))
            print(progress_line(rows[-1]), flush=True)
            if i < len(todo):
                _write_partial(rows, cap, quick, len(todo), settings, results_dir)
    return publish(rows, payload(rows, cap.snapshot(), quick, SPEEDUP, DURATION_S,
                                 TRIGGER_MS, settings), results_dir)
