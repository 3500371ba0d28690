"""The rows of each part of `harvest bench diffusion` (:mod:`bench.diffusion.parts` runs
them): ``scaling`` (Fig. 11), ``skew`` (ours), ``streams`` (Fig. 13), ``windows``
(Fig. 14), ``selectivity`` (Fig. 15), ``bursty`` (Fig. 16), ``routing_cost`` (Figs.
9/10) and ``calibrate`` (the model against the real Spark drain of `bench peer`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.diffusion.cluster import run_keys
from bench.diffusion.measures import measure
from bench.diffusion.oracle import oracle_rows
from bench.diffusion.parts import (
    ATR_T,
    RATE,
    W_MS,
    Runner,
    Sizes,
    band_eps,
    base,
    heterogeneous_speeds,
    make_router,
)
from bench.diffusion.routers import StaticRouter
from bench.diffusion.workload import from_records, make_workload
from pipeline.diffusion.ctr import CTRRouter
from pipeline.diffusion.load import KeyLoads
from pipeline.diffusion.routing import RouterConfig

Rows = list[dict[str, Any]]
PER_WINDOW = RATE * W_MS / 1000.0


def scaling(run: Runner, sz: Sizes) -> Rows:
    """Fig. 11: the 4-way join on G = 1..16 hosts; heterogeneous hosts at the largest G;
    the batch-rate bound of T at the largest G."""
    wl = base("scaling-4way", 4, sz.scaling_ms)
    rows = [run.row("scaling", wl, r, g) for r in ("atr", "atr-adaptive", "ctr")
            for g in sz.groups]
    g = max(sz.groups)
    speeds = heterogeneous_speeds(g)
    rows += [run.row("heterogeneous", wl, r, g, speeds=speeds) for r in ("atr", "atr-ll")]
    short = base("batch-4way", 4, sz.figure_ms)
    default_t = max(1, W_MS // (g - 1))
    for t in (ATR_T, default_t):
        row = run.row("batch", short, "atr-ll", g, segment_ms=t, segment_ms_used=t,
                      batch_bound=round(1 + W_MS / t, 2))
        row["batch_scaling"] = round(row["batch_rate"] / run.central[short.name], 3)
        rows.append(row)
    return rows


def skew(run: Runner, sz: Sizes) -> Rows:
    """Zipf-skewed equi-join keys: hash routing against ATR (value-independent)."""
    rows = []
    for z in (0.0, 0.5, 1.0, 1.5):
        wl = make_workload(f"skew-{z}", windows=(W_MS,) * 3, rates=(100.0,) * 3,
                           duration_ms=3 * sz.figure_ms, predicate="equi", zipf=z,
                           domain=1000, seed=11)
        rows += [run.row("skew", wl, r, sz.figure_groups, zipf=z)
                 for r in ("hash", "atr", "atr-ll")]
    return rows


def streams(run: Runner, sz: Sizes) -> Rows:
    """Fig. 13: 2- to 6-way joins."""
    return [run.row("streams", base(f"streams-{m}", m, sz.figure_ms), r, sz.figure_groups,
                    streams=m) for m in (2, 3, 4, 5, 6) for r in ("atr", "ctr")]


def windows(run: Runner, sz: Sizes) -> Rows:
    """Fig. 14: the 3-way join at 100 tuples/s per stream with windows from W_MS to
    10 W_MS (ε fixed, about one result per tuple at 5 W_MS; ATR's T fixed at 10 W_MS, so
    the longest window reaches T)."""
    eps = band_eps(3, 100.0 * 5 * W_MS / 1000.0)
    return [run.row("windows", base(f"windows-{w}", 3, 2 * sz.figure_ms, windows=w, eps=eps,
                                    rate=100.0), r, sz.figure_groups, window_ms=w)
            for w in (W_MS, 2 * W_MS, 5 * W_MS, 10 * W_MS) for r in ("atr", "ctr")]


def selectivity(run: Runner, sz: Sizes) -> Rows:
    """Fig. 15: the 3-way join at pair selectivities σ ≈ 2ε from ¼× to 4× the base."""
    rows = []
    for f in (0.25, 1.0, 4.0):
        eps = band_eps(3, PER_WINDOW) * f
        wl = base(f"selectivity-{f}", 3, sz.figure_ms, eps=eps)
        rows += [run.row("selectivity", wl, r, sz.figure_groups, sigma=round(2 * eps, 4))
                 for r in ("atr", "ctr")]
    return rows


def bursty(run: Runner, sz: Sizes) -> Rows:
    """Fig. 16: bursty arrivals, θ = 0, 0.5, 0.9 (2 s high, 2 s low)."""
    return [run.row("bursty", base(f"bursty-{t}", 3, sz.figure_ms, theta=t), r,
                    sz.figure_groups, theta=t)
            for t in (0.0, 0.5, 0.9) for r in ("atr", "atr-adaptive", "ctr")]


def routing_cost(sz: Sizes) -> Rows:
    """Figs. 9/10: routing alone, µs per tuple, on the scaling workload at the largest G
    (one batch per trigger, no join); CTR's routing table size."""
    wl = base("scaling-4way", 4, sz.figure_ms)
    g = max(sz.groups)
    rows = []
    for name in ("atr", "atr-ll", "atr-adaptive", "ctr"):
        ctr = CTRRouter(g, wl.windows, W_MS // 2, KeyLoads(g), 0.01)
        router = None if name == "ctr" else make_router(name, wl, g, None, ATR_T)
        t0 = time.process_time()
        biggest = 0
        for lo in range(0, wl.n, int(RATE * 4)):
            gids = np.arange(lo, min(lo + int(RATE * 4), wl.n), dtype=np.int64)
            if router is None:
                ctr.route(wl.stream[gids], wl.ts[gids])
                biggest = max(biggest, ctr.table_bytes())
            else:
                router.route(gids)
        us = (time.process_time() - t0) / wl.n * 1e6
        rows.append({"part": "routing_cost", "router": name, "groups": g,
                     "routing_us_per_tuple": round(us, 2),
                     "routing_table_bytes": biggest if name == "ctr" else 0})
    return rows


def _spark_ratio(results_dir: Path) -> float | None:
    """G = 1 over G = 2 keyed-stage span of the band drain on local[2] (peer.json)."""
    path = results_dir / "peer.json"
    if not path.exists():
        return None
    spans = {r["groups"]: r["overlap"]["span_s"] for r in json.loads(path.read_text())["scaling"]
             if r["workload"] == "band" and r["master"] == "local[2]"}
    return round(spans[1] / spans[2], 3) if 1 in spans and 2 in spans else None


def calibrate(results_dir: Path, quick: bool) -> dict[str, Any]:
    """The peer band workload (3 streams × 100/s, W = 10 s, T = duration/4) at G = 1 and
    2 in 3 micro-batches, as Spark drained it: the model's keyed-stage ratio
    Σ_b max_k cpu (G = 1) / (G = 2) against Spark's (the stage spans in peer.json)."""
    from connectors.workloads import WorkloadSpec, generate, parse_model

    seconds = 60.0 if quick else 240.0
    records = generate(WorkloadSpec("sensors", streams=3, rates=(100.0,), duration_s=seconds,
                                    disorder=(parse_model("exp:mean=150"),), seed=19))
    wl = from_records("peer-band", records, ("s1", "s2", "s3"), (10_000,) * 3, "value", 0.1)
    truth = oracle_rows(wl)
    trigger = int(seconds * 1000) // 3 + 1
    got = {}
    for g in (1, 2):
        cfg = RouterConfig("atr", g, wl.windows, segment_ms=int(seconds * 1000) // 4)
        got[g] = measure(run_keys(wl, StaticRouter(wl, cfg), g, trigger), truth)
    model = round(got[2]["batch_rate"] / got[1]["batch_rate"], 3)
    spark = _spark_ratio(results_dir)
    return {"model_keyed_ratio": model, "spark_keyed_ratio": spark,
            "model_cost_ratio": round(got[2]["batch_rate_cost"] / got[1]["batch_rate_cost"], 3),
            "within_25pct": None if spark is None else abs(model / spark - 1) <= 0.25,
            "equals_oracle": got[1]["equals_oracle"] and got[2]["equals_oracle"],
            "replication_g2": got[2]["replication"], "input": wl.n, "quick": quick}
