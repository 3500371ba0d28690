"""Exact harvest-fraction solvers (GrubJoin §IV-C) against plain enumeration."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.bruteforce import (
    _direction_grid,
    direction_front,
    exhaustive,
    optimal,
    pareto_dp,
)
from pipeline.operators.shedding.grubjoin.greedy import greedy_double_sided
from pipeline.testing.costmodel import loop_model, random_model


def python_optimum(model: HarvestModel, z: float) -> float:
    """Every configuration, one at a time, with the loop model (the oracle)."""
    m = model.m
    budget = z * loop_model(model, model.max_counts())[0]
    best = -1.0
    for flat in itertools.product(*[range(int(n) + 1) for n in model.max_counts().ravel()]):
        counts = np.array(flat).reshape(m, m - 1)
        cost, out = loop_model(model, counts)
        if cost <= budget + 1e-9:
            best = max(best, out)
    return best


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 2),
       z=st.sampled_from([0.05, 0.2, 0.5, 0.8, 1.0]))
def test_exhaustive_and_optimal_match_python_enumeration(seed: int, n: int, z: float) -> None:
    model = random_model(seed, 3, n, tuple_cost=1.0)
    want = python_optimum(model, z)
    counts, out = exhaustive(model, z)
    assert out == pytest.approx(want, rel=1e-9)
    assert model.evaluate(counts)[1] == pytest.approx(want, rel=1e-9)
    counts2, out2 = optimal(model, z)
    assert out2 == pytest.approx(want, rel=1e-9)
    assert model.evaluate(counts2)[0] <= z * model.full_cost() * (1 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 3), n=st.integers(2, 4),
       z=st.floats(0.02, 1.0))
def test_pareto_optimum_equals_full_enumeration(seed: int, m: int, n: int, z: float) -> None:
    model = random_model(seed, m, n)
    _, want = exhaustive(model, z)
    counts, out = optimal(model, z)
    assert out == pytest.approx(want, rel=1e-9)
    cost, got = model.evaluate(counts)
    assert got == pytest.approx(out, rel=1e-9)
    assert cost <= z * model.full_cost() * (1 + 1e-9)


def test_z_one_scans_everything() -> None:
    model = random_model(1, 3, 4)
    counts, _ = optimal(model, 1.0)
    assert (counts == model.max_counts()).all()


@pytest.mark.parametrize("z", [0.0, -0.1, 1.5])
def test_bad_z(z: float) -> None:
    with pytest.raises(ConfigError, match="z"):
        optimal(random_model(0, 2, 2), z)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 3), n=st.integers(1, 5),
       z=st.floats(0.01, 1.0), tc=st.sampled_from([0.0, 1.0]))
def test_pareto_dp_equals_the_grid_optimum_and_is_feasible(seed: int, m: int, n: int,
                                                           z: float, tc: float) -> None:
    model = random_model(seed, m, n, tuple_cost=tc)
    _, want = optimal(model, z)
    counts, out = pareto_dp(model, z)
    cost, got = model.evaluate(counts)
    assert cost <= z * model.full_cost() * (1 + 1e-9)
    assert got == pytest.approx(out, rel=1e-9, abs=1e-12)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert ((counts == 0).all(axis=1) | (counts > 0).all(axis=1)).all()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4), n=st.integers(1, 4))
def test_direction_front_is_the_front_of_the_full_grid(seed: int, m: int, n: int) -> None:
    model = random_model(seed, m, n)
    arr = model.arrays()
    for i in range(m):
        cost, out, rows = direction_front(arr, i)
        got_c, got_o = arr.row_terms(i, rows)
        np.testing.assert_allclose(got_c, cost, rtol=1e-9)
        np.testing.assert_allclose(got_o, out, rtol=1e-9)
        grid = _direction_grid(arr.nmax[i])
        gc, go = arr.row_terms(i, grid)
        # every grid row is weakly dominated by some front point
        dominated = (cost[None, :] <= gc[:, None] * (1 + 1e-12) + 1e-12) & (
            out[None, :] >= go[:, None] * (1 - 1e-9) - 1e-12)
        assert dominated.any(axis=1).all()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), z=st.floats(0.02, 1.0))
def test_thinned_pareto_dp_is_feasible_and_near_exact(seed: int, z: float) -> None:
    model = random_model(seed, 4, 3)
    _, want = pareto_dp(model, z, thin_eps=0.0)
    counts, out = pareto_dp(model, z, thin_eps=0.01, thin_above=4)
    assert model.evaluate(counts)[0] <= z * model.full_cost() * (1 + 1e-9)
    assert out >= want / 1.01 ** 8 - 1e-12
    assert out <= want * (1 + 1e-9) + 1e-12


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), probe=st.sampled_from([0.0, 5.0, 200.0]),
       z=st.sampled_from([0.05, 0.2, 0.5, 0.9]))
def test_probe_cost_is_priced_alike_by_every_solver(seed: int, probe: float, z: float) -> None:
    """c_p per probing tuple (ours): the Pareto DP and greedy agree with full enumeration,
    and a direction that probes at all pays c_p."""
    base = random_model(seed, 3, 4)
    model = dataclasses.replace(base, probe_cost=probe)
    arr = model.arrays()
    one = np.zeros((3, 2), dtype=np.int64)
    one[0] = [1, 1]
    c_base, _ = base.arrays().direction_terms(one)
    c_probe, _ = arr.direction_terms(one)
    assert c_probe[0] == pytest.approx(c_base[0] + model.rates[0] * probe)
    assert c_probe[1] == c_base[1] == 0.0
    _, best = exhaustive(model, z)
    counts, o_dp = pareto_dp(model, z)
    assert o_dp == pytest.approx(best, rel=1e-6, abs=1e-9)
    cost, _ = model.evaluate(counts)
    assert cost <= z * model.full_cost() * (1 + 1e-9)
    g = greedy_double_sided(model, z)
    assert model.evaluate(g)[0] <= z * model.full_cost() * (1 + 1e-9)
