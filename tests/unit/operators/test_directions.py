"""Continuous per-direction fractions (Gedik et al., CIKM Algs. 1 and 4; directions.py)
against brute force over a fine grid, and in the engine (two-way, snapshot, draws)."""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import numpy as np
import pytest

from connectors.workloads import WorkloadSpec, generate
from pipeline.core.errors import ConfigError
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import event_from_dump
from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.directions import (
    expected_terms,
    paper_fractions,
    rate_fraction,
)
from pipeline.quality.oracle import brute_force_oracle
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec, parse_spec

GRID = np.linspace(0.0, 1.0, 1001)


def _model(seed: int, flat: bool = False) -> HarvestModel:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(50, 400, 2)
    sel = rng.uniform(1e-4, 5e-3, (2, 2))
    np.fill_diagonal(sel, 0.0)
    sizes = rng.integers(2, 12, 2)
    orders = np.array([[1], [0]])
    scores = [[np.ones(int(sizes[1])) if flat else rng.random(int(sizes[1])) ** 3],
              [np.ones(int(sizes[0])) if flat else rng.random(int(sizes[0])) ** 3]]
    return HarvestModel.build(rates, rates * rng.uniform(5, 30, 2), sel, scores, orders,
                              tuple_cost=float(rng.uniform(0, 50)))


def _budget(model: HarvestModel, seed: int) -> float:
    lo, hi = model.fixed_cost(), model.full_cost()
    return float(np.random.default_rng(seed + 100).uniform(lo, hi * 1.1))


def _n(model: HarvestModel) -> np.ndarray:
    return model.max_counts()[:, 0].astype(np.float64)


@pytest.mark.parametrize("seed", range(20))
def test_rate_fraction_is_the_largest_r_that_fits(seed: int) -> None:
    model = _model(seed)
    budget = _budget(model, seed)
    spare = budget - model.fixed_cost()
    # brute force: every r of a fine grid, the largest whose expected cost fits
    fits = [r for r in GRID if expected_terms(model, r * _n(model))[0].sum() <= spare + 1e-9]
    r = rate_fraction(model, budget)
    assert r == pytest.approx(max(fits), abs=1.0 / (GRID.size - 1))
    assert expected_terms(model, r * _n(model))[0].sum() <= spare + 1e-6


def _scanned(model: HarvestModel, budget: float, direction: bool) -> np.ndarray:
    got = paper_fractions(model, budget, direction)
    return got.counts[:, 0] + got.extra


