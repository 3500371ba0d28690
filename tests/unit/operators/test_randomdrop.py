"""RandomDrop keep probabilities (Ayad & Naughton-style sizing) against a grid search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.baselines.randomdrop import keep_probabilities, thinned_cost
from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.testing.costmodel import random_model


def whole_windows(model: HarvestModel) -> HarvestModel:
    m = model.m
    return HarvestModel.build(np.array(model.rates), np.array(model.window_tuples),
                              np.array(model.selectivity),
                              [[np.ones(1)] * (m - 1) for _ in range(m)],
                              np.array(model.orders), model.tuple_cost)


def loop_cost(model: HarvestModel, x: np.ndarray) -> float:
    """C(x) written out: thinned rates and window sizes, NLJ over the join order."""
    total = 0.0
    for i in range(model.m):
        n_ij = 1.0
        c_i = model.tuple_cost
        for l in model.orders[i]:
            s = x[l] * model.window_tuples[l]
            c_i += s * n_ij
            n_ij *= model.selectivity[i][l] * s
        total += x[i] * model.rates[i] * c_i
    return total


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4),
       x=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4))
def test_thinned_cost_matches_loops(seed: int, m: int, x: list[float]) -> None:
    model = whole_windows(random_model(seed, m, 1, tuple_cost=3.0))
    keep = np.array(x[:m])
    assert thinned_cost(model, keep) == pytest.approx(loop_cost(model, keep), rel=1e-9)
    assert thinned_cost(model, np.ones(m)) == pytest.approx(model.full_cost(), rel=1e-9)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), z=st.floats(0.05, 0.95))
def test_keep_probabilities_fit_the_budget_and_beat_a_grid(seed: int, z: float) -> None:
    model = whole_windows(random_model(seed, 3, 1, tuple_cost=1.0))
    budget = z * thinned_cost(model, np.ones(3))
    x = keep_probabilities(model, z)
    assert thinned_cost(model, x) <= budget * (1 + 1e-9)
    grid = np.linspace(0.05, 1.0, 14)
    best = max(
        (float(np.prod(c)) for c in itertools.product(grid, repeat=3)
         if thinned_cost(model, np.array(c)) <= budget),
        default=0.0,
    )
    assert float(np.prod(x)) >= 0.93 * best


def test_z_one_keeps_everything_and_bad_z_fails() -> None:
    model = whole_windows(random_model(1, 3, 1))
    assert keep_probabilities(model, 1.0).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ConfigError, match="z"):
        keep_probabilities(model, 0.0)
