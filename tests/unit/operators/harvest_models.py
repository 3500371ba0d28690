"""Random GrubJoin cost-model instances for the solver tests (own generator)."""

from __future__ import annotations

import numpy as np

from pipeline.operators.costmodel import HarvestModel, join_orders


def random_model(seed: int, m: int, n: int, tuple_cost: float = 0.0) -> HarvestModel:
    """Rates U[100, 500], symmetric selectivities, Gaussian-bump lag scores + noise."""
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
