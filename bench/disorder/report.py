"""Targets, plot and console table of `harvest bench disorder` (the definitions are in
:mod:`bench.disorder`'s docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure


def _avg_k(rows: list[dict[str, Any]], wl: str, method: str, gamma: float) -> float:
    for r in rows:
        if r["workload"] == wl and r["method"] == method and r["recall_target"] == gamma:
            return float(r["avg_k_ms"])
    return float("nan")


def targets(rows: list[dict[str, Any]], timing: dict[str, Any]) -> dict[str, Any]:
    quality = [r for r in rows if r["method"] == "quality"]
    phi99 = min((r["phi_99"] for r in quality if r["phi_99"] is not None), default=None)
    out: dict[str, Any] = {
        "phi_99_min": phi99,
        "phi_99_min_met": phi99 is not None and phi99 >= 0.97,
        "adapt_max_mean_ms": max((t["mean_ms"] for t in timing.values()), default=None),
        "adapt_max_ms": max((t["max_ms"] for t in timing.values()), default=None),
    }
    out["adapt_met"] = out["adapt_max_mean_ms"] is not None and out["adapt_max_mean_ms"] <= 5.0
    for gamma, bound, key in ((0.99, 0.10, "k_ratio_at_0.99"), (0.999, 0.65, "k_ratio_at_0.999")):
        q = _avg_k(rows, "positions2", "quality", gamma)
        mx = _avg_k(rows, "positions2", "max-k-slack", gamma)
        ratio = q / mx if mx > 0 else float("nan")
        out[key] = None if np.isnan(ratio) else ratio
        out[f"{key}_met"] = bool(ratio <= bound) if not np.isnan(ratio) else None
    return out


def plot(rows: list[dict[str, Any]], results_dir: Path) -> None:
    names = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = new_figure(ncols=len(names), size=(4.2 * len(names), 4.0))
    axes = np.atleast_1d(axes)
    for ax, wl in zip(axes, names, strict=True):
        for method, style in (("quality", "o-"), ("max-k-slack", "s--"), ("no-k-slack", "^:")):
            pts = [r for r in rows if r["workload"] == wl and r["method"] == method]
            xs = [str(r["recall_target"]) for r in pts]
            ys = [r["avg_k_ms"] / 1000.0 for r in pts]
            ax.plot(xs, ys, style, label=method)
        ax.set_title(wl)
        ax.set_xlabel("recall requirement Γ")
        ax.set_ylabel("average K (s)")
        ax.grid(alpha=0.3)
    axes[0].legend()
    save_figure(fig, "disorder", results_dir)


def print_table(console: Console, rows: list[dict[str, Any]], targets: dict[str, Any]) -> None:
    table = Table(title="quality-driven K vs baselines (Φ over periods P = 60 s)")
    for col in ("workload", "method", "Γ", "avg K (ms)", "Φ(Γ)", "Φ(.99Γ)", "mean γ(P)"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["workload"],
            r["method"],
            str(r["recall_target"]),
            f"{r['avg_k_ms']:.0f}",
            f"{r['phi']:.3f}",
            f"{r['phi_99']:.3f}",
            f"{r['mean_recall']:.4f}",
        )
    console.print(table)
    console.print(targets)
