"""Tuple-Productivity Profiler (Ji et al. §IV-B) against a brute-force recomputation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.disorder.quality.delay_stats import delay_bin
from pipeline.operators.disorder.quality.profiler import ProductivityProfiler

reports = st.lists(
    st.tuples(st.integers(0, 500), st.booleans(), st.integers(0, 10_000), st.integers(0, 50)),
    max_size=200,
)


@settings(max_examples=50, deadline=None)
@given(intervals=st.lists(reports, min_size=1, max_size=4), g=st.sampled_from([1, 10, 100]))
def test_maps_match_brute_force(intervals: list[list[tuple[int, bool, int, int]]], g: int) -> None:
    prof = ProductivityProfiler(g, late_estimate="max")
    prev_max = (0.0, 0.0)
    for rows in intervals:
        for delay, in_order, cross, join in rows:
            prof.record(delay, in_order, cross, join)
        maps = prof.roll()
        ordered = [r for r in rows if r[1]]
        if ordered:
            max_x = float(max(r[2] for r in ordered))
            max_j = float(max(r[3] for r in ordered))
        else:
            max_x, max_j = prev_max
        prev_max = (max_x, max_j)
        exp_x: dict[int, float] = {}
        exp_j: dict[int, float] = {}
        for delay, in_order, cross, join in rows:
            d = delay_bin(delay, g)
            exp_x[d] = exp_x.get(d, 0.0) + (cross if in_order else max_x)
            exp_j[d] = exp_j.get(d, 0.0) + (join if in_order else max_j)
        size = max(exp_x, default=0) + 1
        want_x = np.zeros(size)
        want_j = np.zeros(size)
        for d, v in exp_x.items():
            want_x[d] = v
        for d, v in exp_j.items():
            want_j[d] = v
        assert np.allclose(maps.cross, want_x)
        assert np.allclose(maps.join, want_j)
        assert maps.n_true == pytest.approx(want_j.sum())
        assert prof.last is maps


def test_late_tuple_gets_max_productivity_of_the_interval() -> None:
    """Table: two in-order tuples (n⋈ = 3, 7) and one late tuple of delay 25 ms."""
    prof = ProductivityProfiler(10, late_estimate="max")
    prof.record(0, True, 100, 3)
    prof.record(5, True, 80, 7)
    prof.record(25, False, 0, 0)
    maps = prof.roll()
    assert maps.join.tolist() == [3.0, 7.0, 0.0, 7.0]
    assert maps.cross.tolist() == [100.0, 80.0, 0.0, 100.0]
    assert maps.n_true == 17.0


def test_snapshot_round_trip() -> None:
    prof = ProductivityProfiler(10, late_estimate="max")
    prof.record(0, True, 10, 1)
    prof.roll()
    prof.record(40, False, 0, 0)
    prof.record(3, True, 12, 2)
    clone = ProductivityProfiler.from_snapshot(10, prof.snapshot(), late_estimate="max")
    a, b = prof.roll(), clone.roll()
    assert np.array_equal(a.cross, b.cross) and np.array_equal(a.join, b.join)
    with pytest.raises(OperatorStateError, match="profiler"):
        ProductivityProfiler.from_snapshot(10, {"cross": {}})


def test_mean_late_estimate_and_tuple_count() -> None:
    """late_estimate="mean": a late tuple counts the interval's average n^× and n^⋈."""
    prof = ProductivityProfiler(10, late_estimate="mean")
    prof.record(0, True, 100, 3)
    prof.record(5, True, 80, 7)
    prof.record(25, False, 0, 0)
    maps = prof.roll()
    assert maps.join.tolist() == [3.0, 7.0, 0.0, 5.0]
    assert maps.cross.tolist() == [100.0, 80.0, 0.0, 90.0]
    assert maps.tuples == 3
    # an interval with only late tuples reuses the previous estimates
    prof.record(0, False, 0, 0)
    again = prof.roll()
    assert again.join.tolist() == [5.0] and again.cross.tolist() == [90.0]
    assert prof.roll().tuples == 0
    with pytest.raises(ConfigError, match="late_estimate"):
        ProductivityProfiler(10, late_estimate="median")  # type: ignore[arg-type]
