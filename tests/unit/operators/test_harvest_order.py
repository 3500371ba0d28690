"""Ours: execution order by harvested yield, and the probe share of the fallback."""

from __future__ import annotations

import numpy as np

from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.plans import harvest_plans, yield_order
from pipeline.operators.shedding.grubjoin.share import MIN_SHARE, cheapest_productive, probe_share


def _model() -> HarvestModel:
    n = 4
    flat = np.full(n, 1.0)
    peak = np.array([1.0, 1.0, 0.0, 0.0])
    # direction 0: order (1, 2); stream 1's partners are spread, stream 2's in windows 0-1
    scores = [[flat, peak], [flat, flat], [flat, flat]]
    lam = np.array([100.0, 100.0, 100.0])
    sel = np.full((3, 3), 0.01)
    orders = np.array([[1, 2], [0, 2], [0, 1]])
    return HarvestModel.build(lam, lam * 10, sel, scores, orders, tuple_cost=1.0)


def test_yield_order_puts_the_sparser_harvest_first() -> None:
    model = _model()
    counts = np.array([[1, 1], [0, 0], [0, 0]])
    perm = yield_order(model, counts)
    # one window of stream 1 yields 1/4 of its matches, one of stream 2 half of them
    assert perm[0].tolist() == [0, 1]
    counts = np.array([[4, 1], [0, 0], [0, 0]])
    perm = yield_order(model, counts)
    assert perm[0].tolist() == [1, 0]
    flat, peak = np.full(4, 1.0), np.array([0.0, 1.0, 1.0, 0.0])
    plans = harvest_plans(model, counts, [[flat, peak], [flat, flat], [flat, flat]], perm)
    assert plans[0].order == (2, 1)
    assert plans[0].windows == ((1,), None)  # the counts follow their stream
    # reordering never changes the modelled output of the windows
    assert (np.sort(np.array(plans[0].order)) == [1, 2]).all()


def test_probe_share_fits_the_budget() -> None:
    model = _model()
    counts = cheapest_productive(model)
    cost = float(model.evaluate(counts)[0])
    fixed = 300.0
    full = model.full_cost()
    z = 0.5 * (cost + fixed) / (2 * full)
    q = probe_share(model, counts, z)
    assert 0 < q < 1
    assert fixed + q * (cost - fixed) <= z * full * (1 + 1e-9)
    assert probe_share(model, counts, 1.0) == 1.0
    assert probe_share(model, counts, 1e-9) == MIN_SHARE
