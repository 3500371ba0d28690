"""The PNG of `harvest bench pipeline` (:mod:`bench.pipeline.main`): output rate, recall, p99
latency and staleness trend against the input rate per method, and where in the run each
method's output comes from (:func:`bench.pipeline.measure.timeline`) at 2× capacity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from bench.pipeline.measure import RunMeasure
from pipeline.core.figures import new_figure


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


def plot(rows: list[RunMeasure], results_dir: Path, cap_rate: float) -> None:
    """Write `pipeline.png` (``cap_rate``: the calibrated capacity, tuples/s per stream)."""
    fig, axes = new_figure(ncols=5, nrows=1, size=(21.0, 4.0))
    sensors = [r for r in rows if r.workload == "sensors-nonaligned"]
    for method in ("off", "grubjoin", "randomdrop", "randomdrop-static", "taildrop"):
        pts = sorted((r.input_rate, r) for r in sensors if r.method == method)
        xs = [x for x, _ in pts]
        axes[0].plot(xs, [r.output_rate for _, r in pts], marker="o", label=method)
        axes[1].plot(xs, [r.recall for _, r in pts], marker="o", label=method)
        axes[2].plot(xs, [_nan(r.p99_ms) for _, r in pts], marker="o", label=method)
        axes[3].plot(xs, [_nan(r.staleness_slope) for _, r in pts], marker="o", label=method)
        cut = [r for _, r in pts if r.stopped.startswith("deadline")]
        marks = ([r.output_rate for r in cut], [r.recall for r in cut],
                 [_nan(r.p99_ms) for r in cut])
        for i, ys in enumerate(marks):
            axes[i].scatter([r.input_rate for r in cut], ys, marker="x", s=80, color="black",
                            zorder=3, label="stopped at the deadline, backlog left"
                            if cut and i == 0 else None)
    for ax, title in zip(axes[:4], ("output rate (results/s, steady span)",
                                    "recall (steady span)", "p99 latency, steady span (ms)",
                                    "staleness trend (ms per s of run)"), strict=True):
        ax.set_title(title)
        ax.set_xlabel("input rate (tuples/s per stream)")
        ax.legend(fontsize=8)
    _plot_timeline(axes[4], sensors, cap_rate)
    save_figure(fig, "pipeline", results_dir)


def full_buckets(timeline: dict[str, list[float]]) -> tuple[list[float], list[float]]:
    """The timeline without its trailing partial bucket (the input ended inside it: it
    holds under half the median bucket's true results)."""
    t_s, ours, true = timeline["t_s"], timeline["ours"], timeline["true"]
    n = len(t_s)
    half = 0.5 * sorted(true)[n // 2] if n else 0.0
    while n > 1 and true[n - 1] < half:
        n -= 1
    return t_s[:n], ours[:n]


def _plot_timeline(ax: Any, sensors: list[RunMeasure], cap_rate: float) -> None:
    """Correct results/s per 20 s of the run at the rate nearest 2× capacity (the
    targets'): where each method's output comes from — fill, convergence, steady span."""
    rates = {r.input_rate for r in sensors}
    if not rates:
        return
    rate = min(rates, key=lambda x: abs(x / cap_rate - 2.0) if cap_rate > 0 else -x)
    start = None
    for r in sensors:
        if r.input_rate != rate or not r.timeline or not r.timeline["t_s"]:
            continue
        t_s, ours = full_buckets(r.timeline)
        width = t_s[1] - t_s[0] if len(t_s) > 1 else 1.0
        ax.step(t_s, [v / width for v in ours], where="post", label=r.method)
        start = r.steady_from_s if start is None else start
    if start is not None:
        ax.axvline(start, color="grey", linestyle="--", label="steady span starts")
    ax.set_yscale("symlog", linthresh=10.0)
    ax.set_ylim(bottom=0.0)
    ax.set_title(f"correct results/s over the run at {rate:.0f}/s")
    ax.set_xlabel("stream time of completion (s)")
    ax.legend(fontsize=8)
