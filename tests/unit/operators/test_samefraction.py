"""One harvest fraction for every direction (Gedik et al., CIKM; samefraction.py) against
brute force over every common fraction, and in the engine."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.samefraction import counts_at, same_fraction
from pipeline.operators.shedding.grubjoin.share import MIN_SHARE


def _model(seed: int, m: int, sizes: tuple[int, ...]) -> HarvestModel:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(50, 400, m)
    sel = rng.uniform(1e-4, 5e-3, (m, m))
    np.fill_diagonal(sel, 0.0)
    orders = np.array([[l for l in range(m) if l != i] for i in range(m)])
    scores = [[rng.random(sizes[l]) ** 3 for l in orders[i]] for i in range(m)]
    return HarvestModel.build(rates, rates * rng.uniform(5, 30), sel, scores, orders,
                              tuple_cost=float(rng.uniform(0, 50)))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("m", [2, 3])
def test_the_largest_common_fraction_that_fits(seed: int, m: int) -> None:
    sizes = tuple(int(v) for v in np.random.default_rng(seed).integers(2, 9, m))
    model = _model(seed, m, sizes)
    full = model.full_cost()
    fixed = model.fixed_cost()
    budget = float(np.random.default_rng(seed + 100).uniform(fixed, full * 1.1))
    counts, share = same_fraction(model, budget)
    # brute force: every fraction k/n on a fine grid, the largest whose counts fit
    fits = [r for r in np.linspace(1e-3, 1.0, 2000)
            if float(model.evaluate(counts_at(model, r))[0]) <= budget]
    if fits:
        assert share == 1.0
        assert np.array_equal(counts, counts_at(model, max(fits)))
    else:
        assert np.array_equal(counts, np.ones_like(counts))
        cost = float(model.evaluate(counts)[0])
        want = max(MIN_SHARE, (budget - fixed) / (cost - fixed))
        assert share == pytest.approx(min(1.0, want))
    # every position scans the same share of its window, up to one basic window
    frac = counts / model.max_counts()
    assert frac.max() - frac.min() <= 1.0 / model.max_counts().min() + 1e-9
