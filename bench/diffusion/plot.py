"""The PNGs of `harvest bench diffusion`: scaling with G (Fig. 11), the ATR/CTR figures
(Figs. 13–16) and skew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure

Rows = list[dict[str, Any]]


def _lines(ax: Any, rows: Rows, x: str, y: str, title: str) -> None:
    for router in sorted({r["router"] for r in rows}):
        pts = sorted((r[x], r[y]) for r in rows if r["router"] == router)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=router)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title, fontsize=9)
    if rows:
        ax.legend(fontsize=7)


def plot_scaling(rows: Rows, results_dir: Path) -> None:
    """async_rate scaling (and batch_rate scaling) against G, one line per router."""
    sc = [r for r in rows if r["part"] == "scaling"]
    if not sc:
        return
    fig, (a, b) = new_figure(2, 1, (11.0, 4.5))
    _lines(a, sc, "groups", "scaling", "Fig. 11: async_rate(G) / rate(1), 4-way join")
    gs = sorted({r["groups"] for r in sc})
    a.plot(gs, gs, linestyle=":", color="grey", label="ideal")
    a.legend(fontsize=7)
    for r in sc:
        r["batch_scaling_of_1"] = r["batch_rate"] / max(
            x["batch_rate"] for x in sc if x["groups"] == 1 and x["router"] == r["router"])
    _lines(b, sc, "groups", "batch_scaling_of_1", "batch_rate(G) / batch_rate(1)")
    for r in sc:
        r.pop("batch_scaling_of_1")
    save_figure(fig, "diffusion_scaling", results_dir)


def plot_figures(rows: Rows, results_dir: Path) -> None:
    """Figs. 13–16: async_rate of ATR and CTR against streams, window, σ and θ."""
    fig, axes = new_figure(2, 2, (11.0, 8.0))
    for ax, (part, x, title) in zip(axes.ravel(), (
            ("streams", "streams", "Fig. 13: number of streams"),
            ("windows", "window_ms", "Fig. 14: window (ms)"),
            ("selectivity", "sigma", "Fig. 15: pair selectivity σ"),
            ("bursty", "theta", "Fig. 16: bursty ratio θ")), strict=True):
        _lines(ax, [r for r in rows if r["part"] == part], x, "async_rate", title)
    save_figure(fig, "diffusion_figures", results_dir)


def plot_skew(rows: Rows, results_dir: Path) -> None:
    """Imbalance against the Zipf skew of the join key: hash against ATR."""
    sk = [r for r in rows if r["part"] == "skew"]
    if not sk:
        return
    fig, ax = new_figure()
    _lines(ax, sk, "zipf", "imbalance", "skew: max/mean host busy time (equi-join, Zipf keys)")
    save_figure(fig, "diffusion_skew", results_dir)


def figures(rows: Rows, results_dir: Path) -> None:
    plot_scaling(rows, results_dir)
    plot_figures(rows, results_dir)
    plot_skew(rows, results_dir)
