"""Per-minute rows of `harvest bench soak` from its samples, and the growth, drift and
targets computed from them (the definitions are in :mod:`bench.soak`'s docstring)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.soak.memory import MemorySample

#: growth is measured from this minute on (the window fill and the controllers'
#: convergence are over by then) to the last one
STEADY_FROM_MINUTE = 5
GROWTH_LIMIT = 0.05
DRIFT_LIMIT = 0.10

@dataclass(frozen=True)
class BatchSample:
    """One completed micro-batch: when (seconds since the input started), rows in,
    results out, its duration and the stateful operator's SST bytes after it."""

    t_s: float
    input_rows: int
    results: int
    batch_ms: float
    state_bytes: float | None


@dataclass
class Samples:
    """What the watch loop collected."""

    batches: list[BatchSample] = field(default_factory=list)
    #: (seconds since the input started, memory)
    memory: list[tuple[float, MemorySample]] = field(default_factory=list)
    #: (seconds since the input started, instance, state_size tuples, state bytes or None)
    state_tuples: list[tuple[float, str, int, float | None]] = field(default_factory=list)
    load: list[tuple[float, float]] = field(default_factory=list)
    #: (seconds since the input started, z, queue drops) of each shedder metrics row
    shed: list[tuple[float, float, int]] = field(default_factory=list)
    #: (seconds since the input started, the driver JVM's NMT committed MB by category)
    nmt: list[tuple[float, dict[str, float]]] = field(default_factory=list)


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def minute_rows(samples: Samples, minutes: int, instances: int) -> list[dict[str, Any]]:
    """One row per minute ``1 … minutes`` (minute k covers seconds [60(k−1), 60k) after
    the input started); a minute without a sample carries None."""
    rows: list[dict[str, Any]] = []
    last_state: float | None = None
    for k in range(1, minutes + 1):
        lo, hi = 60.0 * (k - 1), 60.0 * k
        batches = [b for b in samples.batches if lo <= b.t_s < hi]
        mem = [m for t, m in samples.memory if lo <= t < hi]
        states = [b.state_bytes for b in batches if b.state_bytes is not None]
        if states:
            last_state = states[-1]
        tuples: dict[str, int] = {}
        saved: dict[str, float] = {}
        for t, inst, n, size in samples.state_tuples:
            if lo <= t < hi:
                tuples[inst] = n
                if size is not None:
                    saved[inst] = size
        loads = [v for t, v in samples.load if lo <= t < hi]
        shed = [(z, d) for t, z, d in samples.shed if lo <= t < hi]
        nmt = [n for t, n in samples.nmt if lo <= t < hi and n]
        jvm_rss = _median([m.jvm_mb for m in mem])
        nmt_total = nmt[-1].get("Total") if nmt else None
        rows.append({
            "minute": k,
            "input_rate": sum(b.input_rows for b in batches) / 60.0,
            "output_rate": sum(b.results for b in batches) / 60.0,
            "batch_ms_p50": _median([b.batch_ms for b in batches]),
            "state_mb": (round(sum(saved.values()) / len(saved) / 1e6, 3) if saved
                         else None),
            "driver_rss_mb": _round(_median([m.driver_mb for m in mem])),
            "worker_rss_mb": _round(_median([m.worker_mb for m in mem])),
            "batches": len(batches),
            "state_tuples": (round(sum(tuples.values()) / len(tuples)) if tuples else None),
            "state_sst_mb": (None if last_state is None
                             else round(last_state / 1e6 / max(1, instances), 3)),
            "jvm_rss_mb": _round(_median([m.jvm_mb for m in mem])),
            "python_driver_rss_mb": _round(_median([m.python_driver_mb for m in mem])),
            "workers": max((m.workers for m in mem), default=0),
            "load_avg_1m": _round(_median(loads)),
            "jvm_nmt_mb": _round(nmt_total),
            # native memory NMT does not see: malloc from JNI code (RocksDB), glibc arenas
            "jvm_untracked_mb": (None if nmt_total is None or jvm_rss is None
                                 else round(jvm_rss - nmt_total, 1)),
            "z_p50": _round(_median([z for z, _ in shed]), 4),
            "dropped_rate": round(sum(d for _, d in shed) / 60.0, 1),
        })
    return rows


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def growth(rows: Sequence[Mapping[str, Any]], key: str,
           first: int = STEADY_FROM_MINUTE) -> float | None:
    """Relative change of ``key`` from minute ``first`` to the last minute with a value."""
    by = {int(r["minute"]): r.get(key) for r in rows}
    start = by.get(first)
    last = [float(v) for m in sorted(by) if m > first and (v := by[m]) is not None]
    if start is None or not last or not float(start) > 0:
        return None
    return last[-1] / float(start) - 1.0


def output_drift(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The last 5 minutes' mean output rate over that of minutes 5–10, minus 1 (None for
    a run too short to have both spans apart: under 11 minutes)."""
    by = {int(r["minute"]): float(r["output_rate"]) for r in rows}
    if not by:
        return None
    last = max(by)
    mid = [by[m] for m in range(STEADY_FROM_MINUTE, STEADY_FROM_MINUTE + 6) if m in by]
    tail = [by[m] for m in range(last - 4, last + 1) if m in by]
    if last < STEADY_FROM_MINUTE + 6 or not mid or not tail:
        return None
    base = sum(mid) / len(mid)
    return (sum(tail) / len(tail)) / base - 1.0 if base > 0 else None


def native_growth(samples: Samples, first: int = STEADY_FROM_MINUTE
                  ) -> dict[str, float]:
    """The driver JVM's NMT categories that changed from the start of minute ``first``
    to the last sample (committed MB, largest change first)."""
    at = [(t, n) for t, n in samples.nmt if n]
    start = [n for t, n in at if t >= 60.0 * (first - 1)]
    if not start:
        return {}
    a, b = start[0], at[-1][1]
    delta = {k: round(b.get(k, 0.0) - a.get(k, 0.0), 1) for k in set(a) | set(b)}
    return dict(sorted(((k, v) for k, v in delta.items() if abs(v) >= 0.1),
                       key=lambda kv: -abs(kv[1])))


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Growth, drift and the targets of a run's rows."""
    state = growth(rows, "state_mb")
    tuples = growth(rows, "state_tuples")
    rss = {k: growth(rows, k) for k in ("driver_rss_mb", "worker_rss_mb")}
    known = [v for v in rss.values() if v is not None]
    rss_growth = max(known, key=abs) if known else None
    drift = output_drift(rows)
    return {
        "state_growth": state,
        "state_tuples_growth": tuples,
        "rss_growth": rss_growth,
        "rss_growth_by_process": rss,
        "output_drift": drift,
        "targets_met": {
            "state_growth<5%": state is not None and state < GROWTH_LIMIT,
            "rss_growth<5%": rss_growth is not None and all(v < GROWTH_LIMIT for v in known),
            "output_drift<=10%": drift is not None and abs(drift) <= DRIFT_LIMIT,
        },
    }
