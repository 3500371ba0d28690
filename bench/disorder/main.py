"""The run of `harvest bench disorder` (the package docstring says what it measures): every
method on every workload, the targets, ``disorder.json``, the PNG and the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench.disorder.report import plot, print_table, targets
from bench.disorder.runs import Measured, measure_workload
from bench.disorder.workload import (
    GRANULARITY_MS,
    INTERVAL_MS,
    LATE_ESTIMATE,
    PERIOD_MS,
    QUICK_RECALLS,
    RECALLS,
    workloads,
)
from bench.kit.output import write_json
from pipeline.core.settings import Settings
from pipeline.operators.disorder.quality.policy import (
    EVIDENCE_INTERVALS,
    TARGET_HEADROOM,
    TARGET_MARGIN,
)


def _params(gammas: tuple[float, ...]) -> dict[str, Any]:
    """The JSON's ``params``: the measure's P, L, g and the policy's constants."""
    return {
        "period_ms": PERIOD_MS,
        "interval_ms": INTERVAL_MS,
        "granularity_ms": GRANULARITY_MS,
        "basic_window": "b = max W_i (one basic window per join window, n_i = 1)",
        "recalls": list(gammas),
        "late_estimate": LATE_ESTIMATE,
        "quality_policy": {
            "target_margin": TARGET_MARGIN,
            "target_headroom": TARGET_HEADROOM,
            "evidence_intervals": EVIDENCE_INTERVALS,
        },
    }


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Run the benchmark; write disorder.json + disorder.png under ``results_dir``."""
    console = Console()
    gammas = QUICK_RECALLS if quick else RECALLS
    out = Measured()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        for w in workloads(quick):
            measure_workload(w, gammas, quick, progress, out)
    met = targets(out.rows, out.timing)
    payload = {
        "quick": quick,
        "params": _params(gammas),
        "workloads": out.info,
        "rows": out.rows,
        "adaptation_step": out.timing,
        "targets": met,
        "fixed_k_reference": out.reference,
    }
    write_json("disorder", payload, results_dir)
    plot(out.rows, results_dir)
    print_table(console, out.rows, met)
    return 0
