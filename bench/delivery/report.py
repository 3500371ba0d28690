"""What `harvest bench delivery` reports: per sink the mean of its drains and its paced
run, the ratios, the summary and the correctness target (``delivery.json``), and
``delivery.png``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.delivery.measures import Run
from bench.delivery.workload import (
    DISORDER,
    DRAIN_OFFSETS,
    DRAIN_RATE,
    EPSILON,
    MODES,
    PACED_RATE,
    STEADY,
    TRIGGER_MS,
    WINDOW_MS,
)
from bench.kit.output import save_figure
from pipeline.core.figures import new_figure


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 2) if known else None


def payload(runs: list[Run], quick: bool, drain_n: int, paced_n: int,
             slack: int) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        d = [r for r in runs if r.phase == "drain" and r.delivery == mode]
        p = next(r for r in runs if r.phase == "paced" and r.delivery == mode)
        rows[mode] = {"throughput": _mean([r.throughput for r in d]),
                      "throughput_runs": [r.throughput for r in d],
                      "results_per_s": _mean([r.results_per_s for r in d]),
                      "drain_batch_ms_p50": _mean([r.batch_ms_p50 for r in d]),
                      "p50_ms": p.p50_ms, "p99_ms": p.p99_ms,
                      "paced_batch_ms_p50": p.batch_ms_p50,
                      "txn_ms_p50": _mean([r.txn_ms_p50 for r in d]),
                      "commit_ms_p50": _mean([r.commit_ms_p50 for r in d]),
                      "paced_txn_ms_p50": p.txn_ms_p50}
    alo, eo = rows["at-least-once"], rows["exactly-once"]
    ratio = (eo["throughput"] / alo["throughput"]
             if eo["throughput"] and alo["throughput"] else None)
    extra = (eo["p99_ms"] - alo["p99_ms"]
             if eo["p99_ms"] is not None and alo["p99_ms"] is not None else None)
    summary = [
        f"backlog drain: exactly-once {eo['throughput']} vs at-least-once "
        f"{alo['throughput']} input records/s (ratio {ratio:.2f})" if ratio else
        "backlog drain: n/a",
        f"paced p99 latency: exactly-once {eo['p99_ms']} ms vs at-least-once "
        f"{alo['p99_ms']} ms ({extra:+.0f} ms)" if extra is not None else "paced: n/a",
        f"exactly-once per micro-batch: transaction {eo['txn_ms_p50']} ms, of which "
        f"commit_transaction {eo['commit_ms_p50']} ms (medians, drain; micro-batch "
        f"p50 {eo['drain_batch_ms_p50']} ms); paced: transaction {eo['paced_txn_ms_p50']} "
        f"ms of a {eo['paced_batch_ms_p50']} ms micro-batch",
    ]
    ok = all(r.equals_oracle and r.duplicates == 0 for r in runs)
    return {
        "quick": quick, "trigger_ms": TRIGGER_MS, "window_ms": WINDOW_MS,
        "epsilon": EPSILON, "disorder": DISORDER, "slack_ms": slack,
        "drain": {"rate": DRAIN_RATE, "records": drain_n,
                  "max_offsets_per_trigger": DRAIN_OFFSETS},
        "paced": {"rate": PACED_RATE, "records": paced_n, "steady_span": list(STEADY)},
        "by_delivery": rows, "throughput_ratio_eo_over_alo": ratio,
        "p99_extra_ms_eo": extra, "runs": [asdict(r) for r in runs],
        "summary": summary,
        "targets_met": {"equal_to_oracle_without_duplicates": ok},
    }


def plot(payload: dict[str, Any], results_dir: Path) -> None:
    fig, axes = new_figure(ncols=2, nrows=1, size=(10.0, 4.0))
    rows = payload["by_delivery"]
    colors = ("tab:blue", "tab:orange")
    for ax, key, title in ((axes[0], "throughput", "backlog drain (input records/s)"),
                           (axes[1], "p99_ms", "paced run: p99 result latency (ms)")):
        values = [rows[m][key] or 0.0 for m in MODES]
        bars = ax.bar(list(MODES), values, color=colors)
        for bar, v in zip(bars, values, strict=True):
            ax.annotate(f"{v:.0f}", (bar.get_x() + bar.get_width() / 2, v),
                        ha="center", va="bottom", fontsize=9)
        ax.set_title(title)
    fig.suptitle(f"[output] delivery, same input (trigger {payload['trigger_ms']} ms)")
    save_figure(fig, "delivery", results_dir)
