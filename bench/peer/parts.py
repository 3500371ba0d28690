"""The parts of `harvest bench peer` (the package docstring says what each measures): each
runs its queries on a session it is given and returns its piece of ``peer.json``."""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.kit.spark import session_config, spark_session
from bench.peer.runs import (
    BUILTIN,
    HARVEST,
    METHODS,
    STATE_TIMES,
    Batch,
    QueryRun,
    keyed_stage_tasks,
    overlap,
)
from bench.peer.setup import (
    DISORDER,
    GROUPS,
    STREAMS,
    Bench,
    Workload,
    head,
    replication,
)
from pipeline.core.settings import Settings

#: near-empty micro-batches: tuples/s per stream, seconds, batches left out at the start
OVERHEAD_RATE, OVERHEAD_TRIGGER_MS, OVERHEAD_SKIP = 2.0, 1_000, 3
#: RocksDB memory of the bench's sessions (harvest's default is 64 MB): generous, so no
#: state store is squeezed (at 64 MB the built-in join on RocksDB drained at half speed)
PEER_STATE_MEMORY_MB = 2048


def _row(w: Workload, run: QueryRun, other: set[str] | None) -> dict[str, Any]:
    busy = run.busy_s
    return {"workload": w.name, "method": run.method, "input_rows": run.input_rows,
            "busy_s": round(busy, 2),
            "rows_per_s": round(run.input_rows / busy, 1) if busy > 0 else None,
            "results": len(run.ids),
            "results_equal": None if other is None else run.ids == other,
            "equals_oracle": run.ids == w.truth, "duplicates": run.records - len(run.ids),
            "batches": len(run.busy), "wall_s": run.wall_s, "stopped": run.stopped,
            "load_avg": list(run.load)}


def _best(runs: list[QueryRun]) -> QueryRun:
    return max(runs, key=lambda r: r.input_rows / r.busy_s if r.busy_s > 0 else 0.0)


