"""GrubJoin (Gedik et al., TKDE) §VI output-rate sweeps: grubjoin against the baselines
on the sensors workload, on the calibrated virtual CPU
(:func:`bench.grubjoin.sim.calibrate`) or the wall clock.

Baselines (:data:`bench.grubjoin.sim.BASELINES`): ``randomdrop`` (adaptive: random drops
sized every Δ by the same throttle as GrubJoin), ``randomdrop-static`` (the paper's:
keep probabilities fixed from the measured rates and the capacity) and ``taildrop`` (no
decision: the full join behind the 10-tuple input queue — the unshed simulation). Every
grubjoin row carries its output over each baseline at the same point (``ratio_vs``) and
over the best of them (``ratio_vs_best_baseline``, :func:`bench.kit.ratios.add_baseline_ratios`).

* Fig. 11 — output vs input rate, aligned and nonaligned streams, with the online
  solver (``grubjoin``: exact for m = 3) and the paper's greedy (``grubjoin-greedy``),
  plus grubjoin without learned time correlation at the top rate;
* Fig. 12 — output vs the time-correlation width κ_3;
* Fig. 13 — output vs the number of streams m, aligned and nonaligned;
* Table II — output vs the predicate cost multiplier;
* the Fig. 11 sweep again on the wall-clock budget;
* ours — the per-basic-window indexes with the indexed cost model;
* ours — the points that differ most from the paper again with a fixed per-tuple cost
  (``tuple_cost_sweep``: what the notes of :mod:`bench.grubjoin.paper` rest on).
"""

from __future__ import annotations

from typing import Any

from bench.grubjoin.sim import (
    ALIGNED,
    BASELINES,
    NONALIGNED,
    Timing,
    calibrate,
    row,
    simulate,
    simulate_mean,
)
from bench.kit.ratios import add_baseline_ratios
from pipeline.core.logging import get_logger

log = get_logger("bench.grubjoin")

#: grubjoin and every baseline (Fig. 12, 13, Table II, wall clock)
METHODS = ("grubjoin", *BASELINES)
#: Fig. 11 adds the paper's greedy solver
RATE_METHODS = ("grubjoin", "grubjoin-greedy", *BASELINES)
#: the rows compared with the baselines
SHEDDERS = ("grubjoin", "grubjoin-greedy", "grubjoin-flat")


