"""What `harvest bench soak` reports: the JSON body (``soak.json``: the run's settings,
per-minute rows, growth, drift, targets) and ``soak.png``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.kit.output import save_figure
from bench.soak.plan import Soak
from bench.soak.rows import STEADY_FROM_MINUTE, Samples, minute_rows, native_growth, summarize

#: what each per-minute column measures (the JSON ``measures``)
MEASURES = {
    "state_mb": "state bytes per instance as last saved (header + stored pieces; "
                "operator_metrics extra state_bytes), last report of the minute",
    "state_sst_mb": "RocksDB SST bytes of the stateful operator per route key, "
                    "end of the minute (Spark's rocksdbSstFileSize)",
    "state_tuples": "tuples held per instance (operator_metrics state_size)",
    "driver_rss_mb": "the Python driver + its JVM, the minute's median",
    "worker_rss_mb": "every Python process under the JVM, the minute's median",
    "jvm_nmt_mb": "the driver JVM's native memory tracked by NMT (committed), "
                  "sampled once a minute",
    "jvm_untracked_mb": "the JVM's RSS minus what NMT tracks: native allocations "
                        "of JNI code (RocksDB) and malloc arenas",
    "z_p50": "GrubJoin's throttle fraction z, median of the minute's steps",
    "dropped_rate": "arrivals dropped by the input queue per second",
}


def payload(soak: Soak, samples: Samples, session: Any, load_start: Sequence[float]
            ) -> dict[str, Any]:
    """The body of ``soak.json`` for the finished ``soak`` run with Spark ``session``
    (its :class:`~pipeline.spark.session.SessionConfig`)."""
    spec = soak.spec
    rows = minute_rows(samples, soak.minutes, soak.cfg.spec.job.groups)
    return {
        "quick": soak.quick, "minutes": soak.minutes, "load": soak.load,
        "input_rate_per_stream": soak.rate, "capacity": soak.capacity.snapshot(),
        "spec": {"window_ms": max(spec.join.windows), "epsilon": spec.join.epsilon,
                 "shedding": spec.shedding.mode, "budget": spec.shedding.budget,
                 "trigger_ms": spec.job.trigger_ms, "groups": spec.job.groups,
                 "max_offsets_per_trigger": spec.job.max_offsets_per_trigger},
        "topic_prefix": soak.prefix,
        "driver_memory": session.driver_memory, "driver_java_options": session.jvm_options,
        "malloc": "jemalloc" if session.preload else "glibc",
        "state_memory_mb": session.state_memory_mb,
        "load_average": {"start": list(load_start), "end": list(os.getloadavg()),
                         "cpus": os.cpu_count()},
        "measures": MEASURES,
        "rows": rows, **summarize(rows),
        "jvm_native_growth_mb": native_growth(samples),
    }


def plot(rows: Sequence[Mapping[str, Any]], results_dir: Path, name: str = "soak") -> Path:
    """``soak.png``: rates, micro-batch duration, state and RSS per minute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minute = [r["minute"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    ax = axes[0][0]
    ax.plot(minute, [r["input_rate"] for r in rows], "o-", label="input rows/s")
    ax2 = ax.twinx()
    ax2.plot(minute, [r["output_rate"] for r in rows], "s-", color="tab:green",
             label="results/s")
    ax.set_title("rates (input left, results right)")
    ax.set_xlabel("minute")
    ax = axes[0][1]
    ax.plot(minute, [r["batch_ms_p50"] for r in rows], "o-", color="tab:purple")
    ax.set_title("micro-batch duration p50 (ms)")
    ax.set_xlabel("minute")
    ax = axes[1][0]
    ax.plot(minute, [r["state_mb"] for r in rows], "o-", color="tab:orange",
            label="saved state MB")
    ax.set_title("state per instance")
    ax.set_xlabel("minute")
    ax.set_ylabel("MB")
    ax3 = ax.twinx()
    ax3.plot(minute, [r.get("state_tuples") for r in rows], "x--", color="tab:gray",
             label="tuples")
    ax3.set_ylabel("tuples")
    ax = axes[1][1]
    ax.plot(minute, [r["driver_rss_mb"] for r in rows], "o-", label="driver (Python + JVM)")
    ax.plot(minute, [r["worker_rss_mb"] for r in rows], "s-", label="Python workers")
    ax.set_title("resident memory (MB)")
    ax.set_xlabel("minute")
    ax.legend(fontsize=8)
    for a in axes.flat:
        a.axvline(STEADY_FROM_MINUTE, color="k", lw=0.5, ls=":")
    return save_figure(fig, name, results_dir)
