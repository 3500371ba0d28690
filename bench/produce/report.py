"""What `harvest bench produce` reports: ``produce.json`` (best and median rates, CPU per
record, the ratios, the target), the printed table and ``produce.png``."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.kit.output import save_figure
from bench.produce.cases import Inputs, Timings
from bench.produce.workload import SCHEMA
from pipeline.core.figures import new_figure

TARGET_RATE = 50_000.0


def payload(inputs: Inputs, timings: Timings, repeats: int,
            load_average: dict[str, float]) -> dict[str, Any]:
    """The JSON body (``produce.json``'s keys)."""
    rates, cpu_us = timings.rates, timings.cpu_us
    failed = sum(rep.failed for rep in timings.reports)
    best = {k: max(v) for k, v in rates.items()}
    return {
        "records": len(inputs.records),
        "repeats": repeats,
        "avro_lib_records": inputs.n_avro,
        "schema": SCHEMA,
        "bytes_per_record": len(inputs.encoded[0]),
        "producer_config": inputs.config.snapshot(),
        "load_average_1min": load_average,
        "rates_per_run": rates,
        "cpu_us_per_record_per_run": cpu_us,
        "best_records_per_s": best,
        "median_records_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "median_cpu_us_per_record": {k: statistics.median(v) for k, v in cpu_us.items()},
        "publish_vs_raw_produce": best["publish"] / best["raw_produce"],
        "serde_vs_avro_lib_encode": best["encode_only"] / best["avro_lib_encode"],
        "serde_vs_fastavro_encode": best["encode_only"] / best["fastavro_encode"],
        "delivery_failures": failed,
        "target_records_per_s": TARGET_RATE,
        "target_met": best["publish"] >= TARGET_RATE and failed == 0,
    }


def print_report(body: dict[str, Any], path: Path, console: Console) -> None:
    """The table of the cases (stdout) and the ratios and verdict (``console``)."""
    n, best = body["records"], body["best_records_per_s"]
    median, cpu = body["median_records_per_s"], body["median_cpu_us_per_record"]
    table = Table(title=f"harvest bench produce ({n:,} sensor records, {body['repeats']} runs)")
    for col in ("case", "best rec/s", "median rec/s", "CPU µs/rec"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for k in best:
        table.add_row(k, f"{best[k]:,.0f}", f"{median[k]:,.0f}", f"{cpu[k]:.1f}")
    Console().print(table)
    console.print(
        f"publish / raw produce = {body['publish_vs_raw_produce']:.2f}; "
        f"serde / avro lib encode = {body['serde_vs_avro_lib_encode']:.1f}x; "
        f"target {TARGET_RATE:,.0f} rec/s {'met' if body['target_met'] else 'NOT met'}; "
        f"wrote {path}"
    )


def plot(body: dict[str, Any], results_dir: Path) -> None:
    """``produce.png``: best and median rate per case, and CPU per record."""
    best, median = body["best_records_per_s"], body["median_records_per_s"]
    cpu, n = body["median_cpu_us_per_record"], body["records"]
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
