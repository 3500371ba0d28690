"""The demo's summary (rich tables) and figure (z, K and output rate over stream time)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pipeline.quality.evaluate import evaluate


def per_second(times_ms: Sequence[int], start_ms: int, seconds: int, bucket_s: int) -> list[float]:
    """Counts per ``bucket_s`` of stream time, divided by ``bucket_s`` (rate per second)."""
    edges = np.arange(start_ms, start_ms + (seconds + bucket_s) * 1000, bucket_s * 1000)
    counts, _ = np.histogram(np.asarray(times_ms, dtype=np.int64), bins=edges)
    return [float(c) / bucket_s for c in counts]


Series = dict[str, list[tuple[int, float]]]


def metric_series(metrics: Sequence[dict[str, Any]], key: str) -> Series:
    """``instance -> [(time, value)]`` sorted by time, for one metrics field.

    For ``z`` only the shedder's own rows count (those carrying harvest fractions): the
    disorder policy's rows at other interval boundaries repeat a default z.
    """
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    shedder_rows = key == "z" and any(row.get("harvest_fractions") for row in metrics)
    for row in metrics:
        if shedder_rows and not row.get("harvest_fractions"):
            continue
        value = row.get(key)
        if value is not None:
            out[str(row.get("instance"))].append((int(row["time"]), float(value)))
    return {k: sorted(v) for k, v in sorted(out.items())}


#: the demo's ``timeline`` bucket (stream seconds)
TIMELINE_BUCKET_S = 10


def _mean_in(series: Series, lo: int, hi: int) -> float | None:
    values = [v for pts in series.values() for (tm, v) in pts if lo <= tm < hi]
    return round(float(np.mean(values)), 4) if values else None


def timeline(run: Any, bucket_s: int = TIMELINE_BUCKET_S) -> list[dict[str, Any]]:
    """Per ``bucket_s`` of stream time from the first input: ``{t_s, results,
    true_results, z, k_ms}`` — distinct results emitted and the oracle's, by result
    time, and the mean throttle z (the shedder's rows) and K over the instances' metrics
    rows in the bucket (None where none fell in it)."""
    if not run.dump:
        return []
    start = min(int(r["event_time"]) for r in run.dump)
    seconds = int(np.ceil(_span_s(run.dump)))
    distinct = {str(r["id"]): int(r["result_time"]) for r in run.results}
    ours = per_second(list(distinct.values()), start, seconds, bucket_s)
    true = per_second([int(r["result_time"]) for r in run.truth], start, seconds, bucket_s)
    z, k = metric_series(run.metrics, "z"), metric_series(run.metrics, "k_ms")
    rows = []
    for i, (n_ours, n_true) in enumerate(zip(ours, true, strict=True)):
        lo = start + i * bucket_s * 1000
        hi = lo + bucket_s * 1000
        rows.append({"t_s": i * bucket_s, "results": round(n_ours * bucket_s),
                     "true_results": round(n_true * bucket_s),
                     "z": _mean_in(z, lo, hi), "k_ms": _mean_in(k, lo, hi)})
    return rows


_SHEDDING_NAMES = {"grubjoin": "GrubJoin", "taildrop": "tail drop", "randomdrop": "random drop",
                   "randomdrop-static": "static random drop", "off": "no shedding"}
_DISORDER_NAMES = {"quality": "quality K", "fixed": "fixed K", "max": "max-delay K"}


def method_label(spec: Any) -> str:
    """The method the run used, for the figure's legend (e.g. ``GrubJoin + quality K``;
    ``spec`` None: ``the job``)."""
    if spec is None:
        return "the job"
    shed = _SHEDDING_NAMES.get(spec.shedding.mode, spec.shedding.mode)
    disorder = _DISORDER_NAMES.get(spec.disorder.mode, f"{spec.disorder.mode} K")
    return f"{shed} + {disorder}"


def summarize(run: Any, duration_s: float) -> dict[str, Any]:
    """The numbers of the summary (also written as JSON next to the figure)."""
    quality = evaluate(run.truth, run.results)
    z = [v for pts in metric_series(run.metrics, "z").values() for _, v in pts]
    k = [float(m["k_ms"]) for m in run.metrics if m.get("k_ms") is not None]
    return {
        "topic_prefix": run.prefix,
        "input_rate_per_stream": run.rate,
        "input_tuples_per_s": run.produced / duration_s,
        "produced": run.produced,
        "spark_input_rows": run.spark_input,
        "spark_results": run.spark_results,
        "consumed_results": len(run.results),
        "consumed_metrics": len(run.metrics),
        "true_results": quality.true,
        "distinct_results": quality.produced,
        "duplicates": quality.duplicates,
        "results_per_s": quality.produced / duration_s,
        "true_results_per_s": quality.true / duration_s,
        "recall": quality.recall,
        "precision": quality.precision,
        "z_mean": float(np.mean(z)) if z else None,
        "z_min": float(np.min(z)) if z else None,
        "k_ms_max": float(np.max(k)) if k else None,
        "capacity": run.capacity.snapshot() if run.capacity is not None else None,
        "timings_s": {k2: round(v, 1) for k2, v in run.timings.items()},
        "method": method_label(getattr(run, "spec", None)),
        "timeline": timeline(run),
    }


def print_summary(summary: dict[str, Any], run: Any, console: Console, bucket_s: int = 10) -> None:
    """Counts, quality and a z/K-over-time table."""
    t = Table(title=f"harvest demo — {run.prefix}")
    t.add_column("what")
    t.add_column("value", justify="right")
    rows = [
        ("input rate (tuples/s, all streams)", f"{summary['input_tuples_per_s']:.0f}"),
        ("records produced", f"{summary['produced']:,}"),
        ("records read by Spark", f"{summary['spark_input_rows']:,}"),
        ("results written by Spark", f"{summary['spark_results']:,}"),
        ("results consumed", f"{summary['consumed_results']:,}"),
        ("true results (oracle)", f"{summary['true_results']:,}"),
        ("results/s (stream time) ours / true",
         f"{summary['results_per_s']:.0f} / {summary['true_results_per_s']:.0f}"),
        ("recall", f"{summary['recall']:.3f}"),
        ("precision", f"{summary['precision']:.3f}"),
        ("duplicates", f"{summary['duplicates']}"),
    ]
    for what, value in rows:
        t.add_row(what, value)
    console.print(t)
    z = metric_series(run.metrics, "z")
    k = metric_series(run.metrics, "k_ms")
    tt = Table(title=f"z and K over stream time (per {bucket_s} s, mean over instances)")
    for col in ("stream time s", "z", "K ms", "results/s"):
        tt.add_column(col, justify="right")
    start = min((int(r["event_time"]) for r in run.dump), default=0)
    rates = per_second([int(r["result_time"]) for r in run.results], start,
                       int(np.ceil(len(run.dump) and _span_s(run.dump))), bucket_s)
    for i, rate in enumerate(rates):
        lo, hi = start + i * bucket_s * 1000, start + (i + 1) * bucket_s * 1000
        zs = [v for pts in z.values() for (tm, v) in pts if lo <= tm < hi]
        ks = [v for pts in k.values() for (tm, v) in pts if lo <= tm < hi]
        tt.add_row(f"{i * bucket_s}", f"{np.mean(zs):.3f}" if zs else "-",
                   f"{np.mean(ks):.0f}" if ks else "-", f"{rate:.0f}")
    console.print(tt)


def _span_s(dump: Sequence[dict[str, Any]]) -> float:
    times = [int(r["event_time"]) for r in dump]
    return (max(times) - min(times)) / 1000.0 + 1.0


def plot(run: Any, paths: Sequence[Path]) -> None:
    """Three panels over stream time: z per instance, K per instance, output rate."""
    from pipeline.core.figures import new_figure

    fig, axes = new_figure(ncols=1, nrows=3, size=(8.0, 8.0))
    start = min((int(r["event_time"]) for r in run.dump), default=0)
    for inst, pts in metric_series(run.metrics, "z").items():
        axes[0].plot([(tm - start) / 1000 for tm, _ in pts], [v for _, v in pts],
                     label=f"instance {inst}")
    axes[0].set_ylabel("throttle z")
    axes[0].set_ylim(0, 1.05)
    axes[0].legend(loc="lower left", fontsize=8)
    for inst, pts in metric_series(run.metrics, "k_ms").items():
        axes[1].step([(tm - start) / 1000 for tm, _ in pts], [v for _, v in pts],
                     where="post", label=f"instance {inst}")
    axes[1].set_ylabel("K (ms)")
    axes[1].legend(loc="upper left", fontsize=8)
    seconds = int(np.ceil(_span_s(run.dump))) if run.dump else 0
    ours = per_second([int(r["result_time"]) for r in run.results], start, seconds, 2)
    true = per_second([int(r["result_time"]) for r in run.truth], start, seconds, 2)
    xs = [2 * i for i in range(len(ours))]
    axes[2].plot(xs, true, label="true (oracle)", color="grey", linestyle="--")
    axes[2].plot(xs, ours, label=f"harvest ({method_label(getattr(run, 'spec', None))})")
    axes[2].set_ylabel("results / s")
    axes[2].set_xlabel("stream time (s)")
    axes[2].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"harvest demo {run.prefix}: {run.rate:.0f} tuples/s per stream")
    import matplotlib.pyplot as plt

    for i, path in enumerate(paths):
        path.parent.mkdir(parents=True, exist_ok=True)
        if i == 0:
            fig.tight_layout()
        fig.savefig(path, dpi=110)
    plt.close(fig)