@pytest.mark.parametrize("seed", range(20))
def test_without_direction_both_windows_scan_the_same_fraction(seed: int) -> None:
    model = _model(seed)
    budget = _budget(model, seed)
    x = _scanned(model, budget, False)
    r = rate_fraction(model, budget)
    np.testing.assert_allclose(x, r * _n(model), atol=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_alg4_spends_the_same_on_the_better_direction_first(seed: int) -> None:
    model = _model(seed)
    budget = _budget(model, seed)
    same = paper_fractions(model, budget, False)
    got = paper_fractions(model, budget, True)
    x = got.counts[:, 0] + got.extra
    n = _n(model)
    # the comparisons of r, redistributed (the paper's constraint)
    assert got.cost == pytest.approx(same.cost, rel=1e-6)
    full_c, full_o = expected_terms(model, n)
    hi = 0 if full_o[0] / full_c[0] >= full_o[1] / full_c[1] else 1
    # brute force: the largest x_hi within the spend, then the rest to the other
    spend = same.cost - model.fixed_cost()
    grid_hi = [v * n[hi] for v in GRID]
    best_hi = max(v for v in grid_hi
                  if expected_terms(model, _pair(hi, v, 0.0))[0].sum() <= spend + 1e-9)
    assert x[hi] == pytest.approx(best_hi, abs=n[hi] / (GRID.size - 1))
    if x[hi] < n[hi] - 1e-9:
        assert x[1 - hi] == pytest.approx(0.0, abs=1e-9)


def _pair(hi: int, x_hi: float, x_lo: float) -> np.ndarray:
    out = np.zeros(2)
    out[hi], out[1 - hi] = x_hi, x_lo
    return out


@pytest.mark.parametrize("seed", range(20))
def test_alg4_is_output_optimal_when_windows_are_flat(seed: int) -> None:
    """With flat scores (no time correlation) output is linear in x_i, so all of the
    spend to the direction of higher o_i is the best split: brute force over splits."""
    model = _model(seed, flat=True)
    budget = _budget(model, seed)
    got = paper_fractions(model, budget, True)
    spend = got.cost - model.fixed_cost()
    n = _n(model)
    grid = np.linspace(0.0, 1.0, 401)
    c0, o0 = (np.array(v) for v in zip(*(expected_terms(model, np.array([g * n[0], 0.0]))
                                           for g in grid), strict=True))
    c1, o1 = (np.array(v) for v in zip(*(expected_terms(model, np.array([0.0, g * n[1]]))
                                           for g in grid), strict=True))
    cost = c0[:, 0][:, None] + c1[:, 1][None, :]
    out = o0[:, 0][:, None] + o1[:, 1][None, :]
    best = float(out[cost <= spend + 1e-9].max())
    assert got.output >= best * (1 - 1e-9)


def test_min_windows_lifts_a_probing_direction() -> None:
    model = _model(3)
    tiny = model.fixed_cost() + 1e-6 * (model.full_cost() - model.fixed_cost())
    got = paper_fractions(model, tiny, False, min_windows=0.05)
    assert (got.counts[:, 0] + got.extra).min() == pytest.approx(0.05)


# ------------------------------------------------------------------ in the engine
DURATION_S = 30.0


@cache
def _records() -> tuple[dict[str, Any], ...]:
    ws = WorkloadSpec("sensors", streams=2, rates=(60.0,), duration_s=DURATION_S,
                      lags_s=(0, 2.5), kappas=(1, 1), seed=4)
    return tuple(generate(ws))


def _spec(shedding: dict[str, Any], m: int = 2) -> Spec:
    return parse_spec({
        "join": {"streams": [f"s{i + 1}" for i in range(m)], "window_ms": 5000,
                 "predicate": "band", "attribute": "value", "epsilon": 1.0},
        "disorder": {"mode": "none"},
        "shedding": {"basic_window_ms": 500, "adapt_interval_ms": 2000, "queue": 10,
                     **shedding},
    })


@cache
def _full_cost() -> float:
    cfg = resolve_engine(_spec({"mode": "off"}))
    eng = Engine(cfg)
    idx = {n: i for i, n in enumerate(cfg.streams)}
    eng.process_many([event_from_dump(r, idx) for r in _records()])
    eng.flush()
    return eng.stats.cost / DURATION_S


def _shed(direction: bool) -> Spec:
    return _spec({"mode": "grubjoin", "capacity": 0.25 * _full_cost(),
                  "partial_window": True, "join_direction": direction})


def _events(spec: Spec) -> list[Any]:
    cfg = resolve_engine(spec)
    idx = {n: i for i, n in enumerate(cfg.streams)}
    return [event_from_dump(r, idx) for r in _records()]


@pytest.mark.parametrize("direction", [False, True])
def test_partial_window_results_are_a_subset_of_the_oracle(direction: bool) -> None:
    spec = _shed(direction)
    eng = Engine(resolve_engine(spec))
    out = eng.process_many(_events(spec)) + eng.flush()
    ids = [r.id for r in out]
    truth = {r.id for r in brute_force_oracle(spec.join, list(_records()))}
    assert len(ids) == len(set(ids)) and set(ids) <= truth
    assert 0 < len(ids) < len(truth)
    rows = [r for r in eng.drain_metrics() if r["source"] == "shedding"]
    fr = [r["harvest_fractions"] for r in rows if r["z"] < 1.0]
    assert fr, "it shed"
    if direction:  # Alg. 4: one direction keeps all of r until it scans its whole window
        assert any(min(f[0][0], f[1][0]) == 0.0 < max(f[0][0], f[1][0]) < 1.0 for f in fr)


def test_partial_window_snapshot_restore_changes_nothing() -> None:
    spec = _shed(True)
    cfg = resolve_engine(spec)
    evs = _events(spec)
    eng = Engine(cfg)
    want = [r.id for r in eng.process_many(evs) + eng.flush()]
    eng = Engine(cfg)
    half = len(evs) // 2
    out = eng.process_many(evs[:half])
    back = Engine.from_snapshot(cfg, pickle.loads(pickle.dumps(eng.snapshot())))
    out += back.process_many(evs[half:]) + back.flush()
    assert [r.id for r in out] == want


def test_partial_window_is_for_two_way_joins() -> None:
    with pytest.raises(ConfigError, match="partial_window"):
        Engine(resolve_engine(_spec({"mode": "grubjoin", "capacity": 100.0,
                                     "partial_window": True}, m=3)))
