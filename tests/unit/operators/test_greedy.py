"""Greedy harvest fractions (GrubJoin Fig. 6) against the exact optimum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.operators.bruteforce import optimal
from pipeline.operators.costmodel import HarvestModel
from pipeline.operators.greedy import (
    configure,
    greedy_double_sided,
    greedy_forward,
    greedy_reverse,
)
from tests.unit.operators.harvest_models import random_model

SOLVERS = [greedy_forward, greedy_reverse, greedy_double_sided]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(2, 4), n=st.integers(1, 5),
       z=st.floats(0.01, 1.0), heuristic=st.sampled_from(["bdopdc", "bo", "bopc"]),
       tc=st.sampled_from([0.0, 1.0]))
def test_every_greedy_configuration_is_feasible(seed: int, m: int, n: int, z: float,
                                                heuristic: str, tc: float) -> None:
    model = random_model(seed, m, n, tc)
    budget = z * model.full_cost()
    for solve in SOLVERS:
        counts = solve(model, z, heuristic)  # type: ignore[arg-type]
        assert counts.shape == (m, m - 1)
        assert (counts >= 0).all() and (counts <= model.max_counts()).all()
        assert model.evaluate(counts)[0] <= budget * (1 + 1e-9)
        # a direction is either off or scans at least one window at every position
        assert ((counts == 0).all(axis=1) | (counts > 0).all(axis=1)).all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(2, 5), z=st.floats(0.05, 1.0))
def test_greedy_is_near_the_brute_force_optimum(seed: int, n: int, z: float) -> None:
    model = random_model(seed, 3, n)
    _, best = optimal(model, z)
    got = model.evaluate(greedy_double_sided(model, z))[1]
    assert got <= best * (1 + 1e-9)
    # Fig. 7 reports φ ≥ 0.98 on average; single small instances can be worse
    assert got >= 0.7 * best


def test_greedy_mean_optimality_on_a_fixed_sample() -> None:
    phis = []
    for seed in range(30):
        model = random_model(seed, 3, 5)
        for z in (0.1, 0.3, 0.6, 0.9):
            _, best = optimal(model, z)
            phis.append(model.evaluate(greedy_double_sided(model, z))[1] / best)
    assert np.mean(phis) >= 0.95


def test_z_one_gives_the_full_join() -> None:
    model = random_model(2, 4, 3)
    for solve in SOLVERS:
        assert (solve(model, 1.0) == model.max_counts()).all()


def test_the_only_productive_direction_gets_its_peak_windows() -> None:
    """Fig. 4 flavour: S_3 tuples find their partners in one window each (S_3 lags the
    others), so direction 3 is configured as in the optimum, before anything else."""
    n = 5
    peak = np.full(n, 1e-4)
    lag_1 = peak.copy()
    lag_1[0] = 1.0   # S_3 − S_2 lag ≈ 1 s → window 0
    lag_3 = peak.copy()
    lag_3[2] = 1.0   # S_3 − S_1 lag ≈ 5 s → window 2
    nothing = np.full(n, 1e-4)
    orders = np.array([[1, 2], [2, 0], [1, 0]])
    scores = [[nothing, nothing], [nothing, nothing], [lag_1, lag_3]]
    lam = np.array([300.0, 100.0, 150.0])
    sel = np.full((3, 3), 0.01)
    model = HarvestModel.build(lam, lam * 10, sel, scores, orders)
    counts = greedy_double_sided(model, 0.1)
    exact, _ = optimal(model, 0.1)
    assert counts[2].tolist() == exact[2].tolist()
    assert counts[2].min() >= 1
    assert model.evaluate(counts)[1] == pytest.approx(optimal(model, 0.1)[1], rel=1e-6)


@pytest.mark.parametrize(("z", "heuristic"), [(0.0, "bdopdc"), (1.2, "bo"), (0.5, "best")])
def test_bad_arguments(z: float, heuristic: str) -> None:
    with pytest.raises(ConfigError):
        greedy_forward(random_model(0, 2, 2), z, heuristic)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(2, 5), n=st.integers(1, 6),
       z=st.floats(0.01, 1.0), tc=st.sampled_from([0.0, 1.0]))
def test_configure_is_always_feasible(seed: int, m: int, n: int, z: float, tc: float) -> None:
    model = random_model(seed, m, n, tc)
    counts = configure(model, z)
    assert counts.shape == (m, m - 1)
    assert (counts >= 0).all() and (counts <= model.max_counts()).all()
    assert model.evaluate(counts)[0] <= z * model.full_cost() * (1 + 1e-9)
    assert ((counts == 0).all(axis=1) | (counts > 0).all(axis=1)).all()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(2, 10), z=st.floats(0.02, 1.0))
def test_configure_meets_the_optimality_target_for_three_streams(seed: int, n: int,
                                                                 z: float) -> None:
    """Issue target: φ ≥ 0.97 on every m = 3 instance (here: exact, φ = 1)."""
    model = random_model(seed, 3, n)
    _, best = optimal(model, z)
    got = model.evaluate(configure(model, z))[1]
    assert got >= 0.97 * best
    assert got == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_configure_beats_greedy_where_the_budget_must_be_split() -> None:
    """Instances where greedy double-sided is < 0.97 of the optimum exist; configure is
    exact on them (this is the φ gap the issue reports at small z)."""
    gaps = 0
    for seed in range(60):
        model = random_model(seed, 3, 6)
        for z in (0.05, 0.1, 0.2):
            _, best = optimal(model, z)
            greedy = model.evaluate(greedy_double_sided(model, z))[1]
            got = model.evaluate(configure(model, z))[1]
            assert got >= greedy * (1 - 1e-9)
            assert got == pytest.approx(best, rel=1e-9, abs=1e-12)
            gaps += greedy < 0.97 * best
    assert gaps > 0
