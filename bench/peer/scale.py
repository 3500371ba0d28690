"""The long drains of `harvest bench peer` (issue 29, item 4) and where a row's time goes in
them (item 2).

Each workload's backlog of ≥ 1.2 M input rows (:func:`bench.peer.setup.scale_workloads`)
is drained in ≥ 20 micro-batches (``max_offsets_per_trigger`` = a 24th of it) by every
method: harvest's job, Spark's built-in join on its in-memory store and on RocksDB
(equi only: the band's RocksDB drain would add ~5 minutes to a run already near its
30), the read-and-decode floor and Spark's Kafka source alone (``raw-read``). Each
method runs ``reps`` times, the order rotating by one every repetition, so no method
always follows the same one; after one warm-up query of each (the JIT, the Python
workers, the planning caches). A row is a method's run with the best steady rows/s:
``steady_rows_per_s`` = input rows over busy time of the micro-batches after the first
two that read input; ``rows_per_s`` is over every busy batch (start-up included).

The profile is differential, in µs per input row of the steady batches' execution
(``addBatch``): ``kafka_source`` is the raw read's; ``decode_validate`` the floor's
less the raw read's; harvest's ``python_<phase>`` are its instances' own phase timers
(``[job] profile``, :mod:`pipeline.core.profile`; over the whole run) per input row, and
``jvm_route_shuffle_arrow_sink`` what is left of its execution: routing, the shuffle,
the Arrow hand-over both ways, result encoding and the Kafka sink; the built-in's
``join_state_sink`` is its execution less the floor's. Per micro-batch, ``fixed_ms`` are
Spark's other durations (planning, the offset and commit logs, the offset requests)
and the state operators' commit, medians over the steady batches.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.kit.profile import phase_seconds
from bench.peer.runs import (
    BUILTIN,
    BUILTIN_ROCKSDB,
    FLOOR,
    HARVEST,
    NO_RESULTS,
    RAW,
    STATE_STORES,
    QueryRun,
)
from bench.peer.setup import Bench, Workload, head

#: the methods of the long drains, per workload
SCALE_METHODS = {"equi": (HARVEST, BUILTIN, BUILTIN_ROCKSDB, FLOOR, RAW),
                 "band": (HARVEST, BUILTIN, FLOOR, RAW)}
#: micro-batches per drain (the trigger's share of the backlog)
BATCHES = 24


def _rate(run: QueryRun) -> float:
    return run.steady_rows_per_s or 0.0


def _row(w: Workload, run: QueryRun, runs: list[QueryRun]) -> dict[str, Any]:
    busy = run.busy_s
    row: dict[str, Any] = {
        "workload": w.name, "method": run.method, "input_rows": run.input_rows,
        "batches": len(run.busy), "busy_s": round(busy, 2),
        "rows_per_s": round(run.input_rows / busy, 1) if busy > 0 else None,
        "steady_rows_per_s": run.steady_rows_per_s,
        "state_store": STATE_STORES[run.method], "wall_s": run.wall_s,
        "stopped": run.stopped, "load_avg": list(run.load),
        "runs_steady_rows_per_s": [r.steady_rows_per_s for r in runs]}
    if run.method not in NO_RESULTS:
        row.update(results=len(run.ids), equals_oracle=run.ids == w.truth,
                   duplicates=run.records - len(run.ids))
    return row


def _exec_us(run: QueryRun) -> float | None:
    """µs of ``addBatch`` per input row over the steady batches."""
    steady = run.steady
    rows = sum(b.input_rows for b in steady)
    return sum(b.phases.get("addBatch", 0.0) for b in steady) * 1000.0 / rows if rows else None


def _fixed_ms(run: QueryRun) -> dict[str, float]:
    """Median ms per steady batch of Spark's durations outside ``addBatch`` and of the
    state operators' commit."""
    steady = run.steady
    if not steady:
        return {}
    names = sorted({k for b in steady for k in b.phases} - {"addBatch", "triggerExecution"})
    out = {k: round(statistics.median(b.phases.get(k, 0.0) for b in steady), 1) for k in names}
    out["state_commit"] = round(statistics.median(b.state.get("commit", 0.0) for b in steady), 1)
    return out


