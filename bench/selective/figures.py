"""The parts of `harvest bench selective`, one per figure of Gedik et al. (CIKM §5), each
with the paper's random drop in the same run: rows ``{figure, config, kappa, rate,
output_rate, ratio_vs_randomdrop, ...}`` (and ``paper`` where the paper gives a number).

* ``fig3_4`` — rate adaptation under the 100 → 500 → 300 → 100 tuples/s profile, τ = 0,
  threshold 3, w = 20 s; rows per phase of the profile, and the output and r over time;
* ``fig5`` — rate adaptation vs random drop over κ and the window size, at 500 tuples/s;
* ``fig6_7`` — rate vs + time correlation vs + join direction under the profile,
  τ = 5/8·ς; rows per phase, and the time series;
* ``fig8`` — the three settings vs κ at threshold 4, 500 tuples/s, τ = 5/8·ς;
* ``fig9`` — basic window size b (rate + time + direction), non-indexed 20 s windows and
  indexed (time-sorted inverted index per basic window) 200 s windows, 500 tuples/s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.selective.sim import CONFIGS, Point, calibrate, run_point
from connectors.workloads.spec import PAPER_PROFILE

BUCKET_MS = 5_000
HIGH_RATE = 500.0
#: the paper's numbers: (figure, config, rate) → ratio (Fig. 4: vs random drop; Fig. 7:
#: vs the setting below it)
PAPER = {("fig3_4", "rate", 500.0): 2.0, ("fig3_4", "rate", 300.0): 1.5,
         ("fig6_7", "rate+time", 500.0): 1.5, ("fig6_7", "rate+time+direction", 500.0): 1.4}


@dataclass(frozen=True)
class Sizes:
    """How much one part runs: seeds, the constant-rate runs' spans (s), the sweeps."""

    seeds: tuple[int, ...]
    settle_s: float
    measure_s: float
    kappas: tuple[float, ...]
    windows_s: tuple[int, ...]
    basics_s: tuple[float, ...]
    indexed_basics_s: tuple[float, ...]
    indexed_measure_s: float


    profile: tuple[tuple[float, float], ...]
    fig8_kappas: tuple[float, ...]
    #: Fig. 7's setting at a constant 500/s, after the throttle settled (``steady`` rows)
    steady_seeds: tuple[int, ...] = (1,)
    #: the steady rows' measured span (s): a 5-s bucket's output swings by up to 2×
    steady_measure_s: float = 5.0
    #: the seeds of Fig. 7's profile runs (Fig. 3–4's use ``seeds``)
    fig7_seeds: tuple[int, ...] = (1,)


#: quick: the profile's 100/s phases shortened (the 500/s and 300/s ones as the paper's)
QUICK_PROFILE = ((25.0, 100.0), (15.0, 500.0), (15.0, 300.0), (5.0, 100.0))
QUICK = Sizes((1,), 5.0, 5.0, (0.4, 1.2), (10,), (1.0,), (10.0,), 5.0, QUICK_PROFILE,
              (0.8, 1.2))
FULL = Sizes((1,), 10.0, 15.0, (0.4, 0.8, 1.2), (10, 20), (0.5, 1.0, 2.0, 5.0),
             (2.0, 5.0, 20.0), 10.0, PAPER_PROFILE, (0.8, 1.0, 1.2),
             steady_seeds=(1, 2, 3, 4, 5, 6, 7, 8), steady_measure_s=25.0,
             fig7_seeds=(1, 2, 3, 4))


def _phases(profile: tuple[tuple[float, float], ...]) -> list[tuple[float, float, float]]:
    """(start s, end s, rate) of each segment of the profile."""
    out, t = [], 0.0
    for seconds, rate in profile:
        out.append((t, t + seconds, rate))
        t += seconds
    return out


def _mean(runs: list[dict[str, Any]], key: str = "output_rate") -> float:
    return float(np.mean([r[key] for r in runs]))


def _row(figure: str, config: str, point: Point, rate: float, output: float,
         base: float, **extra: Any) -> dict[str, Any]:
    ratio = output / base if base > 0 else None
    row = {"figure": figure, "config": config, "kappa": point.kappa, "rate": rate,
           "output_rate": round(output, 2),
           "ratio_vs_randomdrop": None if ratio is None else round(ratio, 3),
           "threshold": point.threshold, "window_s": point.window_ms / 1000.0,
           "basic_window_s": point.basic_ms / 1000.0, "shift_s": point.shift_s,
           "indexed": point.index, **extra}
    paper = PAPER.get((figure, config, rate))
    if paper is not None:
        row["paper"] = paper
    return row


