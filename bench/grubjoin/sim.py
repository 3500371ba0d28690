"""The in-process simulator behind `harvest bench grubjoin`'s sweeps (GrubJoin §VI).

One output-rate point runs the real :class:`MWayJoin` with the real shedder on the
sensors workload: the windows are pre-filled with w seconds of input (inserted, not
probed), the throttle settles, then the results of the measured span are counted (not
materialized). The input has no disorder, so the K-slack/synchronizer stage (a
pass-through then) is skipped. The budget is a virtual CPU charged with the join's cost
units (:func:`calibrate` sizes it), or the wall clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from connectors.workloads import WorkloadSpec, generate_workload
from pipeline.operators.config import EngineConfig
from pipeline.operators.events import Event
from pipeline.operators.join.config import Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.registry import shedder_class
from pipeline.runtime.resolve import resolve_engine, runtime_env
from pipeline.spec.model import parse_spec

WINDOW_MS = 20_000
BASIC_MS = 2_000
#: sensors workload scenarios: (lags_s, kappas) per stream (up to m = 5)
Scenario = tuple[tuple[float, ...], tuple[float, ...]]
ALIGNED: Scenario = ((0.0, 0.0, 0.0, 0.0, 0.0), (2.0, 2.0, 50.0, 2.0, 2.0))
NONALIGNED: Scenario = ((0.0, 5.0, 15.0, 10.0, 2.5), (2.0, 2.0, 50.0, 2.0, 2.0))
#: bench method → ``[shedding] mode`` (grubjoin-greedy: solver = greedy; -flat: learn off)
METHOD_MODES = {"grubjoin": "grubjoin", "grubjoin-greedy": "grubjoin",
                "grubjoin-flat": "grubjoin", "randomdrop": "randomdrop",
                "randomdrop-static": "randomdrop-static", "taildrop": "taildrop"}
#: the baselines every grubjoin point is compared with (ratio_vs_best_baseline)
BASELINES = ("randomdrop", "randomdrop-static", "taildrop")


@dataclass(frozen=True)
class Timing:
    """The phases of one simulated point (seconds of stream time)."""

    prefill_s: float  # windows filled without probing
    settle_s: float  # shedding runs, not measured
    measure_s: float

    def snapshot(self) -> dict[str, float]:
        """Plain-dict form (the JSON's ``timing``)."""
        return {"prefill_s": self.prefill_s, "settle_s": self.settle_s,
                "measure_s": self.measure_s}


def engine_config(m: int, mode: str, capacity: float | None, budget: str = "virtual",
                  learn: bool = True, index: bool = False,
                  solver: str = "auto", tuple_cost: float = 1.0) -> EngineConfig:
    """The paper's setting (w = 20 s, b = 2 s, ε = 1, Δ = 5 s, ω = 0.1, queue 10) for an
    m-way band join on ``value`` with shedding ``mode`` (``off`` = the full join)."""
    shedding: dict[str, Any] = {"mode": mode, "basic_window_ms": BASIC_MS,
                                "adapt_interval_ms": 5_000, "shred_rate": 0.1, "queue": 10,
                                "boost": 1.2, "budget": budget, "learn": learn,
                                "utilization": 0.95, "tuple_cost": tuple_cost,
                                "solver": solver}
    if capacity is not None and budget == "virtual":
        shedding["capacity"] = capacity
    spec = parse_spec({
        "join": {"streams": [f"s{i + 1}" for i in range(m)], "window_ms": WINDOW_MS,
                 "predicate": "band", "attribute": "value", "epsilon": 1.0, "index": index},
        "disorder": {"mode": "none"},
        "shedding": shedding,
    })
    return resolve_engine(spec)


def workload(m: int, rate: float, lags: tuple[float, ...], kappas: tuple[float, ...],
             duration_s: float, seed: int) -> Any:
    """Records of the sensors workload (lag and time-correlation width κ per stream)."""
    spec = WorkloadSpec("sensors", streams=m, rates=(rate,), duration_s=duration_s,
                        lags_s=lags[:m], kappas=kappas[:m], seed=seed)
    return generate_workload(spec).records()


def simulate(m: int, rate: float, lags: tuple[float, ...], kappas: tuple[float, ...],
             method: str, capacity: float, timing: Timing, cost_multiplier: float = 1.0,
             budget: str = "virtual", speedup: float = 1.0, seed: int = 1,
             tuple_cost: float = 1.0) -> dict[str, Any]:
    """One output-rate point: real MWayJoin + shedder, virtual CPU (or wall clock).

    ``method``: a shedding mode (grubjoin, randomdrop, randomdrop-static, taildrop — the
    full join behind the bounded input queue), grubjoin-greedy (the paper's greedy
    solver) or grubjoin-flat (no learned time correlation), optionally suffixed
    ``-indexed`` (per-basic-window sorted indexes). ``tuple_cost``: cost units charged
    per admitted tuple besides its comparisons (calibrate with the same value)."""
    total = timing.prefill_s + timing.settle_s + timing.measure_s
    records = workload(m, rate, lags, kappas, total, seed)
    base = method.removesuffix("-indexed")
    mode = METHOD_MODES[base]
    cfg = engine_config(m, mode, capacity, budget, tuple_cost=tuple_cost,
                        learn=base != "grubjoin-flat",
                        index=method.endswith("-indexed"),
                        solver="greedy" if base == "grubjoin-greedy" else "auto")
    prefill_ms = int(timing.prefill_s * 1000)
    res = drive(cfg, mode, records, prefill_ms, prefill_ms + int(timing.settle_s * 1000),
                cost_multiplier, speedup)
    return {"output_rate": res["results"] / timing.measure_s, "admitted": res["admitted"],
            "comparisons": res["comparisons"], "wall_s": res["wall_s"]}


def drive(cfg: EngineConfig, mode: str, records: Any, prefill_ms: int, measure_from: int,
          cost_multiplier: float = 1.0, speedup: float = 1.0,
          bucket_ms: int | None = None, encoded: list[Any] | None = None) -> dict[str, Any]:
    """The simulation loop: records before ``prefill_ms`` are inserted without probing,
    later ones go through the shedder (admit, plan, probe, charge; an adaptation step
    every Δ) and the results from ``measure_from`` on are counted. With ``bucket_ms``
    also the results per bucket of stream time (``per_bucket``) and the shedder's
    adaptation rows (``steps``). ``encoded``: the records' ``predicate.encode`` values,
    when the caller runs the same records more than once."""
    pred = cfg.predicate
    join = MWayJoin(cfg.join_config())
    shedder = shedder_class(mode).create(cfg, runtime_env(speedup=speedup))
    delta = cfg.shedding.adapt_interval_ms
    next_adapt = prefill_ms + delta
    index = {n: i for i, n in enumerate(cfg.streams)}
    results = comparisons = admitted = 0
    buckets: dict[int, int] = {}
    steps: list[dict[str, Any]] = []
    wall0 = time.perf_counter()
    for n, rec in enumerate(records):
        ts = int(rec["event_time"])
        stream = index[rec["stream"]]
        enc = pred.encode(rec) if encoded is None else encoded[n]
        if ts < prefill_ms:
            join.insert(stream, ts, int(rec["seq"]), enc)
            join.join_time = max(join.join_time, ts)
            continue
        while ts >= next_adapt:
            step = shedder.maybe_adapt(next_adapt)
            if bucket_ms is not None and step is not None:
                steps.append(step)
            next_adapt += delta
        if not shedder.admit(Event(stream, int(rec["seq"]), ts, ts), ts):
            continue
        admitted += 1
        plan = shedder.plan(stream)
        out = join.process(stream, ts, int(rec["seq"]), enc, plan)
        if out.outcome is Outcome.PROBED and out.feedback is not None:
            shedder.observe_probe(out.feedback)
        shedder.charge(out.cost * cost_multiplier + cfg.tuple_cost, ts)
        comparisons += out.cost
        if ts >= measure_from:
            results += out.count
            if bucket_ms is not None:
                buckets[ts // bucket_ms] = buckets.get(ts // bucket_ms, 0) + out.count
    return {"results": results, "admitted": admitted, "comparisons": comparisons,
            "wall_s": time.perf_counter() - wall0, "per_bucket": buckets, "steps": steps}


def simulate_mean(m: int, rate: float, scenario: Scenario, method: str, capacity: float,
                  timing: Timing, seeds: tuple[int, ...],
                  cost_multiplier: float = 1.0) -> dict[str, Any]:
    """Mean output rate of :func:`simulate` over workload seeds (ours: single runs are
    noisy — a few expensive probes more or less move a whole adaptation interval)."""
    runs = [simulate(m, rate, scenario[0], scenario[1], method, capacity, timing,
                     cost_multiplier=cost_multiplier, seed=s) for s in seeds]
    return {"output_rate": float(np.mean([r["output_rate"] for r in runs])),
            "per_seed": [round(r["output_rate"], 1) for r in runs],
            "wall_s": float(sum(r["wall_s"] for r in runs))}


def calibrate(timing: Timing, tuple_cost: float = 1.0) -> float:
    """Capacity = cost per second of the full 3-way join at 100 tuples/s per stream, so
    the unshed join saturates there (GrubJoin §VI's calibrated CPU)."""
    records = workload(3, 100.0, ALIGNED[0], ALIGNED[1],
                       timing.prefill_s + timing.measure_s, seed=1)
    cfg = engine_config(3, "off", None, tuple_cost=tuple_cost)
    join = MWayJoin(cfg.join_config())
    index = {n: i for i, n in enumerate(cfg.streams)}
    prefill_ms = int(timing.prefill_s * 1000)
    cost = 0.0
    for rec in records:
        ts = int(rec["event_time"])
        enc = cfg.predicate.encode(rec)
        if ts < prefill_ms:
            join.insert(index[rec["stream"]], ts, int(rec["seq"]), enc)
            join.join_time = max(join.join_time, ts)
            continue
        out = join.process(index[rec["stream"]], ts, int(rec["seq"]), enc)
        cost += out.cost + cfg.tuple_cost
    return cost / timing.measure_s


def row(scenario: str, m: int, rate: float | None, kappa: float | None, method: str,
        res: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One JSON row of a sweep (``res``: a :func:`simulate` result)."""
    return {"scenario": scenario, "m": m, "input_rate": rate, "kappa": kappa,
            "method": method, "output_rate": res["output_rate"], **extra,
            "wall_s": round(res["wall_s"], 2)}
