"""The PNGs of `harvest bench pipeline` (:mod:`bench.pipeline.main`), one per workload
(``pipeline_<workload>.png``): output rate and recall against the load (the multiple of
the workload's capacity) per method, and at each load where in the run each method's
output comes from (:func:`bench.pipeline.measure.timeline`) beside the exact join's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure

METHODS = ("off", "grubjoin", "randomdrop", "randomdrop-static", "taildrop")


def full_buckets(timeline: Mapping[str, list[float]]) -> tuple[list[float], list[float]]:
    """The timeline without its trailing partial bucket (the input ended inside it: it
    holds under half the median bucket's true results)."""
    t_s, ours, true = timeline["t_s"], timeline["ours"], timeline["true"]
    n = len(t_s)
    half = 0.5 * sorted(true)[n // 2] if n else 0.0
    while n > 1 and true[n - 1] < half:
        n -= 1
    return list(t_s[:n]), list(ours[:n])


def plot(rows: Sequence[Mapping[str, Any]], results_dir: Path,
         caps: Mapping[str, Any]) -> None:
    """Write ``pipeline_<workload>.png`` for each workload in ``rows`` (``caps``: each
    workload's capacity snapshot, for the titles)."""
    for w in sorted({str(r["workload"]) for r in rows}):
        mine = [r for r in rows if r["workload"] == w]
        loads = sorted({float(r.get("load") or 0.0) for r in mine})
        fig, axes = new_figure(ncols=2 + len(loads), nrows=1,
                               size=(4.6 * (2 + len(loads)), 4.0))
        _plot_vs_load(axes[0], axes[1], mine)
        cap = (caps.get(w) or {}).get("capacity_rate")
        axes[0].set_title(f"{w}: output (results/s, steady span)"
                          + (f"\ncapacity {cap:.0f}/s per stream" if cap else ""))
        for ax, load in zip(axes[2:], loads, strict=True):
            _plot_timeline(ax, [r for r in mine if float(r.get("load") or 0.0) == load], load)
        save_figure(fig, f"pipeline_{w}", results_dir)


def _plot_vs_load(out_ax: Any, recall_ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    for method in METHODS:
        pts = sorted((float(r.get("load") or 0.0), r) for r in rows if r["method"] == method)
        if not pts:
            continue
        xs = [x for x, _ in pts]
        out_ax.plot(xs, [r["output_rate"] for _, r in pts], marker="o", label=method)
        recall_ax.plot(xs, [r["recall"] for _, r in pts], marker="o", label=method)
    recall_ax.set_title("recall (steady span)")
    for ax in (out_ax, recall_ax):
        ax.set_xlabel("load (× the workload's capacity)")
        ax.legend(fontsize=8)


def _plot_timeline(ax: Any, rows: Sequence[Mapping[str, Any]], load: float) -> None:
    """Correct results/s per bucket of each method's run at ``load``, and the exact join's."""
    true_drawn = False
    for r in sorted(rows, key=lambda r: METHODS.index(r["method"])
                    if r["method"] in METHODS else 99):
        tl = r.get("timeline")
        if not tl or not tl["t_s"]:
            continue
        t_s, ours = full_buckets(tl)
        width = t_s[1] - t_s[0] if len(t_s) > 1 else 1.0
        if not true_drawn:
            ax.step(t_s, [v / width for v in tl["true"][:len(t_s)]], where="post",
                    color="black", linestyle=":", label="exact join")
            true_drawn = True
        ax.step(t_s, [v / width for v in ours], where="post", label=r["method"])
        if r.get("steady_from_s") is not None:
            ax.axvline(float(r["steady_from_s"]), color="grey", linestyle="--")
    ax.set_yscale("symlog", linthresh=10.0)
    ax.set_ylim(bottom=0.0)
    ax.set_title(f"correct results/s at {load:g}× (dashed: steady span)")
    ax.set_xlabel("stream time of completion (s)")
    ax.legend(fontsize=8)
