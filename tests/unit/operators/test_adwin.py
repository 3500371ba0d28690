"""ADWIN (Bifet & Gavaldà 2007) against a brute-force window and on known change points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorInputError, OperatorStateError
from pipeline.operators.disorder.quality.adwin import Adwin, AdwinConfig


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.integers(min_value=0, max_value=2_000), min_size=1, max_size=600),
    clock=st.integers(min_value=1, max_value=8),
)
def test_window_statistics_match_brute_force(values: list[int], clock: int) -> None:
    """After every insertion the window is a suffix of the input with that mean/variance."""
    det = Adwin(AdwinConfig(clock=clock, min_len=4, max_width=256))
    kept = 0
    for i, v in enumerate(values):
        dropped = det.add(v)
        kept = kept + 1 - dropped
        assert det.width == kept
        window = np.asarray(values[i + 1 - kept : i + 1], dtype=np.float64)
        assert det.mean == pytest.approx(window.mean(), rel=1e-9, abs=1e-9)
        assert det.variance == pytest.approx(window.var(), rel=1e-6, abs=1e-6)
        assert det.width <= 256


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_stable_stream_keeps_growing_window(seed: int) -> None:
    rng = np.random.default_rng(seed)
    det = Adwin()
    for x in rng.exponential(50.0, size=6_000):
        det.add(x)
    assert det.width >= 5_500  # at most a rare false cut early on
    assert det.mean == pytest.approx(50.0, rel=0.1)


@pytest.mark.parametrize(("before", "after"), [(50.0, 500.0), (500.0, 50.0), (20.0, 60.0)])
def test_abrupt_change_shrinks_window_to_new_regime(before: float, after: float) -> None:
    rng = np.random.default_rng(7)
    det = Adwin()
    for x in rng.exponential(before, size=4_000):
        det.add(x)
    assert det.width == 4_000
    detected_at = None
    dropped = 0
    for i, x in enumerate(rng.exponential(after, size=2_000)):
        n = det.add(x)
        dropped += n
        if n and detected_at is None:
            detected_at = i
    assert detected_at is not None and detected_at < 600
    old_left = 4_000 - dropped
    assert 0 <= old_left <= 200  # almost only the new regime is left
    assert det.width == 2_000 + old_left
    assert det.changes >= 1


def test_max_width_bounds_the_window() -> None:
    det = Adwin(AdwinConfig(max_width=100, min_len=10))
    for i in range(1_000):
        det.add(float(i % 3))
    assert 50 <= det.width <= 100


def test_snapshot_round_trip_continues_identically() -> None:
    rng = np.random.default_rng(3)
    data = np.concatenate([rng.exponential(30, 1500), rng.exponential(300, 1500)])
    a = Adwin()
    for x in data[:1000]:
        a.add(x)
    b = Adwin.from_snapshot(a.config, a.snapshot())
    out_a = [a.add(x) for x in data[1000:]]
    out_b = [b.add(x) for x in data[1000:]]
    assert out_a == out_b
    assert (a.width, a.mean, a.changes) == (b.width, b.mean, b.changes)


def test_bad_snapshot_and_config_are_named() -> None:
    with pytest.raises(OperatorStateError, match="width"):
        Adwin.from_snapshot(AdwinConfig(), {**Adwin().snapshot(), "width": 5})
    with pytest.raises(ConfigError, match=r"adwin\.delta"):
        AdwinConfig(delta=1.5)
    with pytest.raises(ConfigError, match=r"adwin\.max_width"):
        AdwinConfig(max_width=3)
    with pytest.raises(OperatorInputError, match="got -1"):
        Adwin().add(-1)
    with pytest.raises(OperatorInputError, match="got nan"):
        Adwin().add(float("nan"))