def profile(w: Workload, best: dict[str, QueryRun]) -> list[dict[str, Any]]:
    """The differential profile rows of ``w``'s best runs (module docstring)."""
    exec_us = {m: _exec_us(r) for m, r in best.items()}
    raw, floor = exec_us.get(RAW), exec_us.get(FLOOR)
    rows: list[dict[str, Any]] = []
    for method, run in best.items():
        if exec_us[method] is None:
            continue
        phases: dict[str, float] = {}
        if raw is not None:
            phases["kafka_source"] = raw if method != RAW else exec_us[method] or 0.0
        if method != RAW and floor is not None and raw is not None:
            phases["decode_validate"] = max(0.0, (floor if method != FLOOR
                                                  else exec_us[method] or 0.0) - raw)
        rest = (exec_us[method] or 0.0) - (floor or 0.0)
        if method == HARVEST:
            py = phase_seconds(run.python_profile, {})
            for phase, seconds in py.items():
                phases[f"python_{phase}"] = seconds * 1e6 / max(1, run.input_rows)
            phases["jvm_route_shuffle_arrow_sink"] = max(0.0, rest - sum(
                v for k, v in phases.items() if k.startswith("python_")))
        elif method in (BUILTIN, BUILTIN_ROCKSDB):
            phases["join_state_sink"] = max(0.0, rest)
        total = sum(phases.values())
        rows += [{"workload": w.name, "method": method, "phase": phase,
                  "us_per_row": round(us, 2),
                  "share": round(us / total, 4) if total > 0 else None}
                 for phase, us in phases.items()]
    return rows


def drain_part(spark: Any, bench: Bench, ws: dict[str, Workload], reps: int
               ) -> dict[str, Any]:
    """Every method's long drain of each workload, ``reps`` times in rotating order:
    ``rows`` (best steady run per method), ``ratio``, ``floor``, ``profile`` and the
    fixed per-batch costs (``fixed_ms``)."""
    rows: list[dict[str, Any]] = []
    prof: list[dict[str, Any]] = []
    fixed: dict[str, dict[str, dict[str, float]]] = {}
    for w in ws.values():
        methods = SCALE_METHODS[w.name]
        warm = head(w, 20)
        for method in methods:  # JVM, Python workers, planning caches
            print(f"[bench peer] warm-up {w.name} {method}", flush=True)
            bench.run(spark, warm, method, max_offsets=max(1, len(warm.records) // 4))
        runs: dict[str, list[QueryRun]] = {m: [] for m in methods}
        per_trigger = max(1, len(w.records) // BATCHES)
        for rep in range(reps):
            order = methods[rep % len(methods):] + methods[:rep % len(methods)]
            for method in order:
                run, _ = bench.run(spark, w, method, max_offsets=per_trigger,
                                   profile=method == HARVEST)
                runs[method].append(run)
                extra = "" if method in NO_RESULTS else (
                    f", {len(run.ids)} results (oracle {len(w.truth)})")
                print(f"[bench peer] drain {w.name} {method}: {run.input_rows} rows, "
                      f"{len(run.busy)} batches, steady {run.steady_rows_per_s} rows/s"
                      f"{extra}, load {run.load}", flush=True)
        best = {m: max(r, key=_rate) for m, r in runs.items()}
        rows += [_row(w, best[m], runs[m]) for m in methods]
        prof += profile(w, best)
        fixed[w.name] = {m: _fixed_ms(r) for m, r in best.items()}
    return {"rows": rows, "ratio": ratios(rows), "floor": floor_summary(rows),
            "profile": prof, "fixed_ms": fixed}


def _steady(rows: list[dict[str, Any]], workload: str, method: str) -> float | None:
    return next((r["steady_rows_per_s"] for r in rows
                 if r["workload"] == workload and r["method"] == method), None)


def ratios(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per workload, harvest's steady rows/s over each other method's."""
    out: dict[str, dict[str, float | None]] = {}
    for name in sorted({r["workload"] for r in rows}):
        h = _steady(rows, name, HARVEST)
        out[name] = {}
        for m in (BUILTIN, BUILTIN_ROCKSDB, FLOOR, RAW):
            other = _steady(rows, name, m)
            if other is not None:
                out[name][f"harvest/{m}"] = round(h / other, 3) if h and other else None
    return out


def floor_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The floor's rows and ``max_ratio``: its steady rows/s over the built-in join's, the
    most a join that reads through Spark's Kafka source and this decode could reach."""
    floors = [r for r in rows if r["method"] == FLOOR]
    max_ratio = {}
    for r in floors:
        peer = _steady(rows, r["workload"], BUILTIN)
        max_ratio[r["workload"]] = (round(r["steady_rows_per_s"] / peer, 3)
                                    if r["steady_rows_per_s"] and peer else None)
    return {"rows": floors, "max_ratio": max_ratio,
            "what": "Kafka read + Avro decode + validation of the same backlog, rows "
                    "discarded (noop sink); max_ratio = its steady rows/s over the built-in "
                    "join's: no join reading this way can exceed it"}
