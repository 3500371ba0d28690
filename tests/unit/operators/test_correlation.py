"""Lag histograms and scores (GrubJoin §V-B, Eqs. (1)–(4)) against sampled lags."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback
from pipeline.operators.shedding.grubjoin.correlation import (
    CorrelationConfig,
    LagHistograms,
    interval_mass,
)

B = 1000  # b in ms; lags below are in basic-window units


def feedback(direction: int, order: tuple[int, ...], lags: dict[int, np.ndarray],
             n: int) -> ProbeFeedback:
    """Feedback whose matches bin the given non-negative lags A_{direction,l} (units of b)."""
    matches = tuple(
        np.bincount(np.minimum(np.floor(lags.get(l, np.zeros(0))).astype(int), n - 1),
                    minlength=n).astype(np.int64)
        for l in order
    )
    return ProbeFeedback(direction, 0, order, matches, (1,) * len(order), 0, 0)


def learn(hist: LagHistograms, a: np.ndarray, n: int) -> None:
    """Feed ℒ from true lags a[:, i] = A_{i,0} via the two feedback routes."""
    m = a.shape[1]
    for i in range(1, m):
        pos = a[:, i][a[:, i] >= 0]      # S_i newest: direction i sees A_{i,0} ≥ 0
        neg = -a[:, i][a[:, i] < 0]      # S_0 newest: direction 0 sees A_{0,i} > 0
        others = tuple(l for l in range(m) if l != i)
        hist.observe(feedback(i, others, {0: pos}, n))
        hist.observe(feedback(0, tuple(range(1, m)), {i: neg}, n))


def empirical(lag: np.ndarray, n: int) -> np.ndarray:
    """p^k: share of the lags A_{i,l} in [k, k+1), k = 0..n−1, among those in [0, n)."""
    inside = lag[(lag >= 0) & (lag < n)]
    return np.bincount(np.floor(inside).astype(int), minlength=n) / max(1, inside.size)


def test_scores_follow_sampled_lags() -> None:
    """Independent lags A_{i,0}: every direction's scores match the sampled A_{i,l}."""
    rng = np.random.default_rng(4)
    n = 10
    size = 200_000
    a = np.stack([np.zeros(size), rng.normal(4.0, 0.8, size), rng.normal(-3.0, 1.0, size)],
                 axis=1)
    a = np.clip(a, -n + 1e-6, n - 1e-6)
    hist = LagHistograms(CorrelationConfig((n, n, n), B))
    learn(hist, a, n)
    for i, l in [(0, 2), (1, 0), (1, 2)]:  # the pairs whose lags A_{i,l} lie in [0, w_l]
        want = empirical(a[:, i] - a[:, l], n)
        got = hist.scores(i, l)
        got = got / got.sum()
        # Eq. (4) represents each bucket of ℒ_l by its midpoint: a smoothed estimate
        assert np.abs(got - want).max() < 0.08, (i, l, got.round(3), want.round(3))
        assert int(np.argmax(got)) == int(np.argmax(want))


def test_unlearned_scores_are_flat() -> None:
    hist = LagHistograms(CorrelationConfig((4, 5, 6), B))
    assert hist.scores(1, 2).tolist() == pytest.approx([1 / 6] * 6)
    assert hist.scores(0, 1).tolist() == pytest.approx([1 / 5] * 5)


def test_rankings_follow_a_lag_change_within_three_periods() -> None:
    """Aging (×0.5 per Δ): after the lag moves from ≈2 b to ≈7 b, window 7 ranks first
    again at most three adaptation steps later."""
    n = 10
    hist = LagHistograms(CorrelationConfig((n, n), B, decay=0.5))
    rng = np.random.default_rng(1)
    for _ in range(6):  # long history with the old lag
        hist.observe(feedback(1, (0,), {0: rng.normal(2.5, 0.3, 400)}, n))
        hist.age()
    assert int(np.argmax(hist.scores(1, 0))) == 2
    steps = 0
    while int(np.argmax(hist.scores(1, 0))) != 7:
        hist.observe(feedback(1, (0,), {0: rng.normal(7.5, 0.3, 400)}, n))
        hist.age()
        steps += 1
        assert steps <= 3
    assert steps >= 1


def test_interval_mass_is_uniform_inside_buckets() -> None:
    edges = np.array([0.0, 1.0, 2.0])
    hist = np.array([1.0, 3.0])
    assert interval_mass(hist, edges, np.array(0.5), np.array(1.5)) == pytest.approx(0.5)
    assert interval_mass(hist, edges, np.array(-5.0), np.array(5.0)) == pytest.approx(1.0)


