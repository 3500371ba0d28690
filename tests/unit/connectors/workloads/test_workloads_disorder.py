"""Disorder models: delay distributions, the --disorder syntax, burst masks (vs brute force)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.workloads.disorder import (
    BurstyDelay,
    DelayModel,
    ExponentialDelay,
    NoDelay,
    ZipfDelay,
    burst_mask,
    parse_disorder,
    parse_model,
    sample_delays,
    sample_zipf_ranks,
    zipf_pmf,
)
from pipeline.core.errors import ConfigError

TIMES = np.arange(200_000, dtype=np.int64) * 10  # 100 tuples/s for ~33 minutes


def _rng(seed: int = 3) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_none_gives_zero_delays() -> None:
    assert not sample_delays(NoDelay(), TIMES, _rng()).any()


@pytest.mark.parametrize(
    ("max_ms", "skew", "step"), [(20_000, 2.0, 10), (20_000, 3.0, 1), (50, 0.0, 10)]
)
def test_zipf_delays_stay_on_the_grid_and_follow_the_pmf(
    max_ms: int, skew: float, step: int
) -> None:
    delays = sample_delays(ZipfDelay(max_ms, skew, step), TIMES, _rng())
    assert delays.dtype == np.int64
    assert delays.min() >= 0 and delays.max() <= max_ms
    assert not (delays % step).any()
    pmf = zipf_pmf(max_ms // step + 1, skew)
    n = len(TIMES)
    for rank in (0, 1, 2):  # the frequencies of the three most likely delays
        observed = np.count_nonzero(delays == rank * step)
        sigma = np.sqrt(n * pmf[rank] * (1 - pmf[rank]))
        assert abs(observed - n * pmf[rank]) <= 5 * sigma + 1


def test_zipf_heavy_tail_reaches_seconds_with_skew_2() -> None:
    """Ji et al.'s setting (max 20 s, skew 2): most tuples in order, a tail of seconds."""
    delays = sample_delays(ZipfDelay(20_000, 2.0), TIMES, _rng())
    assert np.mean(delays == 0) > 0.55
    assert delays.max() > 5_000
    expected_tail = zipf_pmf(2001, 2.0)[100:].sum()  # P(delay >= 1 s)
    assert abs(np.mean(delays >= 1_000) - expected_tail) < 5 * np.sqrt(expected_tail / len(TIMES))


def test_zipf_ranks_oracle_small_domain() -> None:
    ranks = sample_zipf_ranks(4, 1.0, 400_000, _rng())
    freq = np.bincount(ranks, minlength=4) / len(ranks)
    np.testing.assert_allclose(freq, zipf_pmf(4, 1.0), atol=0.005)


def test_exponential_delays_have_the_mean() -> None:
    delays = sample_delays(ExponentialDelay(500.0), TIMES, _rng())
    assert delays.min() >= 0
    assert abs(delays.mean() - 500.0) < 5 * 500.0 / np.sqrt(len(TIMES))


def test_bursty_large_delays_cover_about_length_over_gap() -> None:
    model = BurstyDelay(mean_ms=20.0, gap_ms=30_000.0, length_ms=2_000.0, peak_ms=10_000.0)
    delays = sample_delays(model, TIMES, _rng(5))
    big = delays > 400  # P(exp(20) > 400) = e^-20: only burst tuples are this late
    coverage = 1 - np.exp(-model.length_ms / model.gap_ms)
    assert 0.5 * coverage < big.mean() < 1.6 * coverage
    # late tuples come in runs: far fewer runs than late tuples
    starts = np.count_nonzero(np.diff(big.astype(int)) == 1)
    assert starts < big.sum() / 20
    assert delays.max() <= 10_000 + 20 * 40


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.integers(0, 1000), max_size=40),
    starts=st.lists(st.integers(0, 1000), max_size=6),
    length=st.integers(1, 200),
)
def test_burst_mask_equals_brute_force(times: list[int], starts: list[int], length: int) -> None:
    t = np.array(sorted(times), dtype=np.int64)
    s = np.array(sorted(starts), dtype=np.float64)
    expected = [any(b <= x < b + length for b in starts) for x in t.tolist()]
    assert burst_mask(t, s, float(length)).tolist() == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", NoDelay()),
        ("exp:mean=500", ExponentialDelay(500.0)),
        ("zipf:max=20000,skew=3", ZipfDelay(20_000, 3.0, 10)),
        ("ZIPF: max=100 , skew=0, step=5", ZipfDelay(100, 0.0, 5)),
        ("zipf", ZipfDelay()),
        ("bursty:peak=5000", BurstyDelay(peak_ms=5000.0)),
        ("bursty:mean=1,gap=2,length=3,peak=4", BurstyDelay(1.0, 2.0, 3.0, 4.0)),
    ],
)
def test_parse_model(text: str, expected: DelayModel) -> None:
    assert parse_model(text) == expected
    assert parse_model(expected.describe()) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gauss:mean=3", "unknown disorder model 'gauss'"),
        ("exp", "missing mean"),
        ("exp:mean=-2", "mean must be > 0 ms, got -2"),
        ("exp:mean=abc", "mean must be a number, got 'abc'"),
        ("zipf:max=1.5", "max must be a number, got '1.5'"),
        ("zipf:skew=-1", "skew must be >= 0"),
        ("zipf:foo=1", "bad parameter 'foo=1'"),
        ("zipf:max", "bad parameter 'max'"),
        ("bursty:gap=0", "gap must be > 0"),
        ("none:x=1", "bad parameter"),
    ],
)
def test_parse_model_errors_name_the_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model(text)


def test_parse_disorder_one_for_all_or_one_per_stream() -> None:
    assert parse_disorder("exp:mean=5", 3) == (ExponentialDelay(5.0),) * 3
    assert parse_disorder("none;exp:mean=5;zipf", 3) == (
        NoDelay(),
        ExponentialDelay(5.0),
        ZipfDelay(),
    )
    with pytest.raises(ConfigError, match="2 models for 3 streams"):
        parse_disorder("none;none", 3)
    with pytest.raises(ConfigError, match="empty"):
        parse_disorder(" ; ", 3)
