"""Random GrubJoin cost models and the paper's formulas as plain loops (their oracle).

>>> model = random_model(seed=0, m=3, n=4)
>>> counts = model.max_counts()
>>> cost, out = model.evaluate(counts)
>>> want_cost, want_out = loop_model(model, counts)
>>> bool(np.isclose(cost, want_cost) and np.isclose(out, want_out))
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.operators.shedding.costmodel import HarvestModel, join_orders


def random_model(seed: int, m: int, n: int, tuple_cost: float = 0.0) -> HarvestModel:
    """Rates U[100, 500], symmetric selectivities, Gaussian-bump lag scores + noise;
    ``n`` basic windows per stream."""
    rng = np.random.default_rng(seed)
    w = 10.0
    lam = rng.uniform(100, 500, m)
    sel = rng.uniform(0.0005, 0.005, (m, m))
    sel = (sel + sel.T) / 2.0
    lag = rng.uniform(-w / 2, w / 2, m)
    width = rng.uniform(0.5, 3.0, m)
    orders = join_orders(sel)
    centers = (w / n) * (np.arange(n) + 0.5)
    scores = []
    for i in range(m):
        row = []
        for j in range(m - 1):
            l = int(orders[i, j])
            spread = max(width[i], width[l])
            bump = np.exp(-0.5 * ((centers - (lag[i] - lag[l])) / spread) ** 2)
            row.append(bump + 0.05 * rng.random(n))
        scores.append(row)
    return HarvestModel.build(lam, lam * w, sel, scores, orders, tuple_cost)


def loop_model(model: HarvestModel, counts: Sequence[Sequence[int]] | np.ndarray
               ) -> tuple[float, float]:
    """C({z}) and O({z}) of GrubJoin §IV-C written out with plain loops (the unindexed
    model, no per-probe cost); ``counts[i][j]`` basic windows harvested per direction."""
    m = model.m
    cost = sum(model.rates) * model.tuple_cost
    out = 0.0
    for i in range(m):
        n_ij = 1.0
        c_i = 0.0
        for j in range(m - 1):
            l = model.orders[i][j]
            n_l = model.n_windows[l]
            z = counts[i][j] / n_l
            s = model.window_tuples[l]
            c_i += z * s * n_ij
            p = model.yields[i][j][counts[i][j]]
            sel = model.selectivity if j == 0 or model.deep_selectivity is None else (
                model.deep_selectivity)
            n_ij *= p * sel[i][l] * s
        cost += model.rates[i] * c_i
        out += model.rates[i] * n_ij
    return cost, out
