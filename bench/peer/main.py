"""The run of `harvest bench peer` (the package docstring says what each part measures):
the parts asked for, merged into the existing ``peer.json``, then targets, summary, PNG."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.kit.broker import kafka_up
from bench.kit.output import read_payload, write_json
from bench.kit.spark import spark_session
from bench.peer.latency import latency_part
from bench.peer.parts import (
    PEER_STATE_MEMORY_MB,
    cluster_part,
    overhead_part,
    peer_session,
    scaling_part,
    startup_part,
)
from bench.peer.plot import plot
from bench.peer.report import TESTED_BY, summary, targets, targets_missed_why
from bench.peer.runs import STATE_STORES, load_avg
from bench.peer.scale import BATCHES, drain_part
from bench.peer.setup import (
    DISORDER,
    GROUPS,
    HARVEST_GROUPS,
    TRIGGER_MS,
    Bench,
    Workload,
    latency_workload,
    scale_workloads,
    workloads,
)
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings

PARTS = ("drain", "startup", "overhead", "latency", "scaling", "cluster")
#: the parts that read the long drains' backlogs
SCALE_PARTS = ("drain", "scaling")
#: ``scaling_cluster`` when no cluster rows were measured
CLUSTER_SKIPPED = ("the cluster part did not run: --quick leaves it out, and --only runs "
                   "it only when named (it starts and stops its own standalone cluster of "
                   "two one-core workers)")


def _parts(only: str | None, quick: bool) -> tuple[str, ...]:
    """The parts to run (``--only``, else all; ``--quick`` leaves ``cluster`` out)."""
    parts = PARTS if only is None else tuple(p.strip() for p in only.split(",") if p.strip())
    bad = [p for p in parts if p not in PARTS]
    if bad:
        raise ConfigError(f"--only: bench peer parts are {','.join(PARTS)}, got {bad}")
    if quick and only is None:
        parts = tuple(p for p in parts if p != "cluster")
    return parts


def _sizes(ws: dict[str, Workload]) -> dict[str, Any]:
    return {w.name: {"tuples_per_stream": w.per_stream, "rate": w.rate, "join": w.join,
                     "routing": w.routing, "segment_ms": w.segment_ms, "slack_ms": w.slack_ms,
                     "true_results": len(w.truth)} for w in ws.values()}


def _start_payload(old: dict[str, Any], quick: bool, ws: dict[str, dict[str, Workload]]
                   ) -> dict[str, Any]:
    """The existing JSON's keys, with this run's setup: the sizes each part ran at (the
    quick and the full workloads of each kind), the state stores, the load."""
    payload: dict[str, Any] = dict(old)
    size = "quick" if quick else "full"
    sizes = dict(payload.get("workloads", {}))
    for kind, wl in ws.items():
        sizes[kind] = {**sizes.get(kind, {}), size: _sizes(wl)}
    payload.update(load_avg_start=load_avg(), workloads=sizes, groups=HARVEST_GROUPS,
                   builtin_partitions=GROUPS,
                   trigger_ms=TRIGGER_MS, disorder=DISORDER, batches_per_drain=BATCHES,
                   state_stores={m: (f"{v}, {PEER_STATE_MEMORY_MB} MB shared"
                                     if v and v.startswith("RocksDB") else v)
                                 for m, v in STATE_STORES.items() if v})
    return payload


def _local_parts(parts: tuple[str, ...], bench: Bench, ws: dict[str, dict[str, Workload]],
                 reps: int, payload: dict[str, Any]) -> None:
    """drain, startup, overhead, latency: one ``local[2]`` session without UI."""
    if not {"drain", "startup", "overhead", "latency"} & set(parts):
        return
    with spark_session(peer_session(bench.settings, "local[2]", False)) as spark:
        if "drain" in parts:
            payload.update(drain_part(spark, bench, ws["scale"], reps))
        if "startup" in parts:
            payload.update(startup_part(spark, bench, ws["startup"], reps))
        if "overhead" in parts:
            payload.update(overhead_part(spark, bench, ws["startup"], reps,
                                         20.0 if bench.quick else 45.0))
        if "latency" in parts and payload.get("rows"):
            payload["latency"] = latency_part(spark, bench, ws["latency"]["equi"],
                                              payload["rows"])


def _scaling_parts(parts: tuple[str, ...], bench: Bench, w: Workload, long: Workload | None,
                   reps: int, payload: dict[str, Any]) -> None:
    """scaling (``local[2]`` with UI, on the long equi drain ``long``) and cluster (the
    short band drain ``w``), replacing their old rows."""
    scaling = [r for r in payload.get("scaling", [])
               if not (("scaling" in parts and r["master"] == "local[2]")
                       or ("cluster" in parts and r["master"] != "local[2]"))]
    if "scaling" in parts:
        assert long is not None, "the scaling part reads the long equi drain"
        with spark_session(peer_session(bench.settings, "local[2]", True)) as spark:
            scaling = scaling_part(spark, bench, long, (1, 2), reps, "local[2]",
                                   BATCHES) + scaling
    if "cluster" in parts:
        scaling += cluster_part(bench, w, reps)
    payload["scaling"] = scaling


def _finish(payload: dict[str, Any], parts: tuple[str, ...], quick: bool) -> None:
    """When each part ran, why there are no cluster rows (if none), the load at the end,
    the targets and the summary."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    payload["parts"] = {**payload.get("parts", {}),
                        **{p: {"quick": quick, "at": stamp} for p in parts}}
    payload["quick"] = all(v["quick"] for v in payload["parts"].values())
    if not any(r["master"] != "local[2]" for r in payload["scaling"]):
        payload["scaling_cluster"] = {"run": False, "why": CLUSTER_SKIPPED}
    else:
        payload.pop("scaling_cluster", None)
    payload["load_avg_end"] = load_avg()
    payload["targets_met"] = targets(payload)
    payload["targets_missed_why"] = targets_missed_why(payload)
    payload["tested_by"] = TESTED_BY
    payload["summary"] = summary(payload)


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Benchmark entry point (see the package docstring)."""
    parts = _parts(only, quick)
    settings = kafka_up(settings)
    old = read_payload("peer", results_dir) if only is not None else {}
    reps = 1 if quick else 2
    ws = {"startup": workloads(quick)}
    if set(SCALE_PARTS) & set(parts):
        ws["scale"] = scale_workloads(quick)
    if "latency" in parts:
        ws["latency"] = {"equi": latency_workload(quick)}
    bench = Bench(settings, quick)
    payload = _start_payload(old, quick, ws)
    if "startup" not in parts and "rows" in old and "startup" not in old:
        payload["startup"] = {"rows": old["rows"], "ratio": old.get("ratio", {})}
    payload.pop("streaming", None)
    _local_parts(parts, bench, ws, reps, payload)
    _scaling_parts(parts, bench, ws["startup"]["band"], ws.get("scale", {}).get("equi"), reps,
                   payload)
    _finish(payload, parts, quick)
    write_json("peer", payload, results_dir)
    plot(payload, results_dir)
    for line in payload["summary"]:
        print(line)
    equal = all(r.get("results_equal") is not False and r.get("equals_oracle", True)
                for r in payload.get("rows", []) + payload.get("startup", {}).get("rows", []))
    return 0 if equal else 1
