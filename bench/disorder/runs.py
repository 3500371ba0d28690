"""One method of `harvest bench disorder` on one workload: the engine over the generated
input, its result times and disorder metrics, scored against each Γ; and the fixed-K
reference."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.progress import Progress

from bench.disorder.truth import period_recalls, true_result_times
from bench.disorder.workload import FIXED_KS, REFERENCE_WORKLOAD, Workload, spec
from connectors.workloads import generate
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import event_from_dump
from pipeline.runtime.resolve import resolve_engine, runtime_env
from pipeline.spec.model import Spec


def run_engine(
    spec: Spec, records: Sequence[dict[str, Any]], progress: Progress, label: str
) -> tuple[np.ndarray, list[dict[str, Any]], float]:
    """Run one method; return produced result times, its metrics rows, wall seconds."""
    # the quality policy times its steps in CPU time (thread clock): the machine is
    # shared, wall time is noisy
    engine = Engine(resolve_engine(spec), runtime_env(timer=time.thread_time))
    index = {s: i for i, s in enumerate(spec.join.streams)}
    events = [event_from_dump(r, index) for r in records]
    task = progress.add_task(label, total=len(events))
    times: list[int] = []
    t0 = time.perf_counter()
    for start in range(0, len(events), 500):
        for res in engine.process_many(events[start : start + 500]):
            times.append(res.result_time)
        progress.update(task, advance=min(500, len(events) - start))
    times.extend(r.result_time for r in engine.flush())
    wall = time.perf_counter() - t0
    progress.remove_task(task)
    rows = [r for r in engine.drain_metrics() if r.get("source") == "disorder"]
    return np.asarray(times, dtype=np.int64), rows, wall


def fixed_reference(
    w: Workload,
    records: Sequence[dict[str, Any]],
    truth: np.ndarray,
    gammas: Sequence[float],
    progress: Progress,
) -> dict[str, Any]:
    """Fixed-K runs: Φ(.99Γ) per K and Γ, and the smallest K with Φ(.99Γ) ≥ 0.97."""
    end_ms = w.gen.start_ms + int(w.gen.duration_s * 1000)
    runs: list[dict[str, Any]] = []
    for k in FIXED_KS:
        produced, _, _ = run_engine(
            spec(w, "fixed", slack_ms=k), records, progress, f"{w.name} fixed K={k}"
        )
        recalls = period_recalls(produced, truth, w.gen.start_ms, end_ms)
        runs.append(
            {
                "k_ms": k,
                "mean_recall": float(np.mean(recalls)),
                "min_recall": float(np.min(recalls)),
                "phi_99": {str(g): float(np.mean(recalls >= 0.99 * g)) for g in gammas},
            }
        )
    ideal = {
        str(g): next((r["k_ms"] for r in runs if r["phi_99"][str(g)] >= 0.97), None) for g in gammas
    }
    return {"workload": w.name, "runs": runs, "ideal_k_ms": ideal}


def score(
    name: str, method: str, gamma: float, metrics: list[dict[str, Any]], recalls: np.ndarray
) -> dict[str, Any]:
    ks = np.asarray([r["k_ms"] for r in metrics], dtype=np.float64)
    capped = [r["instant_recall_target"] >= 1.0 for r in metrics if "instant_recall_target" in r]
    return {
        "workload": name,
        "method": method,
        "recall_target": gamma,
        "avg_k_ms": float(ks.mean()),
        "median_k_ms": float(np.median(ks)),
        "instant_target_capped": float(np.mean(capped)) if capped else None,
        "phi": float(np.mean(recalls >= gamma)) if recalls.size else None,
        "phi_99": float(np.mean(recalls >= 0.99 * gamma)) if recalls.size else None,
        "mean_recall": float(np.mean(recalls)) if recalls.size else None,
        "min_recall": float(np.min(recalls)) if recalls.size else None,
        "measurements": int(recalls.size),
    }


@dataclass
class Measured:
    """What the runs on the workloads gave: the JSON's ``workloads``, ``rows`` and
    ``adaptation_step``, and the fixed-K reference (full runs only)."""

    info: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] | None = None


def _baselines(w: Workload, records: Sequence[dict[str, Any]], truth: np.ndarray,
               gammas: Sequence[float], progress: Progress, out: Measured) -> None:
    """No-K-slack and Max-K-slack, run once and scored against every Γ."""
    end_ms = w.gen.start_ms + int(w.gen.duration_s * 1000)
    for method, mode in (("no-k-slack", "none"), ("max-k-slack", "max")):
        produced, metrics, wall = run_engine(spec(w, mode), records, progress,
                                             f"{w.name} {method}")
        recalls = period_recalls(produced, truth, w.gen.start_ms, end_ms)
        out.info[w.name][f"{method}_wall_s"] = wall
        out.rows.extend(score(w.name, method, g, metrics, recalls) for g in gammas)


def _quality(w: Workload, records: Sequence[dict[str, Any]], truth: np.ndarray,
             gammas: Sequence[float], progress: Progress, out: Measured) -> None:
    """The quality-driven policy at each Γ, with its adaptation step's timing."""
    end_ms = w.gen.start_ms + int(w.gen.duration_s * 1000)
    for g in gammas:
        produced, metrics, wall = run_engine(spec(w, "quality", g), records, progress,
                                             f"{w.name} quality Γ={g}")
        recalls = period_recalls(produced, truth, w.gen.start_ms, end_ms)
        out.rows.append(score(w.name, "quality", g, metrics, recalls))
        adapt = np.asarray([r["adapt_ms"] for r in metrics], dtype=np.float64)
        out.timing[f"{w.name}@{g}"] = {
            "mean_ms": float(adapt.mean()),
            "p99_ms": float(np.percentile(adapt, 99)),
            "max_ms": float(adapt.max()),
            "steps": int(adapt.size),
            "wall_s": wall,
        }


def measure_workload(w: Workload, gammas: Sequence[float], quick: bool, progress: Progress,
                     out: Measured) -> None:
    """Every method on ``w`` (its input generated once, its truth computed once)."""
    records = generate(w.gen)
    truth = true_result_times(spec(w, "none").join, records)
    out.info[w.name] = {
        "generator": w.gen.describe(),
        "join": w.join,
        "tuples": len(records),
        "true_results": int(truth.size),
        "max_delay_ms": int(max(r["arrival_time"] - r["event_time"] for r in records)),
    }
    _baselines(w, records, truth, gammas, progress, out)
    _quality(w, records, truth, gammas, progress, out)
    if not quick and w.name == REFERENCE_WORKLOAD:
        out.reference = fixed_reference(w, records, truth, gammas, progress)