def _series(runs: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Output per second per bucket (mean over seeds) and the fraction r per step."""
    keys = sorted(runs[0]["per_bucket"])
    out = [round(float(np.mean([r["per_bucket"].get(k, 0) for r in runs])) / (
        BUCKET_MS / 1000.0), 1) for k in keys]
    steps = runs[0]["steps"]
    # r: the mean harvest fraction (GrubJoin), the kept share of the input (random drop)
    frac = [round(float(np.mean(s.get("harvest_fractions", s.get("keep", [s["z"]])))), 4)
            for s in steps]
    return {"t_s": [k * BUCKET_MS / 1000.0 for k in keys], "output_per_s": out,
            "step_t_s": [s["time"] / 1000.0 for s in steps], "r": frac}


def _profile_part(figure: str, point: Point, configs: tuple[str, ...], sizes: Sizes
                  ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every config under the profile; rows per phase (output averaged over the phase)
    with the ratio to random drop and to the setting below (``ratio_vs_below``)."""
    point = dataclasses.replace(point, profile=sizes.profile)
    cap = calibrate(point)
    total = sum(s for s, _ in sizes.profile)
    runs = {c: [run_point(point, c, cap, total - point.window_ms / 1000.0, 0.0, seed,
                          BUCKET_MS) for seed in sizes.seeds] for c in configs}
    rows: list[dict[str, Any]] = []
    for start, end, rate in _phases(sizes.profile):
        lo = max(start, point.window_ms / 1000.0)
        per = {c: float(np.mean([sum(v for k, v in r["per_bucket"].items()
                                     if lo <= k * BUCKET_MS / 1000.0 < end)
                                 for r in rs])) / (end - lo) for c, rs in runs.items()}
        for i, c in enumerate(configs):
            below = per[configs[i - 1]] if i > 1 else None
            rows.append(_row(figure, c, point, rate, per[c], per["randomdrop"],
                             phase_s=[start, end],
                             ratio_vs_below=None if not below else round(per[c] / below, 3)))
    for row in rows:  # Fig. 7's numbers are each setting over the one below it
        if figure == "fig6_7" and "paper" in row:
            row["paper_vs"] = "below"
    series = {c: _series(rs) for c, rs in runs.items()}
    return rows, {"capacity": cap, "series": series}


def fig3_4(sizes: Sizes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rate adaptation vs random drop under the profile, τ = 0 (time-aligned)."""
    return _profile_part("fig3_4", Point(kappa=0.8, shift_s=0.0), ("randomdrop", "rate"),
                         sizes)


def fig6_7(sizes: Sizes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The three settings under the profile, τ = 5/8·ς = 25 s; then the same at a
    constant 500/s once the throttle has settled (rows with ``steady = True``, the mean
    over :attr:`Sizes.steady_seeds`): the profile's 500/s phase is three adaptation
    steps long, and r is still falling through it."""
    rows, series = _profile_part("fig6_7", Point(kappa=0.8, shift_s=25.0), CONFIGS,
                                 dataclasses.replace(sizes, seeds=sizes.fig7_seeds))
    steady = _constant("fig6_7", [Point(kappa=0.8, shift_s=25.0, rate=HIGH_RATE)], CONFIGS,
                       dataclasses.replace(sizes, seeds=sizes.steady_seeds,
                                           measure_s=sizes.steady_measure_s),
                       lambda p: {"steady": True})
    _below(steady)
    return rows + steady, series


def _constant(figure: str, points: list[Point], configs: tuple[str, ...], sizes: Sizes,
              extra: Callable[[Point], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each point at its constant rate: every config and random drop, the mean over
    seeds; each point's capacity calibrated on its own window and index."""
    rows: list[dict[str, Any]] = []
    caps: dict[tuple[int, int, bool], float] = {}
    for p in points:
        key = (p.window_ms, p.basic_ms, p.index)
        if key not in caps:
            caps[key] = calibrate(p)
        measure = sizes.indexed_measure_s if p.index else sizes.measure_s
        runs = {c: [run_point(p, c, caps[key], sizes.settle_s + measure, sizes.settle_s, s)
                    for s in sizes.seeds] for c in configs}
        got = {c: _mean(rs) for c, rs in runs.items()}
        rate = float(p.rate or 0.0)
        rows += [_row(figure, c, p, rate, got[c], got["randomdrop"],
                      capacity=round(caps[key], 1), seeds=list(sizes.seeds),
                      per_seed=[round(r["output_rate"], 1) for r in runs[c]], **extra(p))
                 for c in configs]
    return rows


def fig5(sizes: Sizes) -> list[dict[str, Any]]:
    """Rate adaptation vs random drop over κ and the window, τ = 0, 500 tuples/s."""
    points = [Point(kappa=k, shift_s=0.0, window_ms=w * 1000, rate=HIGH_RATE)
              for w in sizes.windows_s for k in sizes.kappas]
    return _constant("fig5", points, ("randomdrop", "rate"), sizes, lambda p: {})


def fig8(sizes: Sizes) -> list[dict[str, Any]]:
    """The three settings vs κ at threshold 4, τ = 5/8·ς, 500 tuples/s."""
    points = [Point(kappa=k, shift_s=25.0, threshold=4.0, rate=HIGH_RATE)
              for k in sizes.fig8_kappas]
    rows = _constant("fig8", points, CONFIGS, sizes, lambda p: {})
    _below(rows)
    return rows


def _below(rows: list[dict[str, Any]]) -> None:
    """Each setting's ``ratio_vs_below``: its output over the setting below it (same κ;
    None for random drop and rate)."""
    for k in sorted({r["kappa"] for r in rows}):
        at = {r["config"]: r["output_rate"] for r in rows if r["kappa"] == k}
        for r in rows:
            if r["kappa"] == k and r["config"] != "randomdrop":
                below = CONFIGS[CONFIGS.index(r["config"]) - 1]
                r["ratio_vs_below"] = (round(r["output_rate"] / at[below], 3)
                                       if below != "randomdrop" and at[below] > 0 else None)


def fig9(sizes: Sizes) -> list[dict[str, Any]]:
    """b swept for rate + time + direction (random drop at each b): non-indexed 20 s and
    indexed 200 s windows (τ = 5/8·ς), 500 tuples/s, κ = 0.8."""
    flat = [Point(kappa=0.8, shift_s=25.0, basic_ms=int(b * 1000), rate=HIGH_RATE)
            for b in sizes.basics_s]
    indexed = [Point(kappa=0.8, shift_s=250.0, window_ms=200_000, basic_ms=int(b * 1000),
                     rate=HIGH_RATE, index=True) for b in sizes.indexed_basics_s]
    configs = ("randomdrop", "rate+time+direction")
    return _constant("fig9", flat + indexed, configs, sizes, lambda p: {})


def sized(quick: bool) -> Sizes:
    """The quick or full sizes."""
    return QUICK if quick else FULL
