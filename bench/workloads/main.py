"""The run of `harvest bench workloads` (the package docstring says what it measures): each
generator timed, best of ``repeats``, then the table, ``workloads.json`` and the PNG."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.kit.output import write_json
from bench.workloads.baselines import BASELINES
from bench.workloads.report import plot, print_table
from connectors.workloads import WorkloadSpec, ZipfDelay, generate_workload
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)
RATE = 500.0


def _best(fn: Callable[[], int], repeats: int) -> tuple[float, int]:
    best, count = math.inf, 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def _count_columnar(spec: WorkloadSpec) -> int:
    return len(generate_workload(spec))


def _count_records(spec: WorkloadSpec) -> int:
    return len(generate_workload(spec).records())


def _count_baseline(
    fn: Callable[[int, float, int], list[dict[str, Any]]], per_stream: int, rate: float
) -> int:
    return len(fn(per_stream, rate, 1))


def _spec(workload: str, total: int, rate: float) -> WorkloadSpec:
    lags = {"lags_s": (0.0, 5.0, 15.0)} if workload in ("sensors", "news") else {}
    kappas = {"kappas": (2.0, 2.0, 50.0)} if workload == "sensors" else {}
    return WorkloadSpec(
        workload,  # type: ignore[arg-type]
        streams=3,
        rates=(rate,),
        duration_s=total / 3 / rate,
        disorder=(ZipfDelay(20_000, 2.0),),
        seed=1,
        **lags,  # type: ignore[arg-type]
        **kappas,  # type: ignore[arg-type]
    )


def _row(workload: str, total: int, slice_total: int, repeats: int) -> dict[str, Any]:
    """One workload's rates: columnar, with dicts, and the baseline's on a slice."""
    spec = _spec(workload, total, RATE)
    log.info("bench workloads", workload=workload, records=total, step="columnar")
    col_s, n = _best(partial(_count_columnar, spec), repeats)
    log.info("bench workloads", workload=workload, records=total, step="records")
    rec_s, _ = _best(partial(_count_records, spec), repeats)
    row: dict[str, Any] = {
        "workload": workload,
        "records": n,
        "columnar_s": col_s,
        "records_s": rec_s,
        "columnar_rate": n / col_s,
        "records_rate": n / rec_s,
    }
    if workload in BASELINES:
        per_stream = slice_total // 3
        log.info("bench workloads", workload=workload, records=slice_total, step="baseline")
        base_s, base_n = _best(
            partial(_count_baseline, BASELINES[workload], per_stream, RATE), repeats
        )
        row.update(
            baseline_records=base_n,
            baseline_s=base_s,
            baseline_rate=base_n / base_s,
            speedup_records_vs_baseline=(n / rec_s) / (base_n / base_s),
        )
    return row


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Measure every workload; print a table; write JSON + PNG."""
    del settings  # no broker or Spark needed
    total = 200_000 if quick else 1_000_000
    slice_total = 30_000 if quick else 150_000
    repeats = 1 if quick else 2
    rows = [_row(workload, total, slice_total, repeats)
            for workload in ("sensors", "equi", "positions", "news")]
    print_table(rows, total, repeats)
    write_json("workloads", {"quick": quick, "total": total, "rows": rows}, results_dir)
    plot(rows, total, results_dir)
    return 0
