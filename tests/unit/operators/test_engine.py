"""Engine (K-slack → Synchronizer → MWayJoin) against the brute-force oracle."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine.engine import Engine
from pipeline.quality.oracle import brute_force_oracle
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import parse_spec
from pipeline.testing.streams import make_dump, make_spec, to_events

PREDICATES = ["equi", "band", "distance", "cosine", "custom"]


def _custom(left: Mapping[str, Any], right: Mapping[str, Any]) -> Any:
    """A user predicate: values within 1.0 AND x-coordinates within 4.0 (vectorized)."""
    return (np.abs(left["value"] - right["value"]) <= 1.0) & (np.abs(left["x"] - right["x"]) <= 4.0)


def run_engine(config: EngineConfig, events: list[Any]) -> list[str]:
    eng = Engine(config)
    out = eng.process_many(events) + eng.flush()
    return [r.id for r in out]


def _config(spec: Any, predicate: str) -> EngineConfig:
    if predicate == "custom":
        return resolve_engine(spec, custom=_custom, columns=("value", "x"))
    return resolve_engine(spec)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 5),
    predicate=st.sampled_from(PREDICATES),
    equal=st.booleans(),
    base=st.integers(20, 300),
    b=st.integers(1, 120),
    max_delay=st.integers(0, 200),
    extra_k=st.integers(0, 50),
)
def test_exact_with_k_at_least_max_delay(
    seed: int, m: int, predicate: str, equal: bool, base: int, b: int, max_delay: int, extra_k: int
) -> None:
    rng = np.random.default_rng(seed)
    windows = [base] * m if equal else [int(w) for w in rng.integers(10, 300, size=m)]
    n = {2: 40, 3: 25, 4: 14, 5: 10}[m]
    spec = make_spec(
        m,
        "band" if predicate == "custom" else predicate,
        windows,
        disorder={"mode": "fixed", "slack_ms": max_delay + extra_k},
        shedding={"basic_window_ms": b},
    )
    dump = make_dump(seed, m, n, max_gap=30, max_delay=max_delay)
    custom = _custom if predicate == "custom" else None
    truth = brute_force_oracle(spec.join, dump, custom=custom, custom_columns=("value", "x"))
    got = run_engine(_config(spec, predicate), to_events(dump, spec))
    assert len(got) == len(set(got)), "duplicate results"
    assert sorted(got) == sorted(r.id for r in truth)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 4),
    predicate=st.sampled_from(["equi", "band"]),
    b=st.integers(1, 120),
    max_delay=st.integers(0, 200),
)
def test_indexed_engine_equals_oracle(
    seed: int, m: int, predicate: str, b: int, max_delay: int
) -> None:
    """``[join] index = true`` (sorted per-basic-window indexes) changes no result."""
    rng = np.random.default_rng(seed)
    windows = [int(w) for w in rng.integers(10, 300, size=m)]
    base = make_spec(m, predicate, windows, disorder={"mode": "fixed", "slack_ms": max_delay},
                     shedding={"basic_window_ms": b})
    spec = base.model_copy(update={"join": base.join.model_copy(update={"index": True})})
    dump = make_dump(seed, m, {2: 40, 3: 25, 4: 14}[m], max_gap=30, max_delay=max_delay)
    config = resolve_engine(spec)
    assert config.join_config().index
    got = run_engine(config, to_events(dump, spec))
    assert sorted(got) == sorted(r.id for r in brute_force_oracle(spec.join, dump))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4), max_delay=st.integers(1, 300))
def test_k_zero_precision_is_one(seed: int, m: int, max_delay: int) -> None:
    """Disorder loses results but never invents one (precision = 1)."""
    spec = make_spec(
        m, "equi", [150] * m, disorder={"mode": "none"}, shedding={"basic_window_ms": 40}
    )
    dump = make_dump(seed, m, 30, max_delay=max_delay, late_share=0.5)
    truth = {r.id for r in brute_force_oracle(spec.join, dump)}
    got = run_engine(resolve_engine(spec), to_events(dump, spec))
    assert set(got) <= truth
    assert len(got) == len(set(got))


def _late_dump() -> list[dict[str, Any]]:
    """Two in-order streams, every pair matches; s1@50 arrives after everything else."""
    rows = []
    for s in ("s1", "s2"):
        for q, ts in enumerate(range(0, 101, 10)):
            arrival = 500 if (s == "s1" and ts == 50) else ts
            rows.append({"stream": s, "seq": q, "event_time": ts, "arrival_time": arrival, "a1": 1})
    rows.sort(key=lambda r: (r["arrival_time"], r["stream"]))
    return rows


@pytest.mark.parametrize(
    ("mode", "slack_ms", "lost"),
    [
        ("none", 0, 5),  # s1@50 reaches the join when ⋈T = 100: discarded, 5 results lost
        ("fixed", 40, 4),  # late at ⋈T = 60 but inserted: s2@70 still finds it, 4 lost
        ("fixed", 50, 0),
        ("max", 0, 5),  # K jumps to 50 only when s1@50 itself arrives
    ],
)
def test_recall_under_disorder(mode: str, slack_ms: int, lost: int) -> None:
    """s1@50 has delay ^1T − ts = 100 − 50 = 50: K ≤ 40 (a tuple gap below it) certainly
    loses results, K ≥ 50 loses none; Max-K-slack raises K only when s1@50 arrives, too
    late for s1@50 itself."""
    spec = make_spec(
        2,
        "equi",
        [20, 20],
        disorder={"mode": mode, "slack_ms": slack_ms},
        shedding={"basic_window_ms": 10},
    )
    dump = _late_dump()
    truth = {r.id for r in brute_force_oracle(spec.join, dump)}
    got = set(run_engine(resolve_engine(spec), to_events(dump, spec)))
    assert got <= truth
    # s1@50 (seq 5) matches s2 at 30..70: 5 true results contain it
    assert len(truth) - len(got) == lost
    assert all(
        r.id in got
        for r in brute_force_oracle(spec.join, dump)
        if all(m.seq != 5 or m.stream != "s1" for m in r.members)
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 4),
    predicate=st.sampled_from(["equi", "band", "cosine"]),
    mode=st.sampled_from(["none", "max", "fixed"]),
    cut=st.floats(0.0, 1.0),
)
def test_snapshot_mid_stream_changes_nothing(
    seed: int, m: int, predicate: str, mode: str, cut: float
) -> None:
    spec = make_spec(
        m,
        predicate,
        [120] * m,
        disorder={"mode": mode, "slack_ms": 60, "interval_ms": 50, "period_ms": 1000},
        shedding={"basic_window_ms": 30},
    )
    events = to_events(make_dump(seed, m, 25, max_delay=150), spec)
    config = resolve_engine(spec)
    ref = Engine(config)
    expected = [r.id for r in ref.process_many(events) + ref.flush()]
    expected_metrics = ref.drain_metrics()
    split = int(cut * len(events))
    first = Engine(config)
    got = [r.id for r in first.process_many(events[:split])]
    metrics = first.drain_metrics()
    blob = pickle.dumps(first.snapshot())
    second = Engine.from_snapshot(config, pickle.loads(blob))
    got += [r.id for r in second.process_many(events[split:]) + second.flush()]
    metrics += second.drain_metrics()
    assert got == expected
    assert metrics == expected_metrics
    assert second.stats == ref.stats


def test_empty_flush_and_empty_snapshot() -> None:
    spec = make_spec(3, "band", [100] * 3)
    config = resolve_engine(spec)
    eng = Engine(config)
    assert eng.flush() == []
    assert eng.advance_to(10_000) == []
    again = Engine.from_snapshot(config, pickle.loads(pickle.dumps(eng.snapshot())))
    assert again.flush() == []
    assert again.stats.inputs == 0


def test_bad_snapshot_is_an_operator_state_error() -> None:
    config = resolve_engine(make_spec(2, "equi", [10, 10]))
    with pytest.raises(OperatorStateError, match="snapshot"):
        Engine.from_snapshot(config, {"clock": 0})


def test_unavailable_mode_is_a_config_error() -> None:
    spec = parse_spec(
        {
            "join": {
                "streams": ["s1", "s2"],
                "predicate": "equi",
                "attribute": "a1",
                "window_ms": 10,
            },
            "shedding": {"mode": "grubjoin", "capacity": 10.0},
        }
    )
    try:
        Engine(resolve_engine(spec))
    except ConfigError as exc:
        assert "shedding.mode" in str(exc)


def test_max_policy_metrics_rows_at_interval_boundaries() -> None:
    spec = make_spec(
        2, "equi", [100, 100], disorder={"mode": "max", "interval_ms": 100, "period_ms": 1000}
    )
    dump = make_dump(3, 2, 30, max_delay=80)
    eng = Engine(resolve_engine(spec))
    eng.process_many(to_events(dump, spec))
    rows = eng.drain_metrics()
    last_arrival = max(r["arrival_time"] for r in dump)
    first_arrival = min(r["arrival_time"] for r in dump)
    assert [r["time"] for r in rows] == list(
        range((first_arrival // 100 + 1) * 100, last_arrival + 1, 100)
    )
    assert all(r["source"] == "disorder" and r["policy"] == "max" for r in rows)
    ks = [r["k_ms"] for r in rows]
    assert ks == sorted(ks)  # Max-K-slack never shrinks K
    assert eng.drain_metrics() == []


@pytest.mark.parametrize("predicate", PREDICATES)
@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_exact_table(predicate: str, m: int) -> None:
    """Fixed seeds with a non-empty truth for every predicate kind and m (unequal windows)."""
    windows = [150 + 40 * i for i in range(m)]
    spec = make_spec(
        m,
        "band" if predicate == "custom" else predicate,
        windows,
        disorder={"mode": "fixed", "slack_ms": 120},
        shedding={"basic_window_ms": 35},
    )
    n = {2: 40, 3: 25, 4: 14, 5: 10}[m] + (10 if predicate == "cosine" else 0)
    dump = make_dump(m, m, n, max_gap=25, max_delay=120)
    custom = _custom if predicate == "custom" else None
    truth = brute_force_oracle(spec.join, dump, custom=custom, custom_columns=("value", "x"))
    assert truth
    got = run_engine(_config(spec, predicate), to_events(dump, spec))
    assert sorted(got) == sorted(r.id for r in truth)
