"""γ(L,K) (Ji et al. Eqs. 2, 3, 5, 6) against a literal, loop-by-loop evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorInputError
from pipeline.operators.disorder.quality.profiler import ProductivityMaps
from pipeline.operators.disorder.quality.recall_model import (
    ModelConfig,
    gamma_curve,
    selectivity_ratio,
)
from pipeline.testing.recall import reference_gamma


@st.composite
def model_case(draw: st.DrawFn) -> tuple:
    m = draw(st.integers(2, 4))
    g = draw(st.sampled_from([1, 5, 10]))
    b = g * draw(st.integers(1, 3))
    windows = [draw(st.integers(1, 120)) for _ in range(m)]
    pdfs = [draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25)) for _ in range(m)]
    # rounded to ns: values one ulp below a bin edge make the literal floor((K + K_sync)/g)
    # and the model's floor(K_sync/g) + K/g disagree by float rounding alone
    ksync = [round(draw(st.floats(0.0, 40.0)), 6) for _ in range(m)]
    use_maps = draw(st.booleans())
    maps = None
    if use_maps:
        size = draw(st.integers(1, 20))
        cross = draw(st.lists(st.floats(0.0, 100.0), min_size=size, max_size=size))
        join = [c * draw(st.floats(0.0, 1.0)) for c in cross]
        maps = ProductivityMaps(np.asarray(cross), np.asarray(join))
    k_max = draw(st.integers(0, 30))
    return pdfs, ksync, maps, windows, g, b, k_max


@settings(max_examples=60, deadline=None)
@given(case=model_case())
def test_gamma_curve_matches_literal_equations(case: tuple) -> None:
    pdfs, ksync, maps, windows, g, b, k_max = case
    cfg = ModelConfig(tuple(windows), g, b)
    curve = gamma_curve([np.asarray(p) for p in pdfs], ksync, maps, cfg, k_max)
    assert curve.shape == (k_max + 1,)
    for k in range(k_max + 1):
        want = reference_gamma(pdfs, ksync, maps, windows, g, b, k * g)
        assert curve[k] == pytest.approx(want, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("pdf", "k_bins", "expected"),
    [
        ([1.0], 0, 1.0),  # no disorder: complete at K = 0
        ([0.5, 0.5], 1, 1.0),  # K = g covers the 1-bin delays
        ([0.0, 0.0, 1.0], 2, 1.0),  # every tuple late by 2 bins, K = 2g
    ],
)
def test_complete_disorder_handling_gives_recall_one(
    pdf: list[float], k_bins: int, expected: float
) -> None:
    cfg = ModelConfig((50, 50, 50), 10, 10)
    curve = gamma_curve([np.asarray(pdf)] * 3, [0.0] * 3, None, cfg, k_bins)
    assert curve[k_bins] == pytest.approx(expected)


def test_two_way_half_in_order_closed_form() -> None:
    """m=2, W = b = g: half the tuples have delay bin 1, K = 0.

    f^K(0) = 1/2, |w^1| = W·1/2 for each stream: γ = (½·W/2 + ½·W/2) / (2W) = 1/4.
    """
    cfg = ModelConfig((10, 10), 10, 10)
    curve = gamma_curve([np.asarray([0.5, 0.5])] * 2, [0.0, 0.0], None, cfg, 1)
    assert curve[0] == pytest.approx(0.25)
    assert curve[1] == pytest.approx(1.0)


def test_sync_buffer_counts_as_buffering() -> None:
    """A stream with K^sync = 2g needs no K-slack for delays ≤ 2g."""
    cfg = ModelConfig((100, 100), 10, 10)
    pdf = np.asarray([0.2, 0.4, 0.4])
    lead = gamma_curve([pdf, np.asarray([1.0])], [20.0, 0.0], None, cfg, 0)
    lag = gamma_curve([pdf, np.asarray([1.0])], [0.0, 0.0], None, cfg, 0)
    assert lead[0] == pytest.approx(1.0)
    assert lag[0] < 1.0


def test_selectivity_ratio_dpcorr() -> None:
    """Late (bin 2) tuples are 4x as productive: cutting them off lowers sel(K)/sel."""
    maps = ProductivityMaps(np.asarray([100.0, 0.0, 100.0]), np.asarray([10.0, 0.0, 40.0]))
    ratio = selectivity_ratio(maps, 4)
    assert ratio[0] == pytest.approx((10 / 100) * (200 / 50))
    assert ratio[1] == pytest.approx(ratio[0])
    assert ratio[2:] == pytest.approx([1.0, 1.0, 1.0])
    empty = selectivity_ratio(ProductivityMaps.empty(), 3)
    assert empty.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_model_config_errors_are_named() -> None:
    with pytest.raises(ConfigError, match="basic_window_ms"):
        ModelConfig((100, 100), 10, 15)
    with pytest.raises(ConfigError, match="granularity_ms"):
        ModelConfig((100, 100), 0, 10)
    with pytest.raises(ConfigError, match="windows"):
        ModelConfig((100,), 10, 10)


def test_gamma_curve_needs_one_pdf_and_ksync_per_window() -> None:
    cfg = ModelConfig((10, 10, 10), 10, 10)
    pdf = np.asarray([1.0])
    with pytest.raises(OperatorInputError, match="3 windows but 2 delay pdfs and 3 K"):
        gamma_curve([pdf, pdf], [0.0] * 3, None, cfg, 1)
    with pytest.raises(OperatorInputError, match="3 windows but 3 delay pdfs and 1 K"):
        gamma_curve([pdf] * 3, [0.0], None, cfg, 1)
