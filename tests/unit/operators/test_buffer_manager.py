"""Eq. 7 (instant recall requirement), the Result-Size Monitor and Alg. 3 (Ji et al.)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorInputError
from pipeline.operators.disorder.quality.buffer_manager import (
    ResultSizeMonitor,
    instant_recall_target,
    linear_search,
)


@pytest.mark.parametrize(
    ("recall", "prod_past", "true_past", "true_next", "expected"),
    [
        # on target so far: ask exactly Γ next
        (0.9, 90.0, 100.0, 10.0, 0.9),
        # surplus in the past: a lower instant target suffices: (0.9·110 − 95)/10
        (0.9, 95.0, 100.0, 10.0, 0.4),
        # deficit: ask more: (0.9·110 − 88)/10 = 1.1 -> capped at 1
        (0.9, 88.0, 100.0, 10.0, 1.0),
        # big surplus: floored at 0
        (0.5, 100.0, 100.0, 10.0, 0.0),
        # no history (first interval): Γ' = Γ
        (0.99, 0.0, 0.0, 50.0, 0.99),
        # nothing expected next interval: Γ
        (0.95, 10.0, 20.0, 0.0, 0.95),
        # Γ = 1 with a perfect past
        (1.0, 100.0, 100.0, 10.0, 1.0),
    ],
)
def test_instant_recall_target_table(
    recall: float, prod_past: float, true_past: float, true_next: float, expected: float
) -> None:
    assert instant_recall_target(recall, prod_past, true_past, true_next) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(
    recall=st.floats(0.5, 1.0),
    prod=st.floats(0, 1e4),
    extra=st.floats(0, 1e4),
    nxt=st.floats(1e-3, 1e4),
)
def test_instant_target_satisfies_eq7_when_feasible(
    recall: float, prod: float, extra: float, nxt: float
) -> None:
    true_past = prod + extra  # produced never exceeds true
    t = instant_recall_target(recall, prod, true_past, nxt)
    assert 0.0 <= t <= 1.0
    achieved = (prod + nxt * t) / (true_past + nxt)
    if t < 1.0:
        assert achieved >= recall - 1e-9
        if t > 0.0:
            assert achieved == pytest.approx(recall, rel=1e-9, abs=1e-9)


def test_instant_target_rejects_bad_recall() -> None:
    with pytest.raises(ConfigError, match=r"disorder\.recall"):
        instant_recall_target(1.5, 1, 1, 1)


@settings(max_examples=100, deadline=None)
@given(
    gamma=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60),
    g=st.sampled_from([1, 10, 7]),
    target=st.floats(0.0, 1.0),
    data=st.data(),
)
def test_linear_search_matches_brute_force(
    gamma: list[float], g: int, target: float, data: st.DataObject
) -> None:
    max_delay = data.draw(st.integers(0, (len(gamma) - 1) * g))
    got = linear_search(np.asarray(gamma), max_delay, g, target)
    candidates = [k * g for k in range(len(gamma)) if k * g <= max_delay]
    meeting = [k for k in candidates if gamma[k // g] >= target]
    expected = min(meeting) if meeting else max(candidates) + g
    assert got == expected
    assert got % g == 0


def test_linear_search_needs_the_whole_range() -> None:
    with pytest.raises(OperatorInputError, match=r"covers 2 candidates.*MaxD\^H = 50 ms.*needs 6"):
        linear_search(np.asarray([0.1, 0.2]), 50, 10, 0.9)


def test_result_size_monitor_keeps_p_minus_l() -> None:
    mon = ResultSizeMonitor(period_ms=5_000, interval_ms=1_000)
    assert mon.history == 4
    seen = []
    for i in range(7):
        mon.add_results(10 * i)
        seen.append((10.0 * i, 100.0 + i))
        got = mon.roll(100.0 + i)
        last = seen[-4:]
        assert got == (sum(p for p, _ in last), sum(t for _, t in last))
    clone = ResultSizeMonitor.from_snapshot(5_000, 1_000, mon.snapshot())
    assert clone.totals() == mon.totals()
    single = ResultSizeMonitor(1_000, 1_000)
    single.add_results(5)
    assert single.roll(9.0) == (0.0, 0.0)
    with pytest.raises(ConfigError, match="interval_ms"):
        ResultSizeMonitor(1_000, 2_000)


@pytest.mark.parametrize(
    ("prod_past", "true_past", "true_next", "expected"),
    [
        # surplus: Eq. 7 alone would ask 0.4, the floor keeps Γ + margin
        (95.0, 100.0, 10.0, 0.92),
        # deficit: Eq. 7 alone would ask 1 (K = MaxD^H), the cap stops at Γ + headroom
        (88.0, 100.0, 10.0, 0.95),
        # inside the band: Eq. 7 unchanged, (0.9·110 − 89.7)/10
        (89.7, 100.0, 10.0, 0.93),
        # nothing expected next: Γ, clipped into the band
        (10.0, 20.0, 0.0, 0.92),
    ],
)
def test_instant_target_floor_and_cap(
    prod_past: float, true_past: float, true_next: float, expected: float
) -> None:
    got = instant_recall_target(0.9, prod_past, true_past, true_next, floor=0.92, cap=0.95)
    assert got == pytest.approx(expected)


def test_instant_target_rejects_a_bad_band() -> None:
    with pytest.raises(ConfigError, match="floor <= cap"):
        instant_recall_target(0.9, 1.0, 2.0, 3.0, floor=0.95, cap=0.92)
    with pytest.raises(ConfigError, match="floor <= cap"):
        instant_recall_target(0.9, 1.0, 2.0, 3.0, floor=0.0, cap=1.5)


def test_result_size_monitor_skips_idle_intervals() -> None:
    """While nothing reaches the join (K-slack filling), the P − L history does not age."""
    mon = ResultSizeMonitor(period_ms=3_000, interval_ms=1_000)
    mon.add_results(8)
    assert mon.roll(10.0) == (8.0, 10.0)
    mon.add_results(9)
    assert mon.roll(9.0) == (17.0, 19.0)
    for _ in range(5):  # idle: nothing produced, nothing expected, history kept
        assert mon.roll(0.0, active=False) == (17.0, 19.0)
    mon.add_results(1)
    assert mon.roll(2.0) == (10.0, 11.0)  # the oldest row leaves only on an active roll
