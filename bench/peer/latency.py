"""The latency sweep of `harvest bench peer` (issue 29, item 4): result latency when the
input arrives in real time at a share of a method's own steady capacity.

The equi input (:func:`bench.peer.setup.latency_workload`) is published in real time,
sped up so that it arrives at ``load`` × the method's steady rows/s of the long equi
drain (:mod:`bench.peer.scale`), for each load of :data:`LOADS`; and once more for
harvest at :data:`AT_BUILTIN` × the *built-in's* capacity, the offered rate the
built-in's 0.8× run got, so the two compare at the same rate. p50 / p99 result latency
over the steady span (20–90 % of the completions; :func:`bench.peer.runs.steady_latency`).
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.peer.runs import BUILTIN, HARVEST, METHODS, steady_latency
from bench.peer.setup import STREAMS, Bench, Workload

#: shares of each method's own steady capacity
LOADS = (0.5, 0.8, 1.0)
#: harvest's extra point: this share of the built-in's capacity (the target's rate)
AT_BUILTIN = 0.8


def _point(spark: Any, bench: Bench, w: Workload, method: str, offered: float,
           load: float, basis: str) -> dict[str, Any]:
    speedup = offered / (w.rate * len(STREAMS))
    run, _ = bench.run(spark, w, method, paced=speedup, max_s=len(w.records) / offered + 600)
    p50, p99, n = steady_latency(run.latencies)
    print(f"[bench peer] latency {method} at {load:g}x {basis} ({offered:.0f} rows/s): "
          f"p50 {p50} p99 {p99} ms, load {run.load}", flush=True)
    return {"workload": w.name, "method": method, "load": load, "capacity_of": basis,
            "offered_rows_per_s": round(offered, 1), "p50_ms": p50, "p99_ms": p99,
            "latencies": n, "results": len(run.ids), "equals_oracle": run.ids == w.truth,
            "batches": len(run.busy),
            "batch_ms_p50": statistics.median(b.ms for b in run.busy) if run.busy else None,
            "wall_s": run.wall_s, "stopped": run.stopped, "load_avg": list(run.load)}


def latency_part(spark: Any, bench: Bench, w: Workload, rows: list[dict[str, Any]]
                 ) -> list[dict[str, Any]]:
    """The sweep's rows (module docstring); ``rows`` are the long drains' rows."""
    cap = {m: next((r["steady_rows_per_s"] for r in rows
                    if r["workload"] == w.name and r["method"] == m), None) for m in METHODS}
    out: list[dict[str, Any]] = []
    for load in LOADS:
        for method in METHODS:
            own = cap[method]
            if own:
                out.append(_point(spark, bench, w, method, load * own, load, method))
    peer = cap[BUILTIN]
    if peer:
        out.append(_point(spark, bench, w, HARVEST, AT_BUILTIN * peer, AT_BUILTIN, BUILTIN))
    return out