def test_snapshot_roundtrip_and_bad_snapshots() -> None:
    cfg = CorrelationConfig((3, 4), B)
    hist = LagHistograms(cfg)
    hist.observe(feedback(1, (0,), {0: np.array([0.5, 1.5, 1.7])}, 3))
    back = LagHistograms.from_snapshot(cfg, hist.snapshot())
    assert back.scores(1, 0).tolist() == hist.scores(1, 0).tolist()
    with pytest.raises(OperatorStateError):
        LagHistograms.from_snapshot(cfg, {"counts": [np.zeros(2)]})
    with pytest.raises(ConfigError, match="decay"):
        CorrelationConfig((3, 3), B, decay=0.0)


def _two_way(shrink: bool) -> LagHistograms:
    return LagHistograms(CorrelationConfig((10, 10), B, shrink=shrink))


def _one_delta(hist: LagHistograms, lags: np.ndarray) -> None:
    """One Δ of feedback with lags A_{1,0} (units of b) and the step's aging."""
    learn(hist, np.stack([np.zeros(lags.size), lags], axis=1), 10)
    hist.age()


def test_shrinkage_weight_is_the_least_squares_one() -> None:
    """λ after two Δs equals the brute-force minimizer over [0, 1] of
    ‖(1 − λ)·p + λ·U − q‖² (p: the histogram after the first Δ, q: the second Δ's)."""
    rng = np.random.default_rng(7)
    hist = _two_way(shrink=True)
    first = rng.normal(2.0, 0.5, 3_000).clip(0.0, 9.99)
    second = rng.normal(6.0, 2.0, 3_000).clip(0.0, 9.99)
    _one_delta(hist, first)
    _one_delta(hist, second)
    # ℒ_1's buckets 10..19 hold the lags A_{1,0} ≥ 0
    p = np.bincount(10 + np.floor(first).astype(int), minlength=20) / first.size
    q = np.bincount(10 + np.floor(second).astype(int), minlength=20) / second.size
    u = np.full(20, 1 / 20)
    grid = np.linspace(0.0, 1.0, 100_001)
    err = (((1 - grid)[:, None] * p + grid[:, None] * u - q) ** 2).sum(axis=1)
    assert hist.shrinkage(1) == pytest.approx(grid[int(np.argmin(err))], abs=1e-4)


def test_a_stable_histogram_is_not_shrunk_and_a_moving_one_is() -> None:
    rng = np.random.default_rng(8)
    stable, moving = _two_way(shrink=True), _two_way(shrink=True)
    for step in range(8):
        _one_delta(stable, rng.normal(3.0, 0.4, 2_000).clip(0.0, 9.99))
        _one_delta(moving, rng.normal(1.0 + step % 2 * 7.0, 0.4, 2_000).clip(0.0, 9.99))
    assert stable.shrinkage(1) < 0.05
    assert moving.shrinkage(1) > 0.5
    # shrunk scores keep mass everywhere; without shrink only the last Δs' peaks do
    plain = _two_way(shrink=False)
    for step in range(8):
        _one_delta(plain, rng.normal(1.0 + step % 2 * 7.0, 0.4, 2_000).clip(0.0, 9.99))
    flat = moving.scores(1, 0) / moving.scores(1, 0).sum()
    peaked = plain.scores(1, 0) / plain.scores(1, 0).sum()
    assert flat.max() < peaked.max() and flat.min() > 0.03 > peaked.min()
    restored = LagHistograms.from_snapshot(moving.config, moving.snapshot())
    assert restored.shrinkage(1) == pytest.approx(moving.shrinkage(1))


@settings(max_examples=80, deadline=None)
@given(windows=st.lists(st.integers(1, 6), min_size=2, max_size=4), data=st.data())
def test_observe_many_equals_observe_one_by_one(windows: list[int],
                                                data: st.DataObject) -> None:
    """A run's feedback taken at once (``observe_many``, the engine's batch path) against
    ``observe`` probe by probe: the same counts and this-Δ counts to the bit, also after
    aging made them fractional; matches longer or shorter than a window included."""
    m = len(windows)
    cfg = CorrelationConfig(tuple(windows), B, decay=0.3, shrink=True)
    one, many = LagHistograms(cfg), LagHistograms(cfg)
    for _ in range(data.draw(st.integers(1, 3))):
        fbs = []
        for _ in range(data.draw(st.integers(0, 12))):
            i = data.draw(st.integers(0, m - 1))
            order = tuple(data.draw(st.permutations([l for l in range(m) if l != i])))
            matches = tuple(np.array(data.draw(st.lists(st.integers(0, 9), max_size=8)),
                                     np.int64) for _ in order)
            fbs.append(ProbeFeedback(i, 0, order, matches, (1,) * len(order), 0, 0))
        for fb in fbs:
            one.observe(fb)
        many.observe_many(fbs)
        for a, b in zip(one.counts + one.fresh, many.counts + many.fresh, strict=True):
            assert a.tobytes() == b.tobytes()
        one.age()
        many.age()
    assert one.shrink_sums.tobytes() == many.shrink_sums.tobytes()
