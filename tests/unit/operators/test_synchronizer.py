"""Synchronizer (Ji et al. Alg. 1)."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.disorder.synchronizer import Synchronizer, SynchronizerConfig
from pipeline.operators.events import Event


def _item(stream: int, ts: int, seq: int = 0) -> tuple[Event, int]:
    return (Event(stream, seq, ts, 0, {}), 0)


def test_alg1_releases_min_when_every_stream_present() -> None:
    sync = Synchronizer(SynchronizerConfig(2))
    assert sync.push(_item(0, 5)) == []
    assert sync.push(_item(0, 7)) == []
    out = sync.push(_item(1, 6))
    assert [(e.stream, e.ts) for e, _ in out] == [(0, 5), (1, 6)]
    assert sync.sync_time == 6
    out = sync.push(_item(1, 9))
    assert [(e.stream, e.ts) for e, _ in out] == [(0, 7)]
    # ts ≤ T_sync passes straight through (late)
    assert [e.ts for e, _ in sync.push(_item(0, 4))] == [4]
    assert [e.ts for e, _ in sync.flush()] == [9]


def test_equal_timestamps_released_together() -> None:
    sync = Synchronizer(SynchronizerConfig(3))
    sync.push(_item(0, 3))
    sync.push(_item(1, 3))
    out = sync.push(_item(2, 3))
    assert sorted(e.stream for e, _ in out) == [0, 1, 2]


streams_st = st.lists(
    st.lists(st.integers(0, 40), min_size=0, max_size=15).map(sorted), min_size=2, max_size=5
)


@settings(max_examples=80, deadline=None)
@given(per_stream=streams_st, interleave=st.randoms(use_true_random=False))
def test_output_ordered_when_inputs_are(per_stream: list[list[int]], interleave: Any) -> None:
    """Each input stream ts-ordered ⇒ the merged output is ts-ordered and complete."""
    m = len(per_stream)
    sync = Synchronizer(SynchronizerConfig(m))
    pending = [list(s) for s in per_stream]
    out: list[int] = []
    while any(pending):
        s = interleave.choice([i for i in range(m) if pending[i]])
        out.extend(e.ts for e, _ in sync.push(_item(s, pending[s].pop(0))))
    out.extend(e.ts for e, _ in sync.flush())
    assert out == sorted(out)
    assert sorted(out) == sorted(t for s in per_stream for t in s)


def test_snapshot_round_trip() -> None:
    sync = Synchronizer(SynchronizerConfig(3))
    for s, ts in [(0, 4), (1, 6), (0, 8), (2, 1)]:
        sync.push(_item(s, ts))
    again = Synchronizer.from_snapshot(
        SynchronizerConfig(3), pickle.loads(pickle.dumps(sync.snapshot()))
    )
    assert again.sync_time == sync.sync_time
    assert [(e.stream, e.ts) for e, _ in again.push(_item(2, 7))] == [
        (e.stream, e.ts) for e, _ in sync.push(_item(2, 7))
    ]
    assert [e.ts for e, _ in again.flush()] == [e.ts for e, _ in sync.flush()]
    assert Synchronizer(SynchronizerConfig(2)).flush() == []