def startup_part(spark: Any, bench: Bench, ws: dict[str, Workload], reps: int
                 ) -> dict[str, Any]:
    """The short drains (4 micro-batches each, start-up included): both joins on each
    workload's backlog, alternated, best of ``reps`` (``startup`` of ``peer.json``)."""
    warm = head(ws["equi"], 10)
    for method in METHODS:  # JVM, Python workers, planning caches
        print(f"[bench peer] warm-up {method}", flush=True)
        bench.run(spark, warm, method, max_offsets=len(warm.records) // 2)
    rows: list[dict[str, Any]] = []
    for w in ws.values():
        runs: dict[str, list[QueryRun]] = {m: [] for m in METHODS}
        for rep in range(reps):
            for method in METHODS if rep % 2 == 0 else METHODS[::-1]:
                run, _ = bench.run(spark, w, method, max_offsets=len(w.records) // 4)
                runs[method].append(run)
                print(f"[bench peer] startup {w.name} {method}: {run.input_rows} rows in "
                      f"{run.busy_s:.1f} s busy, {len(run.ids)} results (oracle "
                      f"{len(w.truth)}), load {run.load}", flush=True)
        best = {m: _best(r) for m, r in runs.items()}
        for m in METHODS:
            other = best[BUILTIN if m == HARVEST else HARVEST].ids
            row = _row(w, best[m], other)
            row["runs_rows_per_s"] = [round(r.input_rows / r.busy_s, 1) if r.busy_s else None
                                      for r in runs[m]]
            rows.append(row)
    ratio = {}
    for name in ws:
        h, b = (next(r for r in rows if r["workload"] == name and r["method"] == m)
                for m in METHODS)
        ratio[name] = (round(h["rows_per_s"] / b["rows_per_s"], 3)
                    if h["rows_per_s"] and b["rows_per_s"] else None)
    return {"startup": {"rows": rows, "ratio": ratio}}


def _overhead_workload(ws: dict[str, Workload], seconds: float) -> Workload:
    from connectors.workloads import WorkloadSpec, generate, parse_model
    from connectors.workloads.params import EquiParams

    base = ws["equi"]
    records = generate(WorkloadSpec(
        "equi", streams=len(STREAMS), rates=(OVERHEAD_RATE,), duration_s=seconds,
        disorder=(parse_model(DISORDER),), seed=23,
        params=EquiParams(domain=10_000, initial_skew=0.0, skew_min=0.0, skew_max=0.0,
                          gap_min_s=1e9, gap_max_s=1e9)))
    slack = max(int(r["arrival_time"]) - int(r["event_time"]) for r in records)
    return Workload("overhead", "equi", records, base.join, "hash", base.segment_ms,
                    OVERHEAD_RATE, slack, frozenset())


def _overhead_row(run: QueryRun, fed: list[Batch]) -> dict[str, Any]:
    """Medians of the near-empty batches ``fed``: duration, rows, Spark's phases and the
    state operators' times; and the duration of the batches without input that ran
    meanwhile (processing-time timers: a no-data batch every trigger)."""
    phases = sorted({k for b in fed for k in b.phases})
    first = fed[0].batch_id
    empty = [b.ms for b in run.batches if b.input_rows == 0 and b.batch_id > first]
    return {
        "batch_ms_p50": statistics.median(b.ms for b in fed),
        "rows_per_batch_p50": statistics.median(b.input_rows for b in fed),
        "batches": len(fed),
        "phases_ms_p50": {k: statistics.median(b.phases.get(k, 0.0) for b in fed)
                          for k in phases},
        "state_ms_p50": {k: statistics.median(b.state.get(k, 0.0) for b in fed)
                         for k in STATE_TIMES.values()},
        "empty_batch_ms_p50": statistics.median(empty) if empty else None,
        "empty_batches": len(empty),
        "load_avg": list(run.load)}


def overhead_part(spark: Any, bench: Bench, ws: dict[str, Workload], reps: int,
                  seconds: float) -> dict[str, Any]:
    """Median duration of near-empty micro-batches per method, best of ``reps``."""
    w = _overhead_workload(ws, seconds)
    detail: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
    for rep in range(reps):
        for method in METHODS if rep % 2 == 0 else METHODS[::-1]:
            run, _ = bench.run(spark, w, method, paced=1.0,
                               trigger_ms=OVERHEAD_TRIGGER_MS, max_s=seconds + 300)
            fed = [b for b in run.batches if b.input_rows > 0][OVERHEAD_SKIP:]
            if not fed:
                continue
            detail[method].append(_overhead_row(run, fed))
            print(f"[bench peer] overhead {method}: median batch "
                  f"{detail[method][-1]['batch_ms_p50']:.0f} ms over {len(fed)} batches, "
                  f"load {run.load}", flush=True)
    best = {m: min(d, key=lambda x: x["batch_ms_p50"]) for m, d in detail.items() if d}
    return {"batch_overhead_ms": {m: best[m]["batch_ms_p50"] for m in best},
            "overhead": {"rate_per_stream": OVERHEAD_RATE, "trigger_ms": OVERHEAD_TRIGGER_MS,
                         "seconds": seconds, "skip_batches": OVERHEAD_SKIP, "best": best,
                         "runs": detail}}


def scaling_part(spark: Any, bench: Bench, w: Workload, groups: tuple[int, ...], reps: int,
                 master: str, batches: int = 2) -> list[dict[str, Any]]:
    """The backlog of ``w`` drained by harvest over each number of route keys (one
    shuffle partition each) in ``batches`` micro-batches, alternated, best of ``reps``,
    with the task overlap and the keyed stage's longest tasks."""
    runs: dict[int, list[tuple[QueryRun, dict[str, Any]]]] = {g: [] for g in groups}
    warm = head(w, 10)  # a new session: JVM, Python workers, planning caches
    for g in groups:
        print(f"[bench peer] warm-up {master} G={g}", flush=True)
        bench.run(spark, warm, HARVEST, groups=g, partitions=g,
                  max_offsets=len(warm.records) // 2)
    for rep in range(reps):
        for g in groups if rep % 2 == 0 else groups[::-1]:
            since = time.time() * 1000.0
            run, _ = bench.run(spark, w, HARVEST, groups=g, partitions=g,
                               max_offsets=len(w.records) // batches)
            tasks = overlap(keyed_stage_tasks(spark, since, g))
            runs[g].append((run, tasks))
            print(f"[bench peer] scaling {master} G={g}: {run.input_rows / run.busy_s:.0f} "
                  f"rows/s, overlap {tasks['overlap_share']}, load {run.load}", flush=True)
    out = []
    for g in groups:
        run, tasks = max(runs[g], key=lambda x: x[0].steady_rows_per_s
                         or x[0].input_rows / max(x[0].busy_s, 1e-9))
        out.append({"workload": w.name, "groups": g, "master": master,
                    "busy_s": round(run.busy_s, 2),
                    "rows_per_s": round(run.input_rows / run.busy_s, 1),
                    "steady_rows_per_s": run.steady_rows_per_s,
                    "replication": replication(w, g), "input_rows": run.input_rows,
                    "results": len(run.ids), "equals_oracle": run.ids == w.truth,
                    "overlap": tasks, "batches": len(run.busy), "load_avg": list(run.load),
                    "runs_rows_per_s": [round(r.input_rows / r.busy_s, 1)
                                        for r, _ in runs[g]],
                    "runs_steady_rows_per_s": [r.steady_rows_per_s for r, _ in runs[g]]})
    return out


def peer_session(settings: Settings, master: str, ui: bool) -> Any:
    """The bench's session config on ``master`` (``ui``: with the REST API for tasks)."""
    return session_config(settings, "harvest-bench-peer", master=master,
                          shuffle_partitions=GROUPS, ui=ui,
                          state_memory_mb=PEER_STATE_MEMORY_MB)


def cluster_part(bench: Bench, w: Workload, reps: int) -> list[dict[str, Any]]:
    """Scaling on a standalone cluster of two one-core workers (2 and 4 route keys)."""
    from pipeline.spark.cluster import ClusterConfig, StandaloneCluster

    cluster = StandaloneCluster(ClusterConfig(
        state_dir=bench.workdir / "spark", master_port=7177, webui_port=8180,
        worker_webui_port=8181, worker_cores=1, worker_memory="1536m", workers=2,
        java_home=bench.settings.java_home))
    status = cluster.up()
    try:
        with spark_session(peer_session(bench.settings, str(status.master_url), True)) as spark:
            return scaling_part(spark, bench, w, (2, 4), reps,
                                f"standalone, {status.workers_alive} workers × 1 core")
    finally:
        cluster.down()
