"""Statistics Manager (Ji et al. §IV-A) against a brute-force recomputation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorInputError, OperatorStateError
from pipeline.operators.disorder.quality.adwin import AdwinConfig
from pipeline.operators.disorder.quality.delay_stats import StatisticsManager, delay_bin


@pytest.mark.parametrize(
    ("delay", "g", "expected"),
    [
        (0, 10, 0),
        (1, 10, 1),
        (10, 10, 1),
        (11, 10, 2),
        (20, 10, 2),
        (21, 10, 3),
        (999, 1000, 1),
        (1000, 1000, 1),
        (1001, 1000, 2),
        (-5, 10, 0),
    ],
)
def test_delay_bin_table(delay: int, g: int, expected: int) -> None:
    """D = 0 for delay 0, d for delay in ((d−1)g, dg]."""
    assert delay_bin(delay, g) == expected


arrivals = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 50), st.integers(0, 300)),  # stream, step, delay
    min_size=1,
    max_size=400,
)


@settings(max_examples=50, deadline=None)
@given(arr=arrivals, g=st.sampled_from([1, 10, 25]))
def test_histogram_ksync_and_max_delay_match_brute_force(
    arr: list[tuple[int, int, int]], g: int
) -> None:
    adwin = AdwinConfig(min_len=4, clock=4, max_width=64)
    mgr = StatisticsManager(3, g, adwin)
    clock = [0, 0, 0]
    local: list[int | None] = [None, None, None]
    delays: list[list[int]] = [[], [], []]
    samples: list[list[float | None]] = [[], [], []]
    for stream, step, delay in arr:
        clock[stream] += step
        ts = clock[stream] - delay
        # raw delay as the K-slack computes it: ^iT − ts after updating ^iT
        prev = local[stream]
        now = clock[stream] if prev is None else max(prev, clock[stream])
        local[stream] = now
        raw = now - ts
        mgr.observe(stream, ts, raw)
        delays[stream].append(raw)
        if all(t is not None for t in local):
            samples[stream].append(float(now) - min(t for t in local if t is not None))
        else:
            samples[stream].append(None)
    summary = mgr.roll(1_000)
    means = []
    for i in range(3):
        width = summary.widths[i]
        assert width == mgr.streams[i].width
        window = delays[i][len(delays[i]) - width :]
        bins = np.asarray([delay_bin(d, g) for d in window], dtype=np.int64)
        if width:
            expect = np.bincount(bins) / width
            assert np.allclose(summary.pdfs[i], expect)
        else:
            assert summary.pdfs[i].tolist() == [1.0]
        known = [s for s in samples[i][len(samples[i]) - width :] if s is not None]
        means.append(float(np.mean(known)) if known else None)
        assert summary.rates_per_s[i] == pytest.approx(len(delays[i]))
    if all(m is not None for m in means):
        low = min(m for m in means if m is not None)
        assert summary.ksync_ms == pytest.approx([m - low for m in means if m is not None])
    else:
        assert summary.ksync_ms == (0.0, 0.0, 0.0)
    top = max(
        (
            delay_bin(d, g)
            for i in range(3)
            for d in delays[i][len(delays[i]) - summary.widths[i] :]
        ),
        default=0,
    )
    assert summary.max_delay_ms == top * g
    assert mgr.roll(1_000).rates_per_s == (0.0, 0.0, 0.0)


def test_histogram_follows_a_change_in_the_delay_distribution() -> None:
    """ADWIN drops the old regime: after a shift the histogram shows the new delays."""
    rng = np.random.default_rng(11)
    mgr = StatisticsManager(2, 10)
    t = 0
    for delay in rng.exponential(20.0, 5_000).astype(int):
        t += 10
        mgr.observe(0, t - int(delay), int(delay))
        mgr.observe(1, t, 0)
    before = mgr.roll(1_000).pdfs[0]
    for delay in rng.exponential(400.0, 3_000).astype(int):
        t += 10
        mgr.observe(0, t - int(delay), int(delay))
        mgr.observe(1, t, 0)
    after = mgr.roll(1_000)
    assert after.widths[0] < 3_500
    in_order_before = before[0]
    in_order_after = after.pdfs[0][0]
    assert in_order_after < in_order_before
    mean_bin = float((np.arange(after.pdfs[0].shape[0]) * after.pdfs[0]).sum())
    assert mean_bin * 10 == pytest.approx(400.0, rel=0.2)


def test_synchronized_streams_have_no_sync_buffer_and_skew_is_measured() -> None:
    mgr = StatisticsManager(2, 10)
    for t in range(0, 10_000, 10):
        mgr.observe(0, t + 300, 0)  # stream 0 leads by 300 ms
        mgr.observe(1, t, 0)
    ks = mgr.roll(1_000).ksync_ms
    assert ks[1] == 0.0
    assert ks[0] == pytest.approx(300.0, abs=10.0)


def test_snapshot_round_trip() -> None:
    rng = np.random.default_rng(5)
    mgr = StatisticsManager(2, 10)
    for i, d in enumerate(rng.integers(0, 200, 700)):
        mgr.observe(i % 2, 10 * i - int(d), int(d))
    clone = StatisticsManager.from_snapshot(2, 10, mgr.adwin, mgr.snapshot())
    for i, d in enumerate(rng.integers(0, 400, 700)):
        mgr.observe(i % 2, 7000 + 10 * i - int(d), int(d))
        clone.observe(i % 2, 7000 + 10 * i - int(d), int(d))
    a, b = mgr.roll(500), clone.roll(500)
    assert a.widths == b.widths and a.ksync_ms == b.ksync_ms and a.max_delay_ms == b.max_delay_ms
    assert all(np.array_equal(x, y) for x, y in zip(a.pdfs, b.pdfs, strict=True))
    with pytest.raises(OperatorStateError, match="config has 3"):
        StatisticsManager.from_snapshot(3, 10, mgr.adwin, mgr.snapshot())


def test_bad_construction_is_named() -> None:
    with pytest.raises(ConfigError, match="granularity_ms"):
        StatisticsManager(2, 0)
    with pytest.raises(ConfigError, match="streams"):
        StatisticsManager(1, 10)


@pytest.mark.parametrize("stream", [-1, 2])
def test_unknown_stream_index_is_named(stream: int) -> None:
    with pytest.raises(OperatorInputError, match=rf"in 0\.\.1, got {stream}"):
        StatisticsManager(2, 10).observe(stream, 100, 5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 400)), min_size=1, max_size=300),
       st.integers(1, 5), st.lists(st.integers(1, 40), min_size=1, max_size=8))
def test_sampled_statistics_equal_brute_force_and_the_tuple_path(
        arrivals: list[tuple[int, int]], stride: int, chunks: list[int]) -> None:
    """With a stride k, arrival number c of a stream is observed iff c % k == 0: the
    histogram equals a brute-force count of those delays, ADWIN's window is within it, the
    rate counts every arrival, and the batch path equals the tuple path, in any chunks."""
    one, many = StatisticsManager(2, 10), StatisticsManager(2, 10)
    for mgr in (one, many):
        for s in mgr.streams:
            s.stride = stride
    ts = np.arange(len(arrivals), dtype=np.int64) * 7
    streams = np.array([a[0] for a in arrivals], np.int64)
    delays = np.array([a[1] for a in arrivals], np.int64)
    for i in range(len(arrivals)):
        one.observe(int(streams[i]), int(ts[i]), int(delays[i]))
    start, k = 0, 0
    while start < len(arrivals):
        end = start + chunks[k % len(chunks)]
        many.observe_many(streams[start:end], ts[start:end], delays[start:end])
        start, k = end, k + 1
    assert one.snapshot() == many.snapshot()
    for s in (0, 1):
        mine = delays[streams == s]
        sampled = mine[::stride]
        st_ = many.streams[s]
        assert st_.arrivals == mine.shape[0]
        assert st_.width <= sampled.shape[0]
        if st_.width == sampled.shape[0]:  # ADWIN dropped nothing: the whole sample
            expect = np.bincount([delay_bin(int(d), 10) for d in sampled])
            assert np.allclose(st_.pdf(), expect / expect.sum())


def test_roll_sets_the_stride_from_the_rate() -> None:
    mgr = StatisticsManager(2, 10, max_rate=100.0)
    mgr.observe_many(np.array([0] * 450 + [1] * 90, np.int64), np.arange(540, dtype=np.int64),
                     np.zeros(540, np.int64))
    summary = mgr.roll(1_000)
    assert summary.rates_per_s == (450.0, 90.0)
    assert [s.stride for s in mgr.streams] == [5, 1]
    assert [s.arrivals for s in mgr.streams] == [0, 0]
    exact = StatisticsManager(2, 10)  # max_rate 0: every arrival, always
    exact.observe_many(np.zeros(500, np.int64), np.arange(500, dtype=np.int64),
                       np.zeros(500, np.int64))
    exact.roll(1_000)
    assert exact.streams[0].stride == 1
    with pytest.raises(ConfigError, match=r"disorder\.stat_rate"):
        StatisticsManager(2, 10, max_rate=-1.0)


def test_sampled_snapshot_round_trip_and_old_snapshots() -> None:
    mgr = StatisticsManager(2, 10, max_rate=50.0)
    mgr.observe_many(np.array([0, 1] * 200, np.int64), np.arange(400, dtype=np.int64),
                     np.arange(400, dtype=np.int64) % 37)
    mgr.roll(1_000)
    mgr.observe_many(np.array([0, 1] * 30, np.int64), np.arange(400, 460, dtype=np.int64),
                     np.arange(60, dtype=np.int64) % 11)
    snap = mgr.snapshot()
    back = StatisticsManager.from_snapshot(2, 10, AdwinConfig(), snap, 50.0)
    assert back.snapshot() == snap
    old = {**snap, "streams": [{k: v for k, v in s.items() if k not in ("stride", "seen")}
                               for s in snap["streams"]]}
    restored = StatisticsManager.from_snapshot(2, 10, AdwinConfig(), old)
    assert [s.stride for s in restored.streams] == [1, 1]
