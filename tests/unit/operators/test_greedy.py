"""Greedy harvest fractions (GrubJoin Fig. 6) against the exact optimum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.bruteforce import optimal
from pipeline.operators.shedding.grubjoin.greedy import (
    configure,
    greedy_double_sided,
    greedy_forward,
    greedy_reverse,
)
from pipeline.testing.costmodel import random_model

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


def forward_steps(model: HarvestModel, counts: np.ndarray) -> list[np.ndarray]:
    """Every one-step forward candidate of GREEDYPICK (Fig. 6) from ``counts``: one more
    logical basic window at a position of an initialized direction, or all ones for an
    uninitialized one."""
    nmax = model.max_counts()
    steps = []
    for i in range(model.m):
        if not counts[i].any():
            c = counts.copy()
            c[i] = 1
            steps.append(c)
            continue
        for j in range(model.m - 1):
            if counts[i, j] < nmax[i, j]:
                c = counts.copy()
                c[i, j] += 1
                steps.append(c)
    return steps


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(2, 5), z=st.floats(0.05, 1.0),
       heuristic=st.sampled_from(["bdopdc", "bo", "bopc"]))
def test_greedy_is_bounded_by_the_optimum_and_forward_greedy_is_maximal(
        seed: int, n: int, z: float, heuristic: str) -> None:
    """Per instance, the greedy guarantees only this much: it never beats the exact
    optimum, and forward greedy stops only when no single forward step (Fig. 6) both
    fits the budget and adds output.

    No per-instance optimality ratio holds: like any ratio greedy for a knapsack, a
    step with a good ΔO/ΔC can waste budget, and at small n one step is a big share of
    the cost. E.g. seed 67979, n = 2, z = 0.625: greedy reverse (double-sided, since
    z > 0.5) is at 0.659·C(1) and removes the one window left at a first position —
    which switches that direction off and saves 0.365·C(1) where 0.034·C(1) was needed,
    at the best ΔO/ΔC — and ends at 47% of the budget with φ = 0.61 (forward greedy and
    the exact solver reach φ = 1). On m = 3 instances with n = 2, 3, 5, φ < 0.7 occurs
    for 0.1-0.25% of (instance, z) pairs (double-sided greedy; forward greedy too at
    n = 3, 5) while the mean stays ≥ 0.98. The aggregate targets are checked below;
    ``configure`` is exact at m = 3.
    """
    model = random_model(seed, 3, n)
    _, best = optimal(model, z)
    got = model.evaluate(greedy_double_sided(model, z))[1]
    assert got <= best * (1 + 1e-9)
    budget = z * model.full_cost() * (1 + 1e-9)
    counts = greedy_forward(model, z, heuristic)  # type: ignore[arg-type]
    cost, out = model.evaluate(counts)
    assert cost <= budget
    for step in forward_steps(model, counts):
        c_step, o_step = model.evaluate(step)
        assert c_step > budget or o_step <= out + 1e-9 * max(1.0, float(out))


def test_greedy_optimality_on_benchmark_like_instances() -> None:
    """Fig. 7 setting (m = 3, n = 10, as ``harvest bench grubjoin``): greedy
    double-sided BDOpDC is within 0.98 of the optimum on average (the paper: "optimal
    for z ≥ 0.4 and within 0.98 of optimal elsewhere"); per z ≥ 0.97 on average, and
    no instance below 0.8 (one window is a tenth of a window here; measured on this
    sample: mean 0.9885, worst z-mean 0.979, min 0.865)."""
    zs = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
    phi: dict[float, list[float]] = {z: [] for z in zs}
    for seed in range(40):
        model = random_model(seed, 3, 10)
        for z in zs:
            _, best = optimal(model, z)
            phi[z].append(float(model.evaluate(greedy_double_sided(model, z))[1]) / best)
    every = [p for v in phi.values() for p in v]
    assert np.mean(every) >= 0.98
    assert min(np.mean(v) for v in phi.values()) >= 0.97
    assert min(every) >= 0.8


def test_greedy_mean_optimality_on_a_fixed_sample() -> None:
    """Coarse steps (n = 5): single instances can be well below the optimum (see
    above), the mean cannot."""
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
            gaps += int(greedy < 0.97 * best)
    assert gaps > 0
