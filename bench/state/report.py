"""What `harvest bench state` reports: per (design, window) the median bytes and save CPU
per micro-batch, their growth with the window, the targets, the printed table and
``state.png``."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.kit.output import save_figure
from bench.state.workload import DESIGNS, RATE, TARGET_GROWTH
from pipeline.core.figures import new_figure


def summarize(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The result rows: per (design, window), the median bytes and save CPU ms per batch."""
    rows = []
    for design in DESIGNS:
        for w in sorted({b["window_s"] for b in batches}):
            mine = [b for b in batches if b["design"] == design and b["window_s"] == w]
            if not mine:
                continue
            rows.append({
                "design": design, "window_s": w, "input_rate": RATE,
                "bytes_written_per_batch": statistics.median(b["bytes_written"] for b in mine),
                "save_ms_per_batch": statistics.median(b["save_ms"] for b in mine),
            })
    return rows


def growth(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per design: largest window's bytes and save ms over the smallest window's."""
    out: dict[str, dict[str, float | None]] = {}
    for design in DESIGNS:
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["window_s"])
        if len(mine) < 2:
            out[design] = {"bytes": None, "save_ms": None}
            continue
        lo, hi = mine[0], mine[-1]
        out[design] = {
            "bytes": _ratio(hi["bytes_written_per_batch"], lo["bytes_written_per_batch"]),
            "save_ms": _ratio(hi["save_ms_per_batch"], lo["save_ms_per_batch"]),
        }
    return out


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def targets(ratios: dict[str, dict[str, float | None]]) -> dict[str, bool]:
    inc = ratios.get("incremental", {})
    return {
        f"incremental_bytes_written_within_{TARGET_GROWTH:g}x":
            inc.get("bytes") is not None and inc["bytes"] <= TARGET_GROWTH,  # type: ignore[operator]
        f"incremental_save_ms_within_{TARGET_GROWTH:g}x":
            inc.get("save_ms") is not None and inc["save_ms"] <= TARGET_GROWTH,  # type: ignore[operator]
    }


def header_bytes(batches: list[dict[str, Any]]) -> dict[str, float]:
    """Per window (s, as text): the incremental saves' median header bytes."""
    out = {}
    for w in sorted({b["window_s"] for b in batches}):
        mine = [b["header_bytes"] for b in batches
                if b["design"] == "incremental" and b["window_s"] == w]
        if mine:
            out[str(w)] = float(statistics.median(mine))
    return out


def plot(payload: dict[str, Any], results_dir: Path) -> Path:
    fig, (ax_b, ax_t, ax_s) = new_figure(ncols=3, size=(14.0, 4.2))
    colors = {"blob": "tab:orange", "incremental": "tab:green"}
    rows = payload.get("rows", [])
    for design in DESIGNS:
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["window_s"])
        xs = [r["window_s"] for r in mine]
        ax_b.plot(xs, [r["bytes_written_per_batch"] / 1e6 for r in mine], "o-",
                  color=colors[design], label=design)
        ax_t.plot(xs, [r["save_ms_per_batch"] for r in mine], "o-", color=colors[design],
                  label=design)
    header = payload.get("incremental_header_bytes_per_batch", {})
    ax_b.plot([int(w) for w in header], [v / 1e6 for v in header.values()], "x--",
              color=colors["incremental"], label="incremental: its header")
    for ax, label in ((ax_b, "MB written per micro-batch"),
                      (ax_t, "save CPU ms per micro-batch")):
        if rows:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("window (s)")
        ax.set_ylabel(label)
        if rows:
            ax.legend()
    ax_b.set_title(f"processor, 1 s batches, {RATE:,} tuples/s per stream")
    ax_t.set_title("save CPU time: serialization + state calls")
    spark = payload.get("spark")
    if spark:
        srows = spark["rows"]
        ax_s.bar([r["design"] for r in srows],
                 [r["changelog_bytes_per_batch"] / 1e6 for r in srows],
                 color=[colors[r["design"]] for r in srows])
        ax_s.set_ylabel("MB of RocksDB changelog per micro-batch")
        ax_s.set_title(f"real Spark: {spark['window_s']} s window, "
                       f"{spark['trigger_ms'] / 1000:g} s batches")
    else:
        ax_s.set_axis_off()
        ax_s.text(0.5, 0.5, "real Spark part not run", ha="center", va="center")
    return save_figure(fig, "state", results_dir)


def print_table(payload: dict[str, Any], console: Console) -> None:
    """The rows (with the Spark part's changelog bytes beside them), growth and targets."""
    table = Table(title="state written per micro-batch")
    for col in ("design", "window s", "KB written", "save ms", "Spark changelog KB"):
        table.add_column(col, justify="right")
    spark = payload.get("spark", {})
    changelog = {(r["design"], r["window_s"]): r["changelog_bytes_per_batch"]
                 for r in spark.get("rows", [])}
    for r in payload.get("rows", []):
        cl = changelog.get((r["design"], r["window_s"]))
        table.add_row(r["design"], str(r["window_s"]),
                      f"{r['bytes_written_per_batch'] / 1e3:,.1f}",
                      f"{r['save_ms_per_batch']:.2f}",
                      "" if cl is None else f"{cl / 1e3:,.1f}")
    console.print(table)
    console.print(f"growth, largest vs smallest window: "
                  f"{payload.get('growth_largest_vs_smallest_window')}; "
                  f"targets met: {payload.get('targets_met')}")
