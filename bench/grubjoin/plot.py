"""The PNGs of `harvest bench grubjoin` (:mod:`bench.grubjoin.main`): one per GrubJoin §VI
figure reproduced (Fig. 7, 8, 11, 12, 13, Table II, wall clock) and the index effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure


def plot_lines(rows: list[dict[str, Any]], x: str, group: str, title: str,
               results_dir: Path, name: str, logy: bool = False) -> None:
    """Output rate vs ``x``, one line per value of ``group``, as ``<name>.png``."""
    fig, ax = new_figure()
    keys = sorted({r[group] for r in rows if r[group] is not None}, key=str)
    for key in keys:
        pts = sorted((r[x], r["output_rate"]) for r in rows if r[group] == key)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=str(key))
    ax.set_xlabel(x)
    ax.set_ylabel("output rate (results/s)")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend()
    save_figure(fig, name, results_dir)


def plot_optimality(p: dict[str, Any], results_dir: Path) -> None:
    """Fig. 7: mean φ per solver vs z (and configure's min φ)."""
    fig, ax = new_figure()
    by = p["optimality_by_solver"]
    for solver in sorted({r["solver"] for r in by}):
        pts = sorted((r["z"], r["mean_phi"]) for r in by if r["solver"] == solver)
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=solver)
    pts = sorted((r["z"], r["min_phi"]) for r in p["optimality"])
    ax.plot([a for a, _ in pts], [b for _, b in pts], linestyle="--", color="black",
            label="configure (min φ)")
    ax.set_xlabel("throttle fraction z")
    ax.set_ylabel("mean φ = O(solver) / O(optimum)")
    ax.set_title("Fig. 7: optimality of the harvest-fraction solvers (m = 3, n = 10)")
    ax.legend()
    save_figure(fig, "grubjoin_fig7_optimality", results_dir)


def plot_config_time(p: dict[str, Any], results_dir: Path) -> None:
    """Fig. 8: configuration time vs n per solver and m, and brute force (m = 3)."""
    fig, ax = new_figure()
    for m in (3, 4, 5):
        for solver, style in (("configure", "-"), ("greedy-double-sided", ":")):
            pts = sorted((r["n"], r["ms"]) for r in p["config_time"]
                         if r["m"] == m and r.get("solver") == solver)
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", linestyle=style,
                    label=f"{solver} m={m}")
    pts = sorted((r["n"], r["ms"]) for r in p["config_time_bruteforce"])
    ax.plot([a for a, _ in pts], [b for _, b in pts], marker="s", label="brute force m=3")
    ax.set_yscale("log")
    ax.set_xlabel("basic windows per window n")
    ax.set_ylabel("configuration time (ms)")
    ax.set_title("Fig. 8: configuration time (z = 0.25)")
    ax.legend(fontsize="small")
    save_figure(fig, "grubjoin_fig8_config_time", results_dir)


def plot_index_effect(p: dict[str, Any], results_dir: Path) -> None:
    """Ours: wall clock per probe of the exact join with and without indexes."""
    fig, ax = new_figure()
    for indexed, label in ((False, "unindexed (NLJ scan)"), (True, "sorted index per bw")):
        pts = sorted((r["input_rate"], r["us_per_probe"]) for r in p["index_effect"]
                     if r["indexed"] == indexed)
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=label)
    ax.set_xlabel("input rate per stream (tuples/s)")
    ax.set_ylabel("wall clock per probe (µs)")
    ax.set_yscale("log")
    ax.set_title("Exact 3-way band join: per-basic-window index (ours)")
    ax.legend()
    save_figure(fig, "grubjoin_index_effect", results_dir)


def plot_sweeps(p: dict[str, Any], results_dir: Path) -> None:
    """Fig. 11 (both scenarios), 12, 13, Table II and the wall-clock sweep."""
    for scen in ("aligned", "nonaligned"):
        rows = [r for r in p["rate_sweep"] if r["scenario"] == scen]
        plot_lines(rows, "input_rate", "method", f"Fig. 11: output vs input rate ({scen})",
                   results_dir, f"grubjoin_fig11_{scen}")
    plot_lines(p["kappa_sweep"], "kappa", "method", "Fig. 12: output vs κ_3 (200 tuples/s)",
               results_dir, "grubjoin_fig12_kappa")
    for scen, suffix in (("nonaligned", ""), ("aligned", "_aligned")):
        rows = [r for r in p["m_sweep"] if r["scenario"] == scen]
        plot_lines(rows, "m", "method", f"Fig. 13: output vs m (100 tuples/s, {scen})",
                   results_dir, f"grubjoin_fig13_m{suffix}", logy=True)
    plot_lines(p["cost_sweep"], "cost_multiplier", "method",
               "Table II: predicate cost multiplier (75 tuples/s)", results_dir,
               "grubjoin_table2_cost")
    plot_lines(p["wall_sweep"], "input_rate", "method",
               "Fig. 11 on the wall-clock budget (nonaligned)", results_dir,
               "grubjoin_wall_clock")


#: part of the run → the function drawing its PNGs
PLOTS = {
    "optimality": plot_optimality,
    "config_time": plot_config_time,
    "index_effect": plot_index_effect,
    "sweeps": plot_sweeps,
}


def figures(p: dict[str, Any], results_dir: Path, parts: list[str]) -> None:
    """Draw the PNGs of the ``parts`` just run (in the order optimality, config_time,
    index_effect, sweeps)."""
    for part, draw in PLOTS.items():
        if part in parts:
            draw(p, results_dir)
