"""`harvest bench join`, issue 20 sections: the engine's fixed cost per tuple, the demo
workload's capacity with and without ``[join] index``, and the index lookup cost.

* ``fixed``: the demo spec (quality-driven K, GrubJoin on the wall budget, shred rate 0)
  with a GrubJoin whose plans scan no basic window — every tuple still goes through
  K-slack, the Synchronizer, the delay statistics (ADWIN), admission, a plan, Alg. 2
  (insert, expire), n^× and the profiler, and the shedder adapts every Δ. Demo workload
  (nonaligned sensors, Zipf disorder), fed in micro-batches of 1 s of arrivals after a
  60 s warm-up; CPU time per tuple (the best of a few repeats).
* ``indexed``: :func:`pipeline.app.capacity.measure_capacity` (the demo's probe: the full
  join timed in-process on samples with pre-filled windows, c(r) = a·r + b·r²) on the
  demo spec with ``index = false`` and ``index = true``, CPU-timed, each at sample rates
  around its own capacity; both variants also join the same low-rate samples and must
  produce the same result ids.
* ``lookup_cost_fit``: the batched indexed probe timed on a synthetic window at several
  candidate counts; time per probe = α + β·candidates gives c_w = α/β, the lookup cost
  in candidate units the indexed cost model uses (``batchjoin.INDEX_WINDOW_COST``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from connectors.workloads import generate
from pipeline.app.capacity import measure_capacity, time_full_join
from pipeline.app.demo import DemoConfig, demo_workload
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event, event_from_dump
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.join.run import INDEX_WINDOW_COST
from pipeline.operators.join.run_probe import index_position
from pipeline.operators.join.run_side import Geometry, Side
from pipeline.operators.join.valueindex import ValueIndex
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.runtime.resolve import resolve_engine, runtime_env
from pipeline.spec.model import Spec, load_spec

log = get_logger(__name__)

FIXED_TARGET_US = 5.0
CAPACITY_TARGET = 6000.0
WARM_S = 60.0


def demo_spec(settings: Settings, index: bool = False) -> Spec:
    """examples/specs/demo.toml, with ``[join] index`` set."""
    spec = load_spec(settings.demo_spec)
    return spec.model_copy(update={"join": spec.join.model_copy(update={"index": index})})


class NoScanShedder(GrubJoinShedder):
    """GrubJoin whose installed plans scan no basic window (z → 0): it still admits,
    plans (one random draw), is charged and adapts like the real one."""

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        super().__init__(config, env)
        self.plans = self._no_scan()

    def _no_scan(self) -> tuple[ProbePlan, ...]:
        m = self.config.m
        return tuple(ProbePlan(order=tuple(j for j in range(m) if j != i),
                               windows=((),) * (m - 1)) for i in range(m))

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        row = super().maybe_adapt(now)
        self.plans = self._no_scan()
        return row


def _events(spec: Spec, rate: float, seconds: float) -> list[Event]:
    index = {s: i for i, s in enumerate(spec.join.streams)}
    recs = generate(demo_workload(DemoConfig(), rate, seconds))
    return [event_from_dump(r, index) for r in recs]


def measure_fixed(settings: Settings, rate: float, seconds: float,
                  repeats: int = 3) -> dict[str, Any]:
    """CPU µs per tuple of the engine whose GrubJoin plans scan nothing (module doc)."""
    base = demo_spec(settings)
    spec = base.model_copy(update={"shedding": base.shedding.model_copy(
        update={"shred_rate": 0.0})})
    config = resolve_engine(spec)
    events = _events(spec, rate, WARM_S + seconds)
    warm = [e for e in events if e.arrival < WARM_S * 1000]
    timed = [e for e in events if e.arrival >= WARM_S * 1000]
    chunks: list[list[Event]] = []
    for ev in timed:  # micro-batches of 1 s of arrivals
        if not chunks or ev.arrival // 1000 != chunks[-1][0].arrival // 1000:
            chunks.append([])
        chunks[-1].append(ev)
    best = float("inf")
    stats: dict[str, Any] = {}
    for _ in range(repeats):
        env = runtime_env()
        eng = Engine(config, env, shedder=NoScanShedder(config, env))
        eng.process_many(warm)
        start = time.process_time()
        for part in chunks:
            eng.process_many(part)
        cpu = time.process_time() - start
        best = min(best, cpu)
        stats = {"inputs": eng.stats.inputs, "results": eng.stats.results,
                 "comparisons": eng.stats.comparisons, "late": eng.stats.late}
    return {"rate_per_stream": rate, "seconds": seconds, "tuples": len(timed),
            "micro_batches": len(chunks), "cpu_seconds": best,
            "us_per_tuple": best / max(1, len(timed)) * 1e6, **stats}


def measure_indexed(settings: Settings, quick: bool) -> dict[str, Any]:
    """The demo workload's capacity without and with the index, and whether both find
    the same results on the samples both join (module docstring)."""
    sample_s = 3.0 if quick else 5.0
    rates = {False: [200.0, 400.0, 800.0] if quick else [500.0, 1000.0, 2000.0],
             True: [800.0, 1600.0, 2400.0] if quick else [2000.0, 4000.0, 6000.0]}
    shared = rates[False]
    out: dict[str, Any] = {"sample_seconds": sample_s, "warm_seconds": WARM_S,
                           "clock": "process_time (CPU seconds)"}
    ids: dict[bool, dict[float, set[str]]] = {False: {}, True: {}}
    for index in (False, True):
        spec = demo_spec(settings, index)
        all_rates = sorted(set(rates[index]) | set(shared))
        samples = {r: generate(demo_workload(DemoConfig(), r, WARM_S + sample_s))
                   for r in all_rates}
        ids[index] = {r: set() for r in shared}
        log.info("bench join: capacity", index=index, rates=rates[index])
        cap = measure_capacity(spec, {r: samples[r] for r in rates[index]}, sample_s,
                               speedup=1.0, warm_seconds=WARM_S, repeats=1,
                               clock=time.process_time, ids=ids[index])
        for r in shared:  # the shared samples this variant did not time: their ids
            if r not in rates[index]:
                time_full_join(spec, samples[r], WARM_S, time.process_time,
                               ids=ids[index][r])
        del samples
        out["with_index" if index else "without_index"] = cap.snapshot()
    same = {str(r): ids[False][r] == ids[True][r] for r in shared}
    cap_on = out["with_index"]["capacity_rate"]
    cap_off = out["without_index"]["capacity_rate"]
    out.update({
        "compared_rates": shared,
        "results_compared": {str(r): len(ids[False][r]) for r in shared},
        "same_results": same,
        "all_same_results": all(same.values()),
        "capacity_without_index": cap_off,
        "capacity_with_index": cap_on,
        "capacity_ratio": cap_on / cap_off if cap_off > 0 else None,
        "capacity_target": CAPACITY_TARGET,
        "index_window_cost_in_use": INDEX_WINDOW_COST,
        "lookup_cost_fit": lookup_cost_fit(),
    })
    return out


def lookup_cost_fit(rows: int = 200_000, probes: int = 2000) -> dict[str, Any]:
    """c_w = α/β from the batched indexed probe's time per probe α + β·candidates."""
    rng = np.random.default_rng(0)
    vals = rng.uniform(0, 1000, rows)
    ts = np.sort(rng.integers(0, 60_000, rows))
    none = np.zeros(0, np.int64)
    side = Side((), none, none, none, np.zeros((0, 1)),
                vindex=ValueIndex(vals, ts, np.arange(rows)), q_sorted=none)
    geo = Geometry(60_000, 2000, 30)
    p_ts = np.full(probes, 60_000, np.int64)
    pos = np.arange(probes) + 10
    feats = rng.uniform(0, 1000, (probes, 1))
    points = []
    for eps in (0.0001, 0.005, 0.02, 0.05, 0.1):
        pred = build_predicate("band", attribute="value", epsilon=eps)
        best = float("inf")
        cand = 0.0
        for _ in range(5):
            start = time.process_time()
            hits = index_position(pred, side, pos, p_ts, feats, None, geo, 0)
            best = min(best, time.process_time() - start)
            cand = float(hits.unit_cost.mean())
        points.append((cand, best / probes * 1e6))
    c = np.array(points)
    design = np.vstack([np.ones(len(c)), c[:, 0]]).T
    (alpha, beta), *_ = np.linalg.lstsq(design, c[:, 1], rcond=None)
    return {"points": [{"candidates_per_probe": x, "us_per_probe": y} for x, y in points],
            "us_per_lookup": float(alpha), "us_per_candidate": float(beta),
            "window_cost": float(alpha / beta) if beta > 0 else None}
