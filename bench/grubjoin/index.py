"""``index_effect`` of `harvest bench grubjoin` (ours, beyond the paper): wall clock of
the exact 3-way band join with and without per-basic-window sorted indexes."""

from __future__ import annotations

import time
from typing import Any

from bench.grubjoin.sim import ALIGNED, engine_config, workload
from pipeline.core.logging import get_logger
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.mjoin import MWayJoin

log = get_logger("bench.grubjoin")


def index_effect(quick: bool) -> list[dict[str, Any]]:
    """Wall clock of the exact (unshed) 3-way band join with and without
    per-basic-window sorted indexes (``JoinConfig.index``), sensors workload (aligned),
    w = 20 s, b = 2 s, ε = 1. Windows are pre-filled with w seconds of input, then every
    tuple of the measured span is probed by both joins back to back (interleaved
    timing); both must give the same result count (the unit tests check row-for-row
    equality)."""
    prefill_s, measure_s = 20.0, (4.0 if quick else 5.0)
    rows: list[dict[str, Any]] = []
    for rate in ([50.0, 200.0] if quick else [50.0, 100.0, 200.0, 400.0, 800.0]):
        records = workload(3, rate, ALIGNED[0], ALIGNED[1], prefill_s + measure_s, seed=3)
        cfg = engine_config(3, "off", None)
        index = {n: i for i, n in enumerate(cfg.streams)}
        enc = [(index[r["stream"]], int(r["event_time"]), int(r["seq"]),
                cfg.predicate.encode(r)) for r in records]
        prefill_ms = int(prefill_s * 1000)
        jc = cfg.join_config()
        joins = [MWayJoin(JoinConfig(jc.windows, jc.basic_window_ms, jc.predicate,
                                     index=indexed)) for indexed in (False, True)]
        # both joins see every tuple back to back, so machine noise hits both alike
        results, cost, wall = [0, 0], [0, 0], [0.0, 0.0]
        probes = 0
        for stream, ts, seq, e in enc:
            if ts < prefill_ms:
                for join in joins:
                    join.insert(stream, ts, seq, e)
                    join.join_time = max(join.join_time, ts)
                continue
            probes += 1
            for v, join in enumerate(joins):
                t0 = time.perf_counter()
                out = join.process(stream, ts, seq, e)
                wall[v] += time.perf_counter() - t0
                results[v] += out.count
                cost[v] += out.cost
        for v, indexed in enumerate((False, True)):
            rows.append({"input_rate": rate, "indexed": indexed, "results": results[v],
                         "probes": probes, "wall_s": round(wall[v], 4),
                         "us_per_probe": wall[v] / max(1, probes) * 1e6,
                         "cost_units": cost[v]})
            log.info("index_effect", rate=rate, indexed=indexed, wall=round(wall[v], 2),
                     results=results[v])
    return rows


def index_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per input rate: unindexed / indexed wall clock, and whether both found as many
    results."""
    speed: dict[str, dict[str, Any]] = {}
    for rate in sorted({r["input_rate"] for r in rows}):
        a = next(r for r in rows if r["input_rate"] == rate and not r["indexed"])
        b = next(r for r in rows if r["input_rate"] == rate and r["indexed"])
        speed[str(rate)] = {"speedup": a["wall_s"] / max(b["wall_s"], 1e-9),
                            "same_results": a["results"] == b["results"]}
    return speed