def _compare(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return add_baseline_ratios(rows, keys, SHEDDERS, BASELINES)


def rate_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Fig. 11: output vs input rate per method, aligned and nonaligned; plus
    ``grubjoin-flat`` (no learned time correlation) at the top rate."""
    rows: list[dict[str, Any]] = []
    for scen, (lags, kap) in (("aligned", ALIGNED), ("nonaligned", NONALIGNED)):
        for rate in rates:
            for method in RATE_METHODS:
                res = simulate(3, rate, lags, kap, method, capacity, timing)
                rows.append(row(scen, 3, rate, None, method, res))
                log.info("fig11", scenario=scen, rate=rate, method=method,
                         output=round(res["output_rate"], 1), wall=round(res["wall_s"], 1))
        res = simulate(3, rates[-1], lags, kap, "grubjoin-flat", capacity, timing)
        rows.append(row(scen, 3, rates[-1], None, "grubjoin-flat", res))
    return _compare(rows, ("scenario", "input_rate"))


def kappa_sweep(kappas: list[float], capacity: float, timing: Timing,
                seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    """Fig. 12: output vs κ_3 (nonaligned, 200 tuples/s per stream), each point the mean
    over ``seeds`` (ours: grubjoin's output swings ~2× between seeds here)."""
    rows: list[dict[str, Any]] = []
    for k3 in kappas:
        for method in METHODS:
            kap = (2.0, 2.0, k3, 2.0, 2.0)
            res = simulate_mean(3, 200.0, (NONALIGNED[0], kap), method, capacity, timing,
                                seeds)
            rows.append(row("nonaligned", 3, 200.0, k3, method, res, seeds=list(seeds),
                            per_seed=res["per_seed"]))
            log.info("fig12", kappa=k3, method=method, output=round(res["output_rate"], 1))
    return _compare(rows, ("kappa",))


def m_sweep(capacity: float, timing: Timing, seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    """Fig. 13: output vs m = 3, 4, 5 (aligned and nonaligned, 100 tuples/s per stream),
    each point the mean over ``seeds`` (ours: single runs swing 2-4x at m = 5)."""
    rows: list[dict[str, Any]] = []
    for scen, scenario in (("aligned", ALIGNED), ("nonaligned", NONALIGNED)):
        for m in (3, 4, 5):
            for method in METHODS:
                res = simulate_mean(m, 100.0, scenario, method, capacity, timing, seeds)
                rows.append(row(scen, m, 100.0, None, method, res,
                                seeds=list(seeds), per_seed=res["per_seed"]))
                log.info("fig13", scenario=scen, m=m, method=method,
                         output=round(res["output_rate"], 1))
    return _compare(rows, ("scenario", "m"))


def cost_sweep(multipliers: list[float], capacity: float, timing: Timing,
               seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    """Table II: output vs the predicate cost multiplier (nonaligned, 75 tuples/s), each
    point the mean over ``seeds``."""
    rows: list[dict[str, Any]] = []
    for mult in multipliers:
        for method in METHODS:
            res = simulate_mean(3, 75.0, NONALIGNED, method, capacity, timing, seeds,
                                cost_multiplier=mult)
            rows.append(row("nonaligned", 3, 75.0, None, method, res, cost_multiplier=mult,
                            seeds=list(seeds), per_seed=res["per_seed"]))
            log.info("table2", multiplier=mult, method=method,
                     output=round(res["output_rate"], 1))
    return _compare(rows, ("cost_multiplier",))


def wall_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Fig. 11 (nonaligned) on the wall-clock budget: real time, speed-up 1, the
    machine's own speed."""
    rows: list[dict[str, Any]] = []
    for rate in rates:
        for method in METHODS:
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing,
                           budget="wall", speedup=1.0)
            rows.append(row("nonaligned", 3, rate, None, method, res))
            log.info("wall", rate=rate, method=method, output=round(res["output_rate"], 1))
    return _compare(rows, ("input_rate",))


def index_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Ours: the per-basic-window indexes with the indexed cost model (costmodel
    docstring) on the same virtual CPU (capacity in the unindexed calibration's units)."""
    rows: list[dict[str, Any]] = []
    for rate in rates:
        for method in ("grubjoin-indexed", "taildrop-indexed"):
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing)
            rows.append(row("nonaligned", 3, rate, None, method, res))
            log.info("index_sweep", rate=rate, method=method,
                     output=round(res["output_rate"], 1))
    return add_baseline_ratios(rows, ("input_rate",), ("grubjoin-indexed",),
                               ("taildrop-indexed",))


def tuple_cost_sweep(costs: list[float], timing: Timing) -> list[dict[str, Any]]:
    """Ours: the Fig. 11/12 and Table II points that differ most from the paper, again
    with a fixed cost ``tuple_cost`` per admitted tuple that no shedder avoids (the
    capacity recalibrated so the full join still saturates at 100 tuples/s)."""
    points = [("aligned", 500.0, ALIGNED, 1.0), ("nonaligned", 200.0, NONALIGNED, 1.0),
              ("nonaligned", 500.0, NONALIGNED, 1.0),
              ("nonaligned-kappa75", 200.0, (NONALIGNED[0], (2.0, 2.0, 75.0, 2.0, 2.0)), 1.0),
              ("nonaligned-x10", 75.0, NONALIGNED, 10.0)]
    rows: list[dict[str, Any]] = []
    for tc in costs:
        capacity = calibrate(timing, tc)
        for name, rate, (lags, kap), mult in points:
            for method in METHODS:
                res = simulate(3, rate, lags, kap, method, capacity, timing,
                               cost_multiplier=mult, tuple_cost=tc)
                rows.append(row(name, 3, rate, None, method, res, tuple_cost=tc,
                                cost_multiplier=mult, capacity=round(capacity, 1)))
                log.info("tuple_cost", tuple_cost=tc, point=name, method=method,
                         output=round(res["output_rate"], 1))
    return _compare(rows, ("scenario", "input_rate", "tuple_cost"))


#: the sweeps, each a part of `harvest bench grubjoin --only` (``sweeps`` = all of them)
SWEEPS = ("rate_sweep", "kappa_sweep", "m_sweep", "cost_sweep", "wall_sweep", "index_sweep",
          "tuple_cost_sweep")


def sweeps(quick: bool, only: tuple[str, ...] = SWEEPS) -> dict[str, Any]:
    """The sweeps named in ``only`` (default all) at the quick or full sizes (the slow
    part), as the JSON's keys."""
    # settle = w + Δ: the throttle starts at z = 1 (GrubJoin §IV-A), so the first Δ
    # overflows the input queue and leaves a hole of dropped tuples in every window;
    # nothing is measured until that hole has aged out of the windows (a 5 s settle
    # measured grubjoin's first configuration against the hole: 0 results, nonaligned)
    timing = Timing(20.0, 25.0, 10.0) if quick else Timing(20.0, 25.0, 30.0)
    capacity = calibrate(timing)
    log.info("calibrated", capacity=round(capacity))
    #: Fig. 12, 13 and Table II are means over seeds (ours: single runs swing ~2x)
    seeds = (1, 2) if quick else (1, 2, 3)
    rates = [50.0, 100.0, 300.0, 500.0] if quick else [50.0, 100.0, 200.0, 350.0, 500.0]
    kappas = [25.0, 50.0, 75.0] if quick else [10.0, 25.0, 50.0, 75.0, 100.0]
    out: dict[str, Any] = {"capacity_cost_units_per_s": capacity,
                           "timing": {**timing.snapshot(), "seeds": list(seeds)}}
    if "rate_sweep" in only:
        out.update(rate_sweep=rate_sweep(rates, capacity, timing), sweep_rates=rates)
    if "kappa_sweep" in only:
        out.update(kappa_sweep=kappa_sweep(kappas, capacity, timing, seeds),
                   sweep_kappas=kappas)
    if "m_sweep" in only:
        out.update(m_sweep=m_sweep(capacity, timing, seeds),
                   m_sweep_timing={**timing.snapshot(), "seeds": list(seeds)})
    if "cost_sweep" in only:
        mults = [1.0, 4.0, 10.0] if quick else [1.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        out["cost_sweep"] = cost_sweep(mults, capacity, timing, seeds)
    if "wall_sweep" in only:
        out["wall_sweep"] = wall_sweep([100.0, 300.0] if quick else [100.0, 200.0, 350.0, 500.0],
                                       capacity, timing)
    if "index_sweep" in only:
        out["index_sweep"] = index_sweep([300.0] if quick else [200.0, 500.0], capacity, timing)
    if "tuple_cost_sweep" in only:
        out["tuple_cost_sweep"] = tuple_cost_sweep([3000.0] if quick else [300.0, 3000.0],
                                                   timing)
    return out
