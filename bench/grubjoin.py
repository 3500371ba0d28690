"""`harvest bench grubjoin [--quick]`: GrubJoin (Gedik et al., TKDE) §VI reproductions.

* Fig. 7 — optimality φ = O(solver)/O(optimum) over random instances (m = 3, n = 10)
  for the online solver :func:`configure` (exact Pareto DP at this size; ours) and the
  paper's greedy variants;
* Fig. 8 — configuration time vs n for m = 3, 4, 5 (``configure`` and the paper's greedy
  double-sided) and m = 3 (brute force);
* Fig. 11/12/13, Table II — output rate of grubjoin, randomdrop and the full join on the
  sensors workload, with the virtual CPU calibrated so the full 3-way join saturates at
  100 tuples/s per stream (w = 20 s, b = 2 s, ε = 1, D = 1000, η = 50, Δ = 5 s, ω = 0.1,
  queue 10); and the Fig. 11 sweep again on the wall-clock budget.

* ``index_effect`` (ours) — wall clock of the exact 3-way band join with and without
  per-basic-window sorted indexes.

``--only optimality,config_time,sweeps,index_effect`` runs a subset (default: all) and merges its
keys into the existing grubjoin.json, regenerating only the affected PNGs.

The sweeps run the real :class:`MWayJoin` with the real shedders in-process; the input
has no disorder, so the K-slack/synchronizer stage (a pass-through then) is skipped and
results are counted, not materialized. Each point pre-fills the windows with w seconds
of input (inserted, not probed), lets the throttle settle, then measures.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import new_figure, save_figure, write_json
from connectors.workloads import WorkloadSpec, generate_workload
from pipeline.core.errors import ConfigError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.operators.bruteforce import exhaustive, optimal
from pipeline.operators.config import EngineConfig
from pipeline.operators.costmodel import HarvestModel, join_orders
from pipeline.operators.events import Event
from pipeline.operators.greedy import configure, greedy_double_sided, greedy_forward
from pipeline.operators.grubjoin import GrubJoinShedder
from pipeline.operators.mjoin import JoinConfig, MWayJoin, Outcome
from pipeline.operators.randomdrop import RandomDropShedder
from pipeline.operators.virtual_cpu import VirtualCpu, VirtualCpuConfig
from pipeline.spec.model import parse_spec

log = get_logger("bench.grubjoin")

WINDOW_MS = 20_000
BASIC_MS = 2_000
ALIGNED = ((0.0, 0.0, 0.0, 0.0, 0.0), (2.0, 2.0, 50.0, 2.0, 2.0))
NONALIGNED = ((0.0, 5.0, 15.0, 10.0, 2.5), (2.0, 2.0, 50.0, 2.0, 2.0))


# --------------------------------------------------------------------- Fig. 7 / 8
def random_model(rng: np.random.Generator, m: int, n: int) -> HarvestModel:
    """Fig. 7 instances: λ ~ U[100, 500], w = 10, random σ and random lag bumps."""
    w = 10.0
    lam = rng.uniform(100, 500, m)
    sel = rng.uniform(0.0005, 0.005, (m, m))
    sel = (sel + sel.T) / 2.0
    lag = rng.uniform(-w / 2, w / 2, m)
    width = rng.uniform(0.5, 3.0, m)
    orders = join_orders(sel)
    centers = (w / n) * (np.arange(n) + 0.5)
    scores = [
        [
            np.exp(-0.5 * ((centers - (lag[i] - lag[int(orders[i, j])]))
                           / max(width[i], width[int(orders[i, j])])) ** 2)
            + 0.05 * rng.random(n)
            for j in range(m - 1)
        ]
        for i in range(m)
    ]
    return HarvestModel.build(lam, lam * w, sel, scores, orders)


def optimality(instances: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """φ per z for ``configure`` (main rows), and per solver: configure, greedy
    double-sided BDOpDC, forward greedy per metric. The optimum is the grid-enumerating
    :func:`optimal` (independent of the Pareto DP inside ``configure``)."""
    rng = np.random.default_rng(seed)
    zs = [0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    phi: dict[tuple[str, float], list[float]] = {}
    for k in range(instances):
        model = random_model(rng, 3, 10)
        for z in zs:
            _, best = optimal(model, z)
            variants = {"configure": configure(model, z),
                        "bdopdc-double-sided": greedy_double_sided(model, z)}
            for h in ("bdopdc", "bo", "bopc"):
                variants[f"{h}-forward"] = greedy_forward(model, z, h)
            for name, counts in variants.items():
                got = float(model.evaluate(counts)[1])
                phi.setdefault((name, z), []).append(got / best if best > 0 else 1.0)
        if (k + 1) % 50 == 0:
            log.info("optimality", instances=k + 1)
    main = [{"z": z, "solver": "configure", "mean_phi": float(np.mean(phi[("configure", z)])),
             "min_phi": float(np.min(phi[("configure", z)]))} for z in zs]
    by = [{"solver": name, "z": z, "mean_phi": float(np.mean(v)), "min_phi": float(np.min(v))}
          for (name, z), v in phi.items()]
    return main, by


def config_time(ns: list[int], repeats: int, brute_max_n: int) -> tuple[list[dict[str, Any]],
                                                                         list[dict[str, Any]]]:
    """Fig. 8: median configuration time (z = 0.25) vs n — ``configure`` (the online
    solver; rows without a suffix) and the paper's greedy double-sided — and brute force
    for m = 3. Each solver sees the same instances."""
    rng = np.random.default_rng(11)
    rows, brute = [], []
    for m in (3, 4, 5):
        for n in ns:
            times: dict[str, list[float]] = {"configure": [], "greedy-double-sided": []}
            for _ in range(repeats):
                model = random_model(rng, m, n)
                for name, solve in (("configure", configure),
                                    ("greedy-double-sided", greedy_double_sided)):
                    t0 = time.perf_counter()
                    solve(model, 0.25)
                    times[name].append((time.perf_counter() - t0) * 1000.0)
            for name, ts in times.items():
                rows.append({"m": m, "n": n, "solver": name, "ms": float(np.median(ts)),
                             "max_ms": float(np.max(ts))})
            if m == 3 and n <= brute_max_n:
                model = random_model(rng, 3, n)
                t0 = time.perf_counter()
                exhaustive(model, 0.25)
                brute.append({"m": 3, "n": n, "ms": (time.perf_counter() - t0) * 1000.0})
    return rows, brute


# --------------------------------------------------------------------- sweeps
@dataclass(frozen=True)
class Timing:
    prefill_s: float  # windows filled without probing
    settle_s: float  # shedding runs, not measured
    measure_s: float


def _config(m: int, mode: str, capacity: float | None, budget: str = "virtual",
            learn: bool = True, index: bool = False) -> EngineConfig:
    shedding: dict[str, Any] = {"mode": mode, "basic_window_ms": BASIC_MS,
                                "adapt_interval_ms": 5_000, "shred_rate": 0.1, "queue": 10,
                                "boost": 1.2, "budget": budget, "learn": learn,
                                "utilization": 0.95, "tuple_cost": 1.0}
    if capacity is not None and budget == "virtual":
        shedding["capacity"] = capacity
    spec = parse_spec({
        "join": {"streams": [f"s{i + 1}" for i in range(m)], "window_ms": WINDOW_MS,
                 "predicate": "band", "attribute": "value", "epsilon": 1.0, "index": index},
        "disorder": {"mode": "none"},
        "shedding": shedding,
    })
    return EngineConfig.from_spec(spec)


def _workload(m: int, rate: float, lags: tuple[float, ...], kappas: tuple[float, ...],
              duration_s: float, seed: int) -> Any:
    spec = WorkloadSpec("sensors", streams=m, rates=(rate,), duration_s=duration_s,
                        lags_s=lags[:m], kappas=kappas[:m], seed=seed)
    return generate_workload(spec).records()


def simulate(m: int, rate: float, lags: tuple[float, ...], kappas: tuple[float, ...],
             method: str, capacity: float, timing: Timing, cost_multiplier: float = 1.0,
             budget: str = "virtual", speedup: float = 1.0, seed: int = 1) -> dict[str, Any]:
    """One output-rate point: real MWayJoin + shedder, virtual CPU (or wall clock)."""
    total = timing.prefill_s + timing.settle_s + timing.measure_s
    records = _workload(m, rate, lags, kappas, total, seed)
    base = method.removesuffix("-indexed")
    mode = {"grubjoin": "grubjoin", "grubjoin-flat": "grubjoin",
            "randomdrop": "randomdrop", "full": "off"}[base]
    cfg = _config(m, mode, capacity, budget, learn=base != "grubjoin-flat",
                  index=method.endswith("-indexed"))
    pred = cfg.predicate
    join = MWayJoin(cfg.join_config())
    shedder: Any
    if mode == "grubjoin":
        shedder = GrubJoinShedder.create(cfg, speedup=speedup)
    elif mode == "randomdrop":
        shedder = RandomDropShedder.create(cfg, speedup=speedup)
    else:
        shedder = None
    cpu = VirtualCpu(VirtualCpuConfig(capacity, 10)) if shedder is None else None
    prefill_ms = int(timing.prefill_s * 1000)
    measure_from = prefill_ms + int(timing.settle_s * 1000)
    delta = cfg.shedding.adapt_interval_ms
    next_adapt = prefill_ms + delta
    index = {n: i for i, n in enumerate(cfg.streams)}
    results = comparisons = admitted = 0
    wall0 = time.perf_counter()
    for rec in records:
        ts = int(rec["event_time"])
        stream = index[rec["stream"]]
        enc = pred.encode(rec)
        if ts < prefill_ms:
            join.insert(stream, ts, int(rec["seq"]), enc)
            join.join_time = max(join.join_time, ts)
            continue
        while shedder is not None and ts >= next_adapt:
            shedder.maybe_adapt(next_adapt)
            next_adapt += delta
        if shedder is not None:
            ok = shedder.admit(Event(stream, int(rec["seq"]), ts, ts), ts)
        else:
            assert cpu is not None
            ok = cpu.admit(ts)
        if not ok:
            continue
        admitted += 1
        plan = shedder.plan(stream) if shedder is not None else None
        out = join.process(stream, ts, int(rec["seq"]), enc, plan)
        if out.outcome is Outcome.PROBED and out.feedback is not None and shedder is not None:
            shedder.observe_probe(out.feedback)
        cost = out.cost * cost_multiplier + cfg.tuple_cost
        if shedder is not None:
            shedder.charge(cost, ts)
        else:
            assert cpu is not None
            cpu.charge(cost, ts)
        comparisons += out.cost
        if ts >= measure_from:
            results += out.count
    return {"output_rate": results / timing.measure_s, "admitted": admitted,
            "comparisons": comparisons, "wall_s": time.perf_counter() - wall0}


def simulate_mean(m: int, rate: float, scenario: tuple[tuple[float, ...], tuple[float, ...]],
                  method: str, capacity: float, timing: Timing,
                  seeds: tuple[int, ...]) -> dict[str, Any]:
    """Mean output rate of :func:`simulate` over workload seeds (ours: single runs are
    noisy — a few expensive probes more or less move a whole adaptation interval)."""
    runs = [simulate(m, rate, scenario[0], scenario[1], method, capacity, timing, seed=s)
            for s in seeds]
    return {"output_rate": float(np.mean([r["output_rate"] for r in runs])),
            "per_seed": [round(r["output_rate"], 1) for r in runs],
            "wall_s": float(sum(r["wall_s"] for r in runs))}


def calibrate(timing: Timing) -> float:
    """Capacity = cost per second of the full 3-way join at 100 tuples/s per stream."""
    records = _workload(3, 100.0, ALIGNED[0], ALIGNED[1],
                        timing.prefill_s + timing.measure_s, seed=1)
    cfg = _config(3, "off", None)
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


def index_effect(quick: bool) -> list[dict[str, Any]]:
    """Ours (beyond the paper): wall clock of the exact (unshed) 3-way band join with
    and without per-basic-window sorted indexes (``JoinConfig.index``), sensors
    workload (aligned), w = 20 s, b = 2 s, ε = 1. Windows are pre-filled with w seconds
    of input, then every tuple of the measured span is probed by both joins back to
    back (interleaved timing); both must give the same result count (the unit tests
    check row-for-row equality)."""
    prefill_s, measure_s = 20.0, (4.0 if quick else 5.0)
    rows: list[dict[str, Any]] = []
    for rate in ([50.0, 200.0] if quick else [50.0, 100.0, 200.0, 400.0, 800.0]):
        records = _workload(3, rate, ALIGNED[0], ALIGNED[1], prefill_s + measure_s, seed=3)
        cfg = _config(3, "off", None)
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


def _row(scenario: str, m: int, rate: float | None, kappa: float | None, method: str,
         res: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"scenario": scenario, "m": m, "input_rate": rate, "kappa": kappa,
            "method": method, "output_rate": res["output_rate"], **extra,
            "wall_s": round(res["wall_s"], 2)}


def _ratio(rows: list[dict[str, Any]], key: dict[str, Any], a: str, b: str) -> float | None:
    sel = [r for r in rows if all(r.get(k) == v for k, v in key.items())]
    va = [r["output_rate"] for r in sel if r["method"] == a]
    vb = [r["output_rate"] for r in sel if r["method"] == b]
    if not va or not vb or vb[0] <= 0:
        return None
    return float(va[0] / vb[0])


# --------------------------------------------------------------------- plots
def _plot_lines(rows: list[dict[str, Any]], x: str, group: str, title: str,
                results_dir: Path, name: str, logy: bool = False) -> None:
    fig, ax = new_figure()
    keys = sorted({r[group] for r in rows if r[group] is not None}, key=str)
    for key in keys:
        pts = sorted((r[x], r["output_rate"]) for r in rows if r[group] == key)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=str(key))
    ax.set_xlabel(x)
    ax.set_ylabel("output rate (results/s)")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend()
    save_figure(fig, name, results_dir)


def sweeps(quick: bool) -> dict[str, Any]:
    """Fig. 11/12/13, Table II and the wall-clock sweep (the slow part)."""
    timing = Timing(20.0, 5.0, 5.0) if quick else Timing(20.0, 15.0, 15.0)
    capacity = calibrate(timing)
    log.info("calibrated", capacity=round(capacity))
    rates = [50.0, 100.0, 300.0, 500.0] if quick else [50.0, 100.0, 200.0, 350.0, 500.0]
    methods = ["grubjoin", "randomdrop", "full"]

    rate_sweep: list[dict[str, Any]] = []
    for scen, (lags, kap) in (("aligned", ALIGNED), ("nonaligned", NONALIGNED)):
        for rate in rates:
            for method in methods:
                res = simulate(3, rate, lags, kap, method, capacity, timing)
                rate_sweep.append(_row(scen, 3, rate, None, method, res))
                log.info("fig11", scenario=scen, rate=rate, method=method,
                         output=round(res["output_rate"], 1), wall=round(res["wall_s"], 1))
        res = simulate(3, rates[-1], lags, kap, "grubjoin-flat", capacity, timing)
        rate_sweep.append(_row(scen, 3, rates[-1], None, "grubjoin-flat", res))

    kappa_sweep: list[dict[str, Any]] = []
    kappas = [25.0, 75.0] if quick else [10.0, 25.0, 50.0, 75.0, 100.0]
    for k3 in kappas:
        for method in ("grubjoin", "randomdrop"):
            kap = (2.0, 2.0, k3, 2.0, 2.0)
            res = simulate(3, 200.0, NONALIGNED[0], kap, method, capacity, timing)
            kappa_sweep.append(_row("nonaligned", 3, 200.0, k3, method, res))
            log.info("fig12", kappa=k3, method=method, output=round(res["output_rate"], 1))

    # Fig. 13: one 15 s window is only 3 adaptation intervals and single runs swing
    # 2-4x at m = 5, so each point is the mean over seeds of a longer run (ours)
    m_timing = Timing(20.0, 15.0, 15.0) if quick else Timing(20.0, 20.0, 30.0)
    m_seeds = (1, 2) if quick else (1, 2, 3)
    m_sweep: list[dict[str, Any]] = []
    for m in (3, 4, 5):
        for method in methods:
            res = simulate_mean(m, 100.0, NONALIGNED, method, capacity, m_timing, m_seeds)
            m_sweep.append(_row("nonaligned", m, 100.0, None, method, res,
                                seeds=list(m_seeds), per_seed=res["per_seed"]))
            log.info("fig13", m=m, method=method, output=round(res["output_rate"], 1))

    cost_sweep: list[dict[str, Any]] = []
    for mult in ([1.0, 4.0, 10.0] if quick else [1.0, 2.0, 4.0, 6.0, 8.0, 10.0]):
        for method in ("grubjoin", "randomdrop"):
            res = simulate(3, 75.0, NONALIGNED[0], NONALIGNED[1], method, capacity, timing,
                           cost_multiplier=mult)
            cost_sweep.append(_row("nonaligned", 3, 75.0, None, method, res,
                                   cost_multiplier=mult))
            log.info("table2", multiplier=mult, method=method,
                     output=round(res["output_rate"], 1))

    # wall clock: the budget is real time; speed-up 1 and the machine's own speed
    wall_sweep: list[dict[str, Any]] = []
    for rate in ([100.0, 300.0] if quick else [100.0, 200.0, 350.0, 500.0]):
        for method in ("grubjoin", "randomdrop"):
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing,
                           budget="wall", speedup=1.0)
            wall_sweep.append(_row("nonaligned", 3, rate, None, method, res))
            log.info("wall", rate=rate, method=method, output=round(res["output_rate"], 1))

    # ours: the per-basic-window indexes with the indexed cost model (costmodel
    # docstring) on the same virtual CPU (capacity in the unindexed calibration's units)
    index_sweep: list[dict[str, Any]] = []
    for rate in ([300.0] if quick else [200.0, 500.0]):
        for method in ("grubjoin-indexed", "full-indexed"):
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing)
            index_sweep.append(_row("nonaligned", 3, rate, None, method, res))
            log.info("index_sweep", rate=rate, method=method,
                     output=round(res["output_rate"], 1))

    return {
        "capacity_cost_units_per_s": capacity,
        "index_sweep": index_sweep,
        "timing": {"prefill_s": timing.prefill_s, "settle_s": timing.settle_s,
                   "measure_s": timing.measure_s},
        "m_sweep_timing": {"prefill_s": m_timing.prefill_s, "settle_s": m_timing.settle_s,
                           "measure_s": m_timing.measure_s, "seeds": list(m_seeds)},
        "rate_sweep": rate_sweep,
        "kappa_sweep": kappa_sweep,
        "m_sweep": m_sweep,
        "cost_sweep": cost_sweep,
        "wall_sweep": wall_sweep,
        "sweep_rates": rates,
        "sweep_kappas": kappas,
    }


def _ratios_targets(p: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
    """Ratios and issue targets from whatever parts ``p`` holds (missing → not met)."""
    opt = p.get("optimality", [])
    ctime = [r for r in p.get("config_time", []) if r.get("solver", "configure") == "configure"]
    rate_sweep = p.get("rate_sweep", [])
    kappa_sweep = p.get("kappa_sweep", [])
    m_sweep = p.get("m_sweep", [])
    rates = p.get("sweep_rates") or sorted({r["input_rate"] for r in rate_sweep}) or [0.0]
    kappas = p.get("sweep_kappas") or sorted({r["kappa"] for r in kappa_sweep})
    ratios = {
        "aligned_top_rate": _ratio(rate_sweep, {"scenario": "aligned", "input_rate": rates[-1]},
                                   "grubjoin", "randomdrop"),
        "nonaligned_top_rate": _ratio(rate_sweep, {"scenario": "nonaligned",
                                                   "input_rate": rates[-1]},
                                      "grubjoin", "randomdrop"),
        "m5_nonaligned": _ratio(m_sweep, {"m": 5}, "grubjoin", "randomdrop"),
        "kappa_min": min((v for v in (_ratio(kappa_sweep, {"kappa": k}, "grubjoin",
                                             "randomdrop") for k in kappas) if v is not None),
                         default=None),
        "learned_vs_flat_nonaligned": _ratio(rate_sweep, {"scenario": "nonaligned",
                                                          "input_rate": rates[-1]},
                                             "grubjoin", "grubjoin-flat"),
    }
    targets = {
        "optimality_mean_phi>=0.99": bool(opt) and all(r["mean_phi"] >= 0.99 for r in opt),
        "optimality_min_phi>=0.97": bool(opt) and all(r["min_phi"] >= 0.97 for r in opt),
        "config_m3_n10<=2ms": any((r["m"], r["n"]) == (3, 10) for r in ctime) and all(
            r["ms"] <= 2.0 for r in ctime if (r["m"], r["n"]) == (3, 10)),
        "config_m5_n20<=20ms": any((r["m"], r["n"]) == (5, 20) for r in ctime) and all(
            r["ms"] <= 20.0 for r in ctime if (r["m"], r["n"]) == (5, 20)),
        "aligned>=1.65x": (ratios["aligned_top_rate"] or 0) >= 1.65,
        "nonaligned>=2.5x": (ratios["nonaligned_top_rate"] or 0) >= 2.5,
        "m5>=8x": (ratios["m5_nonaligned"] or 0) >= 8.0,
        "kappa>=0.95x": (ratios["kappa_min"] or 0) >= 0.95,
    }
    return ratios, targets


PARTS = ("optimality", "config_time", "sweeps", "index_effect")


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Run every part (or ``only`` = comma-separated subset of PARTS), write
    bench/results/grubjoin.json and the PNGs. A partial run merges its keys into the
    existing JSON (other keys are kept) and regenerates only its own PNGs."""
    t_start = time.perf_counter()
    parts = list(PARTS) if not only else [x.strip() for x in only.split(",") if x.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ConfigError(f"--only: unknown part(s) {unknown}; expected {list(PARTS)}")
    payload: dict[str, Any] = {}
    path = results_dir / "grubjoin.json"
    if set(parts) != set(PARTS) and path.exists():
        payload = json.loads(path.read_text())
        payload.pop("benchmark", None)
        payload.pop("machine", None)
    seconds = dict(payload.get("seconds_by_part", {}))
    if "optimality" in parts:
        t0 = time.perf_counter()
        opt, opt_by = optimality(40 if quick else 500)
        payload.update(optimality=opt, optimality_by_solver=opt_by, optimality_quick=quick)
        seconds["optimality"] = round(time.perf_counter() - t0, 1)
        log.info("fig7 done", seconds=seconds["optimality"])
    if "config_time" in parts:
        t0 = time.perf_counter()
        ns = [5, 10, 20] if quick else [5, 10, 15, 20]
        ctime, brute = config_time(ns, 5 if quick else 20, brute_max_n=6 if quick else 10)
        payload.update(config_time=ctime, config_time_bruteforce=brute, config_time_quick=quick)
        seconds["config_time"] = round(time.perf_counter() - t0, 1)
        log.info("fig8 done", seconds=seconds["config_time"])
    if "index_effect" in parts:
        t0 = time.perf_counter()
        ie = index_effect(quick)
        speed = {}
        for rate in sorted({r["input_rate"] for r in ie}):
            a = next(r for r in ie if r["input_rate"] == rate and not r["indexed"])
            b = next(r for r in ie if r["input_rate"] == rate and r["indexed"])
            speed[str(rate)] = {"speedup": a["wall_s"] / max(b["wall_s"], 1e-9),
                                "same_results": a["results"] == b["results"]}
        payload.update(index_effect=ie, index_effect_summary=speed, index_effect_quick=quick)
        seconds["index_effect"] = round(time.perf_counter() - t0, 1)
    if "sweeps" in parts:
        t0 = time.perf_counter()
        payload.update(sweeps(quick))
        payload["sweeps_quick"] = quick
        seconds["sweeps"] = round(time.perf_counter() - t0, 1)
    ratios, targets = _ratios_targets(payload)
    payload.update(quick=quick if set(parts) == set(PARTS) else payload.get("quick", quick),
                   parts_last_run=parts, ratios_grubjoin_over_randomdrop=ratios,
                   targets_met=targets, seconds_by_part=seconds,
                   seconds=round(time.perf_counter() - t_start, 1))
    path = write_json("grubjoin", payload, results_dir)
    _figures(payload, results_dir, parts)
    log.info("grubjoin bench written", path=str(path), targets=targets)
    for k, v in ratios.items():
        print(f"{k:32s} {v if v is None else round(v, 2)}")
    for k, ok in targets.items():
        print(f"{k:32s} {'met' if ok else 'MISSED'}")
    return 0


def _figures(p: dict[str, Any], results_dir: Path, parts: list[str] | None = None) -> None:
    parts = list(PARTS) if parts is None else parts
    if "optimality" in parts:
        fig, ax = new_figure()
        by = p["optimality_by_solver"]
        for solver in sorted({r["solver"] for r in by}):
            pts = sorted((r["z"], r["mean_phi"]) for r in by if r["solver"] == solver)
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=solver)
        pts = sorted((r["z"], r["min_phi"]) for r in p["optimality"])
        ax.plot([a for a, _ in pts], [b for _, b in pts], linestyle="--", color="black",
                label="configure (min φ)")
        ax.set_xlabel("throttle fraction z")
        ax.set_ylabel("mean φ = O(solver) / O(optimum)")
        ax.set_title("Fig. 7: optimality of the harvest-fraction solvers (m = 3, n = 10)")
        ax.legend()
        save_figure(fig, "grubjoin_fig7_optimality", results_dir)

    if "config_time" in parts:
        fig, ax = new_figure()
        for m in (3, 4, 5):
            for solver, style in (("configure", "-"), ("greedy-double-sided", ":")):
                pts = sorted((r["n"], r["ms"]) for r in p["config_time"]
                             if r["m"] == m and r.get("solver") == solver)
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", linestyle=style,
                        label=f"{solver} m={m}")
        pts = sorted((r["n"], r["ms"]) for r in p["config_time_bruteforce"])
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="s", label="brute force m=3")
        ax.set_yscale("log")
        ax.set_xlabel("basic windows per window n")
        ax.set_ylabel("configuration time (ms)")
        ax.set_title("Fig. 8: configuration time (z = 0.25)")
        ax.legend(fontsize="small")
        save_figure(fig, "grubjoin_fig8_config_time", results_dir)

    if "index_effect" in parts:
        fig, ax = new_figure()
        for indexed, label in ((False, "unindexed (NLJ scan)"), (True, "sorted index per bw")):
            pts = sorted((r["input_rate"], r["us_per_probe"]) for r in p["index_effect"]
                         if r["indexed"] == indexed)
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=label)
        ax.set_xlabel("input rate per stream (tuples/s)")
        ax.set_ylabel("wall clock per probe (µs)")
        ax.set_yscale("log")
        ax.set_title("Exact 3-way band join: per-basic-window index (ours)")
        ax.legend()
        save_figure(fig, "grubjoin_index_effect", results_dir)

    if "sweeps" not in parts:
        return
    for scen in ("aligned", "nonaligned"):
        rows = [r for r in p["rate_sweep"] if r["scenario"] == scen]
        _plot_lines(rows, "input_rate", "method", f"Fig. 11: output vs input rate ({scen})",
                    results_dir, f"grubjoin_fig11_{scen}")
    _plot_lines(p["kappa_sweep"], "kappa", "method", "Fig. 12: output vs κ_3 (200 tuples/s)",
                results_dir, "grubjoin_fig12_kappa")
    _plot_lines(p["m_sweep"], "m", "method", "Fig. 13: output vs m (100 tuples/s, nonaligned)",
                results_dir, "grubjoin_fig13_m", logy=True)
    _plot_lines(p["cost_sweep"], "cost_multiplier", "method",
                "Table II: predicate cost multiplier (75 tuples/s)", results_dir,
                "grubjoin_table2_cost")
    _plot_lines(p["wall_sweep"], "input_rate", "method",
                "Fig. 11 on the wall-clock budget (nonaligned)", results_dir,
                "grubjoin_wall_clock")
