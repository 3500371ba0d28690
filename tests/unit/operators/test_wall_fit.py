"""The wall clock's seconds-per-tuple fit (wall_fit.py) against numpy's least squares."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.shedding.wall_fit import WallCostFit


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), units=st.integers(3, 40),
       age=st.sampled_from([1.0, 0.8, 0.5]))
def test_fit_equals_weighted_least_squares(seed: int, units: int, age: float) -> None:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 500, units).astype(float)
    x = n * rng.uniform(0, 5_000, units)
    y = 30e-6 * n + 5e-9 * x + rng.normal(0, 1e-4, units)
    fit = WallCostFit()
    weights = np.empty(units)
    for r in range(units):
        fit.age(age)
        weights[:r] *= age
        fit.observe(float(n[r]), float(x[r]), float(y[r]))
        weights[r] = 1.0
    got = fit.solve()
    sw = np.sqrt(weights)
    (a, b), *_ = np.linalg.lstsq(np.column_stack([n, x]) * sw[:, None], y * sw, rcond=None)
    if got is None:  # refused: singular, or a fit outside a ≥ 0, b > 0
        det = np.linalg.det((np.column_stack([n, x]) * weights[:, None]).T
                            @ np.column_stack([n, x]))
        assert b <= 0 or a < 0 or det <= 1e-6 * (weights * n * n).sum() * (
            weights * x * x).sum()
        return
    assert got == pytest.approx((a, b), rel=1e-6, abs=1e-15)


def test_alike_units_do_not_determine_the_fit() -> None:
    fit = WallCostFit()
    for _ in range(5):  # every unit has the same comparisons per tuple
        fit.observe(10.0, 10_000.0, 0.01)
    assert fit.solve() is None
    fit.observe(10.0, 0.0, 0.001)
    a, b = fit.solve() or (0.0, 0.0)
    assert a == pytest.approx(1e-4) and b == pytest.approx(9e-7)


def test_snapshot_round_trip_and_the_older_five_sums() -> None:
    fit = WallCostFit()
    fit.observe(3.0, 100.0, 0.5)
    assert WallCostFit.restore(fit.snapshot()).snapshot() == fit.snapshot()
    old = WallCostFit.restore([2.0, 10.0, 1.0, 50.0, 5.0])  # n, Σx, Σy, Σx², Σxy
    assert old.tuples == 2.0 and old.comparisons == 10.0 and old.seconds == 1.0
    with pytest.raises(ValueError, match="8 sums"):
        WallCostFit.restore([1.0, 2.0])
