"""memory.png of `harvest bench memory`: the paper's Figs. 7–11, variable allocation and
ours (3-way, band, lagged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from pipeline.core.figures import new_figure

Row = dict[str, Any]
STYLE = {"OPT": ("black", "o"), "PROB": ("tab:blue", "s"), "LIFE": ("tab:green", "^"),
         "RAND": ("tab:red", "v"), "LAGPROB": ("tab:purple", "D"), "EXACT": ("gray", None)}


def _curve(ax: Any, rows: list[Row], workload: str, title: str) -> None:
    mine = [r for r in rows if r["workload"] == workload]
    exact = next((r for r in mine if r["method"] == "EXACT"), None)
    w = mine[0]["window"] if mine else 1
    for meth, (color, marker) in STYLE.items():
        if meth == "EXACT":
            continue
        pts = sorted((r["memory_tuples"] / w, r["results"]) for r in mine
                     if r["method"] == meth and r["results"] is not None)
        if pts:
            ax.plot(*zip(*pts, strict=True), color=color, marker=marker, label=meth)
    if exact is not None:
        ax.axhline(exact["results"], color="gray", linestyle="--", label="EXACT")
    ax.set_xlabel("M / w")
    ax.set_ylabel("results (after warm-up)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def _w(rows: list[Row], workload: str) -> int:
    return next((int(r["window"]) for r in rows if r["workload"] == workload), 0)


def _steps(rows: list[Row], workload: str) -> int:
    return next((int(r.get("counted_steps") or 0) for r in rows if r["workload"] == workload),
                0)


def _n(rows: list[Row], workload: str) -> int:
    return next((int(r.get("inputs", 1)) for r in rows if r["workload"] == workload), 1)


def _skew(ax: Any, rows: list[Row], suffix: str, title: str) -> None:
    """Figs. 10–11: output / OPT vs the common Zipf skew (uncorrelated and correlated)."""
    for wl, ls in (("fig10" + suffix, "-"), ("fig11" + suffix, "--")):
        for meth, color in (("PROB", "tab:blue"), ("RAND", "tab:red"),
                            ("PROB-KNOWN", "tab:cyan")):
            pts = sorted((r["zipf"][0], r["ratio_to_opt"]) for r in rows
                         if r["workload"] == wl and r["method"] == meth
                         and r["ratio_to_opt"] is not None)
            if pts:
                ax.plot(*zip(*pts, strict=True), ls, color=color, marker="o",
                        label=f"{meth}/OPT {'corr.' if wl.startswith('fig11') else 'uncorr.'}")
    ax.axhline(0.96, color="gray", linestyle=":", label="0.96")
    ax.set_xlabel("Zipf skew (both streams)")
    ax.set_ylabel("output / OPT")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6)


def _weather(ax: Any, rows: list[Row]) -> None:
    """The weather-like input: output / EXACT at M = w vs the skew."""
    mine = [r for r in rows if r["workload"] == "weather" and r["method"] != "EXACT"]
    for meth, color in (("PROB", "tab:blue"), ("PROB-KNOWN", "tab:cyan"), ("RAND", "tab:red"),
                        ("OPT", "black")):
        pts = sorted((r["zipf"][0], r["ratio_to_exact"]) for r in mine
                     if r["method"] == meth and r["ratio_to_exact"] is not None)
        if pts:
            ax.plot(*zip(*pts, strict=True), color=color, marker="o", label=meth)
    ax.axhline(0.90, color="gray", linestyle=":", label="0.90")
    ax.set_xlabel("Zipf skew (both streams, same ranking)")
    ax.set_ylabel("output / EXACT")
    ax.set_title(f"weather-like: domain 650, M = w = {_w(rows, 'weather')}", fontsize=9)
    ax.legend(fontsize=7)


def plot(rows: list[Row], results_dir: Path) -> Path:
    fig, axes = new_figure(4, 2, size=(20.0, 8.5))
    _curve(axes[0][0], rows, "fig7", f"Fig. 7: w = {_w(rows, 'fig7')}, Zipf 1 / uniform")
    _curve(axes[0][1], rows, "fig8", f"Fig. 8: w = {_w(rows, 'fig8')}, Zipf 1 / uniform")
    _curve(axes[0][2], rows, "fig9", f"Fig. 9: both uniform (sum of {_n(rows, 'fig9')} inputs)")
    _weather(axes[0][3], rows)
    _skew(axes[1][0], rows, "", f"Figs. 10–11: M = w = {_w(rows, 'fig10')}, "
          f"{_steps(rows, 'fig10')} counted steps")
    _skew(axes[1][1], rows, "-long", f"Figs. 10–11 at the paper's length: "
          f"{_steps(rows, 'fig10-long')} counted steps")
    ax = axes[1][2]
    var = [r for r in rows if r["workload"] == "variable" and r["method"] != "EXACT"]
    labels = [f"{r['method']}\n{r['zipf']}" for r in var]
    ax.bar(range(len(var)), [r["ratio_to_exact"] or 0.0 for r in var],
           color=["tab:orange" if r["method"].endswith("V") else "tab:blue" for r in var])
    ax.set_xticks(range(len(var)), labels, fontsize=6, rotation=90)
    ax.set_ylabel("output / EXACT")
    ax.set_title("variable (orange) vs fixed allocation, M = w", fontsize=9)
    ax = axes[1][3]
    ours = [r for r in rows if r["workload"] in ("equi3", "band2", "band3", "lagged")
            and r["method"] != "EXACT"]
    groups = sorted({(r["workload"], r["memory_fraction"]) for r in ours},
                    key=lambda g: (("equi3", "band2", "band3", "lagged").index(g[0]), g[1]))
    methods = sorted({r["method"] for r in ours}, key=lambda m: (m.endswith("V"), m))
    width = 0.8 / max(len(methods), 1)
    for j, meth in enumerate(methods):
        xs, ys = [], []
        for i, g in enumerate(groups):
            hit = [r for r in ours if (r["workload"], r["memory_fraction"]) == g
                   and r["method"] == meth]
            if hit:
                xs.append(i + (j - len(methods) / 2) * width)
                ys.append(hit[0]["ratio_to_exact"] or 0.0)
        color = STYLE.get(meth.removesuffix("V"), ("gray", None))[0]
        ax.bar(xs, ys, width, color=color, label=meth,
               hatch="//" if meth.endswith("V") else None, edgecolor="white")
    ax.set_xticks(range(len(groups)), [f"{g}\n{f:.2f}" for g, f in groups], fontsize=7)
    ax.set_xlabel("workload, M / tuples the exact join holds")
    ax.set_ylabel("output / EXACT")
    ax.set_title("beyond the paper: 3-way equi, band joins, lagged streams", fontsize=9)
    ax.set_ylim(0.0, 1.3)
    ax.legend(fontsize=6, ncol=4, loc="upper left")
    return save_figure(fig, "memory", results_dir)
