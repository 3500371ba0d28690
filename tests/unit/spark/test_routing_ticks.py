"""The tick UDF's body (:func:`pipeline.spark.routing.tick_marks`) without Spark."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.spark.routing import tick_marks


def _batches(sizes: list[int], seed: int) -> list[tuple[pd.Series, pd.Series]]:
    rng = np.random.default_rng(seed)
    return [(pd.Series(rng.integers(0, 10**12, n, dtype=np.int64)),
             pd.Series(rng.random(n) < 0.8)) for n in sizes]


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(0, 5), max_size=6), seed=st.integers(0, 1000))
def test_only_the_last_row_carries_the_reference_of_the_valid_rows(sizes: list[int],
                                                               seed: int) -> None:
    batches = _batches(sizes, seed)
    out = pd.concat([pd.Series([], dtype="Int64"), *tick_marks(iter(batches))],
                    ignore_index=True)
    assert len(out) == sum(sizes)
    if not sum(sizes):
        return
    arrivals = pd.concat([a for a, _ in batches], ignore_index=True)
    valid = pd.concat([ok for _, ok in batches], ignore_index=True).to_numpy(bool)
    want = 0
    if valid.any():  # the upper edge of the bulk, from the sorted arrivals by hand
        ordered = sorted(int(a) for a in arrivals.to_numpy()[valid])
        n = len(ordered)
        q25, q50 = ordered[(n - 1) // 4], ordered[(n - 1) // 2]
        want = min(ordered[-1], q50 + 2 * (q50 - q25))
    assert out.iloc[:-1].isna().all()
    assert int(out.iloc[-1]) == want


def test_answers_follow_the_input_one_batch_behind() -> None:
    """The JVM holds at most two batches: batch i is answered when batch i+1 arrives."""
    batches = _batches([3, 2, 4], 1)
    seen = 0

    def feed() -> Iterator[tuple[pd.Series, pd.Series]]:
        nonlocal seen
        for b in batches:
            seen += 1
            yield b

    out = tick_marks(feed())
    assert len(next(out)) == 3 and seen == 2
    assert len(next(out)) == 2 and seen == 3
    assert len(next(out)) == 4
