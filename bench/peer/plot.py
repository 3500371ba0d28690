"""The figure of `harvest bench peer`: steady drain throughput per method, where a row's
time goes (the differential profile), latency against the offered share of capacity,
and scaling over route keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure

COLORS = {"harvest": "tab:blue", "spark-builtin": "tab:orange",
          "spark-builtin-rocksdb": "tab:brown", "read-floor": "tab:gray",
          "raw-read": "tab:olive"}


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
                            va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def _profile(ax: Any, rows: list[dict[str, Any]]) -> None:
    """Stacked µs per row of each method's phases on the equi drain."""
    rows = [r for r in rows if r["workload"] == "equi" and r["us_per_row"] is not None]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    phases = list(dict.fromkeys(r["phase"] for r in rows))
    bottom = [0.0] * len(methods)
    cmap = __import__("matplotlib").colormaps["tab20"]
    for k, phase in enumerate(phases):
        vals = [next((r["us_per_row"] for r in rows if r["method"] == m and r["phase"] == phase),
                     0.0) for m in methods]
        ax.bar(range(len(methods)), vals, 0.6, bottom=bottom, label=phase, color=cmap(k % 20))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(range(len(methods)), [m.replace("spark-", "") for m in methods], fontsize=7)
    ax.set_title("equi drain: µs per input row (steady batches)")
    ax.set_ylabel("µs per row")
    ax.legend(fontsize=6, ncol=2)


def _latency(ax: Any, rows: list[dict[str, Any]]) -> None:
    for method in dict.fromkeys(r["method"] for r in rows):
        own = sorted((r for r in rows if r["method"] == method and r["capacity_of"] == method),
                     key=lambda r: r["load"])
        ax.plot([r["offered_rows_per_s"] for r in own], [r["p99_ms"] or 0 for r in own], "o-",
                color=COLORS.get(method), label=f"{method} p99")
        ax.plot([r["offered_rows_per_s"] for r in own], [r["p50_ms"] or 0 for r in own], "o--",
                color=COLORS.get(method), label=f"{method} p50", alpha=0.6)
        other = [r for r in rows if r["method"] == method and r["capacity_of"] != method]
        ax.plot([r["offered_rows_per_s"] for r in other], [r["p99_ms"] or 0 for r in other],
                "s", color=COLORS.get(method), label=f"{method} p99 at the peer's 0.8x")
    ax.set_title("equi latency at 0.5 / 0.8 / 1.0 x each method's capacity")
    ax.set_xlabel("offered input rows / s")
    ax.set_ylabel("result latency, ms")
    ax.legend(fontsize=7)


def plot(payload: dict[str, Any], results_dir: Path) -> Path:
    """``peer.png``: four panels."""
    fig, axes = new_figure(ncols=2, nrows=2, size=(12.0, 9.0))
    rows = payload.get("rows", [])
    workloads = sorted({r["workload"] for r in rows})
    methods = [m for m in COLORS if any(r["method"] == m for r in rows)]
    _bars(axes[0][0], workloads, {
        m: [next((r.get("steady_rows_per_s") for r in rows
                  if r["workload"] == w and r["method"] == m), None) for w in workloads]
        for m in methods}, "long drains (≥ 1.2 M rows), local[2]",
        "steady input rows / s of micro-batch time")
    _profile(axes[0][1], payload.get("profile", []))
    _latency(axes[1][0], payload.get("latency", []))
    scaling = payload.get("scaling", [])
    labels = [f"{'local' if r['master'] == 'local[2]' else 'cluster'} {r['workload']} "
              f"G={r['groups']}" for r in scaling]
    _bars(axes[1][1], labels, {"harvest": [r.get("steady_rows_per_s") or r["rows_per_s"]
                                           for r in scaling]},
          "harvest over route keys", "input rows / s")
    fig.suptitle("harvest vs Spark's built-in stream-stream joins, the floor and the raw read")
    return save_figure(fig, "peer", results_dir)
