"""GrubJoin (Gedik et al., TKDE) §VI, the harvest-fraction solvers on random instances.

* Fig. 7 — optimality φ = O(solver)/O(optimum) over random instances (m = 3, n = 10)
  for the online solver :func:`configure` (exact Pareto DP at this size; ours) and the
  paper's greedy variants;
* Fig. 8 — configuration time vs n for m = 3, 4, 5 (``configure`` and the paper's greedy
  double-sided) and m = 3 (brute force).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pipeline.core.logging import get_logger
from pipeline.operators.shedding.costmodel import HarvestModel, join_orders
from pipeline.operators.shedding.grubjoin.bruteforce import exhaustive, optimal
from pipeline.operators.shedding.grubjoin.greedy import (
    configure,
    greedy_double_sided,
    greedy_forward,
)

log = get_logger("bench.grubjoin")

#: throttle fractions z of Fig. 7
ZS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


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
    """Fig. 7: φ per z for ``configure`` (main rows), and per solver: configure, greedy
    double-sided BDOpDC, forward greedy per metric. The optimum is the grid-enumerating
    :func:`optimal` (independent of the Pareto DP inside ``configure``)."""
    rng = np.random.default_rng(seed)
    zs = list(ZS)
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
