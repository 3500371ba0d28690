"""The stream time a routing task's batch vouches for (``batch_reference``) and the ATR
segment takeover it keeps valid: an instance whose clock is a segment old takes its new
segment's first tuples from a backlog batch spanning minutes of stream time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.events import Event
from pipeline.operators.validation import InputValidator, ValidatorConfig, batch_reference

YEAR_MS = 365 * 24 * 3600 * 1000


def test_an_even_batch_vouches_for_its_newest_tuple() -> None:
    arrivals = np.arange(0, 166_001, 10, dtype=np.int64)
    assert abs(batch_reference(arrivals) - 166_000) <= 20
    assert batch_reference(np.array([5], dtype=np.int64)) == 5
    assert batch_reference(np.array([], dtype=np.int64)) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10_000_000), min_size=1, max_size=400),
       st.floats(0.0, 0.49), st.integers(1, 60))
def test_a_hostile_minority_moves_it_only_within_the_batch_span(
        valid: list[int], share: float, years: int) -> None:
    """Never beyond the largest arrival; with a hostile share h < 1/2 of far-future rows
    the median and the lower quartile are valid arrivals, so at most max + 2·span."""
    good = np.array(sorted(valid), dtype=np.int64)
    n_bad = int(share * len(good) / (1 - share))
    bad = np.full(n_bad, good.max() + years * YEAR_MS, dtype=np.int64)
    arrivals = np.concatenate([good, bad])
    ref = batch_reference(arrivals)
    assert ref <= arrivals.max()
    span = int(good.max() - good.min())
    assert ref <= good.max() + 2 * span
    if n_bad == 0:
        assert ref <= good.max()


def test_a_segment_takeover_in_a_wide_backlog_batch_is_not_future() -> None:
    """ATR, G = 2, a backlog drained in batches of 166 s of stream time: the instance
    that owned segment 0 gets nothing of segment 1 and takes segment 2's first tuples at
    the end of a batch whose median lies 83 s behind them. With the batch's reference
    they pass; the same instance still rejects a record 50 years ahead."""
    cfg = ValidatorConfig(("s1", "s2", "s3"), max_future_ms=60_000, max_late_ms=20_000)
    v = InputValidator(cfg)
    seq = iter(range(10**6))
    own = [Event(i % 3, next(seq), t - 5, t, {"value": 0.0}) for i, t in
           enumerate(range(800_000, 1_000_000, 10))]
    v.admit([(e, k) for k, e in enumerate(own)])
    batch = np.arange(1_834_000, 2_000_100, 10, dtype=np.int64)  # the routing task's rows
    assert int(np.median(batch)) + 60_000 < 2_000_000  # the median alone rejected them
    v.observe_reference(batch_reference(batch))
    first = [Event(i % 3, next(seq), t - 5, t, {"value": 0.0})
             for i, t in enumerate(range(2_000_000, 2_000_100, 10))]
    hostile = Event(0, next(seq), 2_000_100 + 50 * YEAR_MS, 2_000_100, {"value": 0.0})
    out = v.admit([(e, k) for k, e in enumerate([*first, hostile])])
    assert [e for e, _ in out.accepted] == first
    assert len(out.rejected) == 1 and out.rejected[0].reason.startswith("future:")
