"""What `harvest bench workloads` shows: the printed table and ``workloads.png``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure


def print_table(rows: list[dict[str, Any]], total: int, repeats: int) -> None:
    """Rates per workload (stderr)."""
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
    Console(stderr=True).print(table)


def plot(rows: list[dict[str, Any]], total: int, results_dir: Path) -> None:
    """``workloads.png``: records/s per workload, columnar, with dicts, baseline (log)."""
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
