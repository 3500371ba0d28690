"""K-slack (Ji et al. §II, Fig. 3)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.disorder.kslack import KSlack, KSlackConfig
from pipeline.operators.events import Event


def _ev(ts: int, seq: int = 0) -> Event:
    return Event(stream=0, seq=seq, ts=ts, arrival=seq, attrs={})


# Fig. 3 (K = 1): arrival ts, ^iT after each arrival, ts emitted after each arrival
FIG3 = [
    (1, 1, []),
    (4, 4, [1]),
    (3, 4, [3]),
    (5, 5, [4]),
    (7, 7, [5]),
    (8, 8, [7]),
    (6, 8, [6]),
    (9, 9, [8]),
]


def test_fig3_table() -> None:
    """Arrival ts 1,4,3,5,7,8,6,9 -> ^iT 1,4,4,5,7,8,8,9 -> output 1,3,4,5,7,6,8 (K=1)."""
    ks = KSlack(KSlackConfig(0))
    out: list[int] = []
    for seq, (ts, local, emitted) in enumerate(FIG3):
        _, rel = ks.push(_ev(ts, seq), k=1)
        assert ks.local_time == local
        assert [e.ts for e, _ in rel] == emitted
        out.extend(e.ts for e, _ in rel)
    assert out == [1, 3, 4, 5, 7, 6, 8]
    assert [e.ts for e, _ in ks.flush()] == [9]


@pytest.mark.parametrize(
    ("arrivals", "delays"),
    [
        ([1, 4, 3, 5, 7, 8, 6, 9], [0, 0, 1, 0, 0, 0, 2, 0]),
        ([5, 5, 2, 9], [0, 0, 3, 0]),
    ],
)
def test_raw_delay(arrivals: list[int], delays: list[int]) -> None:
    ks = KSlack(KSlackConfig(0))
    got = [ks.push(_ev(ts, i), k=0)[0] for i, ts in enumerate(arrivals)]
    assert got == delays


@settings(max_examples=60, deadline=None)
@given(
    ts=st.lists(st.integers(0, 500), min_size=1, max_size=60),
    k=st.integers(0, 600),
)
def test_output_sorted_when_k_covers_delays(ts: list[int], k: int) -> None:
    ks = KSlack(KSlackConfig(0))
    max_delay, out = 0, list[int]()
    for i, t in enumerate(ts):
        d, rel = ks.push(_ev(t, i), k)
        max_delay = max(max_delay, d)
        out.extend(e.ts for e, _ in rel)
    out.extend(e.ts for e, _ in ks.flush())
    assert sorted(out) == sorted(ts)  # nothing lost or duplicated
    if k >= max_delay:
        assert out == sorted(out)


def test_k_change_at_runtime_releases_more() -> None:
    ks = KSlack(KSlackConfig(0))
    for i, t in enumerate([10, 20, 30]):
        ks.push(_ev(t, i), k=100)
    assert len(ks) == 3
    assert [e.ts for e, _ in ks.release(10)] == [10, 20]
    assert len(ks) == 1


def test_snapshot_round_trip() -> None:
    ks = KSlack(KSlackConfig(0))
    for i, t in enumerate([5, 3, 9, 7]):
        ks.push(_ev(t, i), k=50)
    again = KSlack.from_snapshot(KSlackConfig(0), pickle.loads(pickle.dumps(ks.snapshot())))
    assert again.local_time == ks.local_time
    assert [e for e, _ in again.flush()] == [e for e, _ in ks.flush()]
    assert KSlack(KSlackConfig(0)).flush() == []
