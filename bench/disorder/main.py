"""The run of `harvest bench disorder` (the package docstring says what it measures): every
method on every workload, the targets, ``disorder.json``, the PNG and the table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench.disorder.report import plot, print_table, targets
from bench.disorder.runs import Measured, measure_workload
from bench.disorder.strength import paper_strength
from bench.disorder.strength_report import plots
from bench.disorder.strength_report import targets as strength_targets
from bench.disorder.workload import (
    GRANULARITY_MS,
    INTERVAL_MS,
    LATE_ESTIMATE,
    PERIOD_MS,
    QUICK_RECALLS,
    RECALLS,
    workloads,
)
from bench.kit.output import read_payload, write_json
from bench.kit.parts import only_parts
from pipeline.core.settings import Settings
from pipeline.operators.disorder.quality.policy import (
    EVIDENCE_INTERVALS,
    TARGET_HEADROOM,
    TARGET_MARGIN,
)

#: ``--only``: the bench's own workloads and methods; Ji et al. at their strength
PARTS = ("methods", "paper_strength")


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


def _parts(only: str | None) -> list[str]:
    """The parts ``--only`` names (all when empty); ConfigError naming an unknown one."""
    return only_parts(only, PARTS)


def _baseline(quick: bool, progress: Progress, console: Console,
              results_dir: Path) -> dict[str, Any]:
    """The bench's own workloads and methods (the package docstring)."""
    gammas = QUICK_RECALLS if quick else RECALLS
    out = Measured()
    for w in workloads(quick):
        measure_workload(w, gammas, quick, progress, out)
    met = targets(out.rows, out.timing)
    plot(out.rows, results_dir)
    print_table(console, out.rows, met)
    return {
        "quick": quick,
        "params": _params(gammas),
        "workloads": out.info,
        "rows": out.rows,
        "adaptation_step": out.timing,
        "targets": met,
        "fixed_k_reference": out.reference,
    }


def _strength(quick: bool, progress: Progress, results_dir: Path) -> dict[str, Any]:
    """The ``paper_strength`` part (:mod:`bench.disorder.strength`) with its targets."""
    t0 = time.perf_counter()
    part = paper_strength(quick, progress)
    met, why = strength_targets(part)
    plots(part, results_dir)
    for name, ok in met.items():
        print(f"{name:52s} {'met' if ok else 'MISSED'}")
    return {**part, "quick": quick, "targets_met": met, "targets_missed_why": why,
            "seconds": round(time.perf_counter() - t0, 1)}


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Run the benchmark (or ``only`` = comma-separated parts of :data:`PARTS`); write
    disorder.json + PNGs under ``results_dir``. A partial run keeps the other parts'
    keys of the existing JSON."""
    console = Console()
    parts = _parts(only)
    payload: dict[str, Any] = {}
    if set(parts) != set(PARTS):
        payload = read_payload("disorder", results_dir)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        if "methods" in parts:
            payload.update(_baseline(quick, progress, console, results_dir))
        if "paper_strength" in parts:
            payload["paper_strength"] = _strength(quick, progress, results_dir)
    write_json("disorder", payload, results_dir)
    return 0
