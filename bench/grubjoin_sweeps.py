"""GrubJoin (Gedik et al., TKDE) §VI output-rate sweeps: grubjoin vs randomdrop vs the
full join on the sensors workload, on the calibrated virtual CPU
(:func:`bench.grubjoin_sim.calibrate`) or the wall clock.

* Fig. 11 — output vs input rate, aligned and nonaligned streams (+ grubjoin without
  learned time correlation at the top rate);
* Fig. 12 — output vs the time-correlation width κ_3;
* Fig. 13 — output vs the number of streams m;
* Table II — output vs the predicate cost multiplier;
* the Fig. 11 sweep again on the wall-clock budget;
* ours — the per-basic-window indexes with the indexed cost model.
"""

from __future__ import annotations

from typing import Any

from bench.grubjoin_sim import (
    ALIGNED,
    NONALIGNED,
    Timing,
    calibrate,
    row,
    simulate,
    simulate_mean,
)
from pipeline.core.logging import get_logger

log = get_logger("bench.grubjoin")

METHODS = ("grubjoin", "randomdrop", "full")


def rate_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Fig. 11: output vs input rate per method, aligned and nonaligned; plus
    ``grubjoin-flat`` (no learned time correlation) at the top rate."""
    rows: list[dict[str, Any]] = []
    for scen, (lags, kap) in (("aligned", ALIGNED), ("nonaligned", NONALIGNED)):
        for rate in rates:
            for method in METHODS:
                res = simulate(3, rate, lags, kap, method, capacity, timing)
                rows.append(row(scen, 3, rate, None, method, res))
                log.info("fig11", scenario=scen, rate=rate, method=method,
                         output=round(res["output_rate"], 1), wall=round(res["wall_s"], 1))
        res = simulate(3, rates[-1], lags, kap, "grubjoin-flat", capacity, timing)
        rows.append(row(scen, 3, rates[-1], None, "grubjoin-flat", res))
    return rows


def kappa_sweep(kappas: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Fig. 12: output vs κ_3 (nonaligned, 200 tuples/s per stream)."""
    rows: list[dict[str, Any]] = []
    for k3 in kappas:
        for method in ("grubjoin", "randomdrop"):
            kap = (2.0, 2.0, k3, 2.0, 2.0)
            res = simulate(3, 200.0, NONALIGNED[0], kap, method, capacity, timing)
            rows.append(row("nonaligned", 3, 200.0, k3, method, res))
            log.info("fig12", kappa=k3, method=method, output=round(res["output_rate"], 1))
    return rows


def m_sweep(capacity: float, timing: Timing, seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    """Fig. 13: output vs m = 3, 4, 5 (nonaligned, 100 tuples/s per stream), each point
    the mean over ``seeds`` (ours: single runs swing 2-4x at m = 5)."""
    rows: list[dict[str, Any]] = []
    for m in (3, 4, 5):
        for method in METHODS:
            res = simulate_mean(m, 100.0, NONALIGNED, method, capacity, timing, seeds)
            rows.append(row("nonaligned", m, 100.0, None, method, res,
                            seeds=list(seeds), per_seed=res["per_seed"]))
            log.info("fig13", m=m, method=method, output=round(res["output_rate"], 1))
    return rows


def cost_sweep(multipliers: list[float], capacity: float,
               timing: Timing) -> list[dict[str, Any]]:
    """Table II: output vs the predicate cost multiplier (nonaligned, 75 tuples/s)."""
    rows: list[dict[str, Any]] = []
    for mult in multipliers:
        for method in ("grubjoin", "randomdrop"):
            res = simulate(3, 75.0, NONALIGNED[0], NONALIGNED[1], method, capacity, timing,
                           cost_multiplier=mult)
            rows.append(row("nonaligned", 3, 75.0, None, method, res, cost_multiplier=mult))
            log.info("table2", multiplier=mult, method=method,
                     output=round(res["output_rate"], 1))
    return rows


def wall_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Fig. 11 (nonaligned) on the wall-clock budget: real time, speed-up 1, the
    machine's own speed."""
    rows: list[dict[str, Any]] = []
    for rate in rates:
        for method in ("grubjoin", "randomdrop"):
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing,
                           budget="wall", speedup=1.0)
            rows.append(row("nonaligned", 3, rate, None, method, res))
            log.info("wall", rate=rate, method=method, output=round(res["output_rate"], 1))
    return rows


def index_sweep(rates: list[float], capacity: float, timing: Timing) -> list[dict[str, Any]]:
    """Ours: the per-basic-window indexes with the indexed cost model (costmodel
    docstring) on the same virtual CPU (capacity in the unindexed calibration's units)."""
    rows: list[dict[str, Any]] = []
    for rate in rates:
        for method in ("grubjoin-indexed", "full-indexed"):
            res = simulate(3, rate, NONALIGNED[0], NONALIGNED[1], method, capacity, timing)
            rows.append(row("nonaligned", 3, rate, None, method, res))
            log.info("index_sweep", rate=rate, method=method,
                     output=round(res["output_rate"], 1))
    return rows


def sweeps(quick: bool) -> dict[str, Any]:
    """Every sweep at the quick or full sizes (the slow part), as the JSON's keys."""
    timing = Timing(20.0, 5.0, 5.0) if quick else Timing(20.0, 15.0, 15.0)
    capacity = calibrate(timing)
    log.info("calibrated", capacity=round(capacity))
    rates = [50.0, 100.0, 300.0, 500.0] if quick else [50.0, 100.0, 200.0, 350.0, 500.0]
    rate_rows = rate_sweep(rates, capacity, timing)
    kappas = [25.0, 75.0] if quick else [10.0, 25.0, 50.0, 75.0, 100.0]
    kappa_rows = kappa_sweep(kappas, capacity, timing)
    # Fig. 13: one 15 s window is only 3 adaptation intervals and single runs swing
    # 2-4x at m = 5, so each point is the mean over seeds of a longer run (ours)
    m_timing = Timing(20.0, 15.0, 15.0) if quick else Timing(20.0, 20.0, 30.0)
    m_seeds = (1, 2) if quick else (1, 2, 3)
    m_rows = m_sweep(capacity, m_timing, m_seeds)
    cost_rows = cost_sweep([1.0, 4.0, 10.0] if quick else [1.0, 2.0, 4.0, 6.0, 8.0, 10.0],
                           capacity, timing)
    wall_rows = wall_sweep([100.0, 300.0] if quick else [100.0, 200.0, 350.0, 500.0],
                           capacity, timing)
    index_rows = index_sweep([300.0] if quick else [200.0, 500.0], capacity, timing)
    return {
        "capacity_cost_units_per_s": capacity,
        "index_sweep": index_rows,
        "timing": timing.snapshot(),
        "m_sweep_timing": {**m_timing.snapshot(), "seeds": list(m_seeds)},
        "rate_sweep": rate_rows,
        "kappa_sweep": kappa_rows,
        "m_sweep": m_rows,
        "cost_sweep": cost_rows,
        "wall_sweep": wall_rows,
        "sweep_rates": rates,
        "sweep_kappas": kappas,
    }
