"""MemberStore's incremental state: arrival-order segments written once, deleted when
all their entries are evicted, and restored into the same store."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import OperatorStateError
from pipeline.runtime.members import MemberStore

Segments = dict[tuple[int, int], dict]


def _apply(store: MemberStore, segments: Segments) -> tuple[dict, int]:
    header, new, removed = store.changes()
    for key in removed:
        del segments[key]
    assert not set(new) & set(segments)  # a segment is written once
    segments.update(new)
    return header, sum(len(s["ts"]) for s in new.values())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), payload=st.booleans(), batches=st.integers(1, 8))
def test_segments_restore_the_same_store(seed: int, payload: bool, batches: int) -> None:
    rng = np.random.default_rng(seed)
    store = MemberStore(["a", "b"], [100, 300], payload=payload, separator=b",")
    segments: Segments = {}
    seqs = [0, 0]
    clock = 0
    for _ in range(batches):
        added = 0
        for _ in range(int(rng.integers(0, 30))):
            j = int(rng.integers(0, 2))
            ts = clock + int(rng.integers(-80, 20))  # some arrive late
            store.add(j, seqs[j], ts, 0, seqs[j] * 2, b"p%d" % seqs[j] if payload else None)
            seqs[j] += 1
            added += 1
            clock += int(rng.integers(0, 15))
        store.evict(clock)
        header, written = _apply(store, segments)
        assert written <= added  # only what the batch added
        back = MemberStore(["a", "b"], [100, 300], payload=payload,
                           separator=b",").restore_pieces(header, segments)
        assert back.snapshot() == store.snapshot()
        assert _apply(back, dict(segments))[1] == 0  # restored: all persisted
        store = back
    store.evict(clock + 10_000)
    _, _ = _apply(store, segments)
    assert segments == {}  # everything evicted: every segment deleted


def test_a_full_restore_hands_out_everything_once() -> None:
    store = MemberStore(["a", "b"], [100, 100])
    for q in range(5):
        store.add(q % 2, q, 10 * q, 0, q, None)
    again = MemberStore(["a", "b"], [100, 100]).restore(store.snapshot())
    _, new, removed = again.changes()
    assert removed == [] and sorted(new) == [(0, 0), (1, 0)]
    assert [s["seq"].tolist() for _, s in sorted(new.items())] == [[0, 2, 4], [1, 3]]
    assert again.changes()[1] == {}


def test_segments_that_disagree_with_the_header_are_an_operator_state_error() -> None:
    store = MemberStore(["a", "b"], [100, 100])
    store.add(0, 1, 10, 0, 1, None)
    header, new, _ = store.changes()
    with pytest.raises(OperatorStateError, match="stream 0"):
        MemberStore(["a", "b"], [100, 100]).restore_pieces(header, {})
    with pytest.raises(OperatorStateError, match="member segments"):
        MemberStore(["a", "b"], [100, 100]).restore_pieces({}, new)
