"""`harvest bench workloads`: how fast the workload generators make records.

Target (issue): generating 1M records takes seconds, not minutes. Measured in one run:

* ``columnar`` - :func:`connectors.workloads.generate_workload` (NumPy, arrival-sorted);
* ``records`` - the same plus conversion to Avro-ready dicts (``Workload.records``);
* ``per_tuple_baseline`` - the baseline: a plain Python loop drawing each tuple with
  ``random`` (same formulas: GrubJoin's X_i(φ) for sensors, Ji et al.'s Zipf a1 and Zipf
  delays for equi), building dicts and sorting by arrival, on a slice of the size.

Rates are records/s (best of ``repeats``); the ratio is vectorized records / baseline.
Writes ``workloads.json`` + ``workloads.png``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.kit.output import save_figure, write_json
from connectors.workloads import WorkloadSpec, ZipfDelay, generate_workload
from pipeline.core.figures import new_figure
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

D, ETA = 1000.0, 50.0


def _zipf_cdf(n: int, skew: float) -> list[float]:
    weights = [k ** -skew for k in range(1, n + 1)]
    total = sum(weights)
    return list(itertools.accumulate(w / total for w in weights))


def baseline_sensors(n_per_stream: int, rate: float, seed: int) -> list[dict[str, Any]]:
    """Per-tuple loop: X_i(φ) = (D/η)(φ + τ_i) + κ_i N(0,1) mod D, Zipf delays (skew 2)."""
    rnd = random.Random(seed)
    delay_cdf = _zipf_cdf(2001, 2.0)
    out: list[dict[str, Any]] = []
    for i, (lag, kappa) in enumerate(((0.0, 2.0), (5.0, 2.0), (15.0, 50.0))):
        for j in range(n_per_stream):
            t = math.floor(j * 1000.0 / rate)
            value = ((D / ETA) * (t / 1000.0 + lag) + kappa * rnd.gauss(0.0, 1.0)) % D
            delay = 10 * bisect.bisect_right(delay_cdf, rnd.random())
            out.append({"stream": f"s{i + 1}", "seq": j + 1, "event_time": t,
                        "arrival_time": t + delay, "value": value, "a1": int(value),
                        "x": 0.0, "y": 0.0})
    out.sort(key=lambda r: (r["arrival_time"], int(r["stream"][1:]), r["seq"]))
    return out


def baseline_equi(n_per_stream: int, rate: float, seed: int) -> list[dict[str, Any]]:
    """Per-tuple loop: a1 Zipf over [1, 100] (skew 1), Zipf delays (skew 2)."""
    rnd = random.Random(seed)
    a1_cdf = _zipf_cdf(100, 1.0)
    delay_cdf = _zipf_cdf(2001, 2.0)
    out: list[dict[str, Any]] = []
    for i in range(3):
        for j in range(n_per_stream):
            t = math.floor(j * 1000.0 / rate)
            a1 = 1 + bisect.bisect_right(a1_cdf, rnd.random())
            delay = 10 * bisect.bisect_right(delay_cdf, rnd.random())
            out.append({"stream": f"s{i + 1}", "seq": j + 1, "event_time": t,
                        "arrival_time": t + delay, "value": float(a1), "a1": a1,
                        "x": 0.0, "y": 0.0})
    out.sort(key=lambda r: (r["arrival_time"], int(r["stream"][1:]), r["seq"]))
    return out


BASELINES: dict[str, Callable[[int, float, int], list[dict[str, Any]]]] = {
    "sensors": baseline_sensors,
    "equi": baseline_equi,
}


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


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Measure every workload; print a table; write JSON + PNG."""
    del settings  # no broker or Spark needed
    total = 200_000 if quick else 1_000_000
    slice_total = 30_000 if quick else 150_000
    repeats = 1 if quick else 2
    rate = 500.0
    console = Console(stderr=True)
    rows: list[dict[str, Any]] = []
    for workload in ("sensors", "equi", "positions", "news"):
        spec = _spec(workload, total, rate)
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
                partial(_count_baseline, BASELINES[workload], per_stream, rate), repeats
            )
            row.update(
                baseline_records=base_n,
                baseline_s=base_s,
                baseline_rate=base_n / base_s,
                speedup_records_vs_baseline=(n / rec_s) / (base_n / base_s),
            )
        rows.append(row)

    table = Table(title=f"workload generation ({total:,} records, best of {repeats})")
    for col in ("workload", "columnar rec/s", "dicts rec/s", "1M dicts (s)", "baseline rec/s",
                "ratio"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r["workload"],
            f"{r['columnar_rate']:,.0f}",
            f"{r['records_rate']:,.0f}",
            f"{1e6 / r['records_rate']:.1f}",
            f"{r['baseline_rate']:,.0f}" if "baseline_rate" in r else "-",
            f"{r['speedup_records_vs_baseline']:.1f}x" if "baseline_rate" in r else "-",
        )
    console.print(table)

    write_json("workloads", {"quick": quick, "total": total, "rows": rows}, results_dir)
    fig, ax = new_figure()
    names = [r["workload"] for r in rows]
    xs = range(len(rows))
    ax.bar([x - 0.27 for x in xs], [r["columnar_rate"] for r in rows], 0.27, label="columnar")
    ax.bar(list(xs), [r["records_rate"] for r in rows], 0.27, label="columnar + dicts")
    ax.bar([x + 0.27 for x in xs], [r.get("baseline_rate", 0.0) for r in rows], 0.27,
           label="per-tuple Python baseline")
    ax.set_xticks(list(xs), names)
    ax.set_yscale("log")
    ax.set_ylabel("records / s")
    ax.set_title(f"workload generators, {total:,} records")
    ax.legend()
    save_figure(fig, "workloads", results_dir)
    return 0
