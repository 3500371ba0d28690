"""The validator's batch path (validator_fast.py) against the per-tuple path: the same
verdicts (accepted, rejected with reasons, duplicates) and the same state — rings, cached
medians, staleness, pending jumps, counters — batch after batch, for valid input and for
input with far-future, late, duplicate and conflicting tuples mixed in."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.events import Event
from pipeline.operators.validation import batch as validator_fast
from pipeline.operators.validation.config import ValidatorConfig
from pipeline.operators.validation.validator import InputValidator

STREAMS = ("s1", "s2", "s3")
YEAR_MS = 365 * 24 * 3600 * 1000


def _state(v: InputValidator) -> dict[str, Any]:
    return {**v.snapshot(), "medians": list(v._medians), "stale": list(v._stale),
            "all_median": v._all_median, "all_stale": v._all_stale}


def _outcome(out: Any) -> tuple[Any, ...]:
    return ([(ev, info) for ev, info in out.accepted],
            [(r.event, r.info, r.reason) for r in out.rejected], out.duplicates)


def _workload(seed: int, n: int, bad: float) -> list[tuple[Event, Any]]:
    """Arrival-ordered tuples over 3 streams (bursts per stream, Zipf-ish delays), with a
    share ``bad`` of hostile ones: far-future, late, exact duplicates, conflicts, jumps."""
    rng = np.random.default_rng(seed)
    items: list[tuple[Event, Any]] = []
    t = 0
    seqs = [0, 0, 0]
    for i in range(n):
        t += int(rng.integers(0, 30))
        s = int(rng.integers(0, 3)) if rng.random() < 0.7 else i % 3
        seqs[s] += 1
        ev = Event(s, seqs[s], max(0, t - int(rng.zipf(2.0)) % 3000), t,
                   {"value": float(rng.integers(0, 5))})
        items.append((ev, i))
        if rng.random() < bad:
            kind = int(rng.integers(0, 5))
            if kind == 0:  # far future (arrival or event time)
                far = t + 10 * YEAR_MS
                items.append((Event(s, 10**6 + i, far if rng.random() < 0.5 else t, far,
                                    {"value": 1.0}), f"f{i}"))
            elif kind == 1:  # late
                items.append((Event(s, 10**6 + i, t - 50_000, t, {"value": 1.0}), f"l{i}"))
            elif kind == 2 and items:  # exact duplicate of a recent tuple
                items.append((items[-1][0], f"d{i}"))
            elif kind == 3:  # conflict: same key, other event time
                items.append((Event(s, seqs[s], ev.ts + 1, t, ev.attrs), f"c{i}"))
            else:  # a sustained jump of one stream's time (a burst far ahead)
                for k in range(40):
                    items.append((Event(s, 2 * 10**6 + 100 * i + k, t + YEAR_MS + k,
                                        t + YEAR_MS + k, {"value": 0.0}), f"j{i}.{k}"))
    return items


def _run(items: list[tuple[Event, Any]], cuts: list[int], fast: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    monkeypatch.setattr(validator_fast, "MIN_BATCH", 1 if fast else 10**9)
    monkeypatch.setattr(validator_fast, "RUN", 97)  # several runs per batch
    v = InputValidator(ValidatorConfig(STREAMS, max_future_ms=60_000, max_late_ms=20_000))
    outs, states = [], []
    bounds = [0, *sorted(set(cuts)), len(items)]
    for lo, hi in itertools.pairwise(bounds):
        outs.append(_outcome(v.admit(items[lo:hi])))
        states.append(_state(v))
    outs.append(_outcome(v.flush()))
    return outs, states


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), bad=st.sampled_from([0.0, 0.02, 0.2]),
       cuts=st.lists(st.integers(0, 700), max_size=5))
def test_batch_path_equals_tuple_by_tuple(seed: int, bad: float, cuts: list[int]) -> None:
    items = _workload(seed, 500, bad)
    with pytest.MonkeyPatch.context() as mp:
        slow = _run(items, cuts, False, mp)
    with pytest.MonkeyPatch.context() as mp:
        fast = _run(items, cuts, True, mp)
    assert fast == slow


def test_clock_trace_counts_refreshes_like_the_clock() -> None:
    """A single clock fed arrivals 0, 10, 20, …: refreshed every 4 arrivals after the
    quorum, the shown value lags the true lower median by at most 3 arrivals."""
    new = np.arange(0, 400, 10, dtype=np.int64)
    counts = np.arange(new.shape[0], dtype=np.int64)
    shown, cached, stale = validator_fast.clock_trace([], 0, None, new, counts, 31, 7, 4)
    assert (shown[:7] == validator_fast._NONE).all()
    assert shown[7] == 30  # the first 7 arrivals 0..60: lower median 30
    assert cached is not None and 0 <= stale < 4 + 1

