"""The figure of `harvest bench peer`: drain throughput, near-empty micro-batch time,
latency at the built-in join's capacity, and scaling over route keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure

COLORS = {"harvest": "tab:blue", "spark-builtin": "tab:orange"}


def _bars(ax: Any, groups: list[str], series: dict[str, list[float | None]],
          title: str, ylabel: str) -> None:
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        vals = [v or 0.0 for v in values]
        bars = ax.bar(xs, vals, width, label=name, color=COLORS.get(name))
        for bar, v in zip(bars, values, strict=True):
            if v:
                ax.annotate(f"{v:.0f}", (bar.get_x() + bar.get_width() / 2, v), ha="center",
                            va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def plot(payload: dict[str, Any], results_dir: Path) -> Path:
    """``peer.png``: four panels."""
    fig, axes = new_figure(ncols=2, nrows=2, size=(11.0, 8.0))
    rows = payload.get("rows", [])
    workloads = sorted({r["workload"] for r in rows})
    _bars(axes[0][0], workloads, {
        m: [next((r["rows_per_s"] for r in rows if r["workload"] == w and r["method"] == m),
                 None) for w in workloads] for m in COLORS},
        "backlog drain, local[2]", "input rows / s of micro-batch time")
    over = payload.get("batch_overhead_ms", {})
    _bars(axes[0][1], ["near-empty micro-batch"], {m: [over.get(m)] for m in COLORS},
          "micro-batch time at 2 tuples/s per stream", "median ms")
    stream = payload.get("streaming", [])
    names = [f"{s['workload']} p50" for s in stream] + [f"{s['workload']} p99" for s in stream]
    _bars(axes[1][0], names, {
        m: [s["by_method"].get(m, {}).get("p50_ms") for s in stream]
        + [s["by_method"].get(m, {}).get("p99_ms") for s in stream] for m in COLORS},
        "latency at the built-in join's capacity", "ms")
    scaling = payload.get("scaling", [])
    labels = [f"{'local' if r['master'] == 'local[2]' else 'cluster'} G={r['groups']}"
              for r in scaling]
    _bars(axes[1][1], labels, {"harvest": [r["rows_per_s"] for r in scaling]},
          "band backlog over route keys", "input rows / s")
    fig.suptitle("harvest vs Spark's built-in stream-stream joins")
    return save_figure(fig, "peer", results_dir)
