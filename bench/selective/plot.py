"""The PNGs of `harvest bench selective`, one per figure part, from the JSON's rows and
series only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure


def _profile(payload: dict[str, Any], part: str, title: str, results_dir: Path) -> None:
    """Output per second and the fraction r over time, every config (Figs. 3–4, 6–7)."""
    import matplotlib.pyplot as plt

    series = payload.get("series", {}).get(part)
    if not series:
        return
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for config, s in series["series"].items():
        top.plot(s["t_s"], s["output_per_s"], label=config)
        bottom.plot(s["step_t_s"], s["r"], label=config)
    top.set_ylabel("output (results/s)")
    top.set_title(title)
    top.legend(fontsize=8)
    bottom.set_ylabel("r (harvest fraction / kept share)")
    bottom.set_xlabel("stream time (s); input 100 → 500 → 300 → 100 tuples/s")
    save_figure(fig, f"selective_{part}", results_dir)


def _sweep(rows: list[dict[str, Any]], figure: str, x: str, group: str, title: str,
           results_dir: Path) -> None:
    """Output rate vs ``x``, one line per (config, ``group``)."""
    import matplotlib.pyplot as plt

    sel = [r for r in rows if r["figure"] == figure]
    if not sel:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    keys = sorted({(r["config"], r[group]) for r in sel}, key=str)
    for config, g in keys:
        pts = sorted((r[x], r["output_rate"]) for r in sel
                     if r["config"] == config and r[group] == g)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label=f"{config} ({group}={g})",
                linestyle="--" if config == "randomdrop" else "-")
    ax.set_xlabel(x)
    ax.set_ylabel("output (results/s)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    save_figure(fig, f"selective_{figure}", results_dir)


def figures(payload: dict[str, Any], results_dir: Path) -> None:
    """Every PNG whose part is in ``payload``."""
    rows = payload.get("rows", [])
    _profile(payload, "fig3_4", "Figs. 3–4: rate adaptation vs random drop (τ = 0)",
             results_dir)
    _profile(payload, "fig6_7", "Figs. 6–7: + time correlation, + join direction "
             "(τ = 5/8·ς)", results_dir)
    _sweep(rows, "fig5", "kappa", "window_s", "Fig. 5: output vs κ, per window (500/s)",
           results_dir)
    _sweep(rows, "fig8", "kappa", "threshold", "Fig. 8: output vs κ, threshold 4 (500/s)",
           results_dir)
    _sweep(rows, "fig9", "basic_window_s", "indexed",
           "Fig. 9: output vs basic window b (500/s; indexed: 200 s windows)", results_dir)
