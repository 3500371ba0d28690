"""The plug-in contract, over every ``[memory]`` eviction policy × allocation.

The memory policies (Das, Gehrke, Riedewald, "Semantic Approximation of Data Stream
Joins", §4.2: RAND, PROB, LIFE; and LAGPROB, ours) are built by the join, not by a
factory of the shedder kind, so they get their own table beside ``test_plugins.py``.
Each, inside an :class:`~pipeline.operators.engine.engine.Engine` on a generated 3-way band join
with a memory well below what the exact join holds, must:

* survive snapshot → pickle → ``from_snapshot`` with an identical snapshot;
* restored half-way through the stream, give the same results, metrics and window
  contents as an uninterrupted run (and the policy's state really moved: evictions);
* refuse another mode's snapshot with :class:`OperatorStateError`;
* flush a fresh engine to no results;
* never hold more tuples than its budget (per stream when fixed, in all when variable).
"""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import pytest

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event
from pipeline.operators.memory.join import BoundedJoin
from pipeline.operators.memory.policies import MEMORY_POLICIES, memory_class
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events
from tests.contract.test_plugins import assert_same, env, ids, run

WINDOWS = [400, 400, 400]
#: tuples over the three windows: the exact join holds ~60 per stream at once here
MAX_TUPLES = 36
CASES = [(mode, allocation) for mode in MEMORY_POLICIES for allocation in ("fixed", "variable")]
IDS = [f"{mode}-{allocation}" for mode, allocation in CASES]


@cache
def config(mode: str, allocation: str) -> EngineConfig:
    """3-way band join, fixed K-slack, no CPU shedding, ``[memory]`` under test."""
    disorder = {"mode": "fixed", "slack_ms": 60, "interval_ms": 200, "period_ms": 2_000}
    memory = {"mode": mode, "max_tuples": MAX_TUPLES, "allocation": allocation, "seed": 3}
    return resolve_engine(make_spec(3, "band", WINDOWS, disorder=disorder, memory=memory))


@cache
def stream() -> tuple[Event, ...]:
    """3 streams × 300 tuples (~6 s of stream time), 30 % delayed by up to 120 ms."""
    spec = make_spec(3, "band", WINDOWS)
    return tuple(to_events(make_dump(seed=5, m=3, n=300, max_delay=120), spec))


def bounded(eng: Engine) -> BoundedJoin:
    join = eng.join
    assert isinstance(join, BoundedJoin)
    return join


def restore(cfg: EngineConfig, snap: dict[str, Any]) -> Any:
    """The policy of ``cfg`` restored from ``snap`` (the join's window lengths and
    predicate, as :meth:`BoundedJoin.restore` passes them)."""
    join_cfg = bounded(Engine(cfg, env())).config
    return memory_class(cfg.memory.mode).from_snapshot(
        cfg.memory, join_cfg.windows, join_cfg.predicate, snap)


@pytest.mark.parametrize(("mode", "allocation"), CASES, ids=IDS)
def test_snapshot_round_trip_is_identical(mode: str, allocation: str) -> None:
    cfg = config(mode, allocation)
    eng = Engine(cfg, env())
    events = stream()
    for part in (events[:0], events[: len(events) // 2], events[len(events) // 2:]):
        eng.process_many(part)
        snap = bounded(eng).memory.snapshot()
        back = restore(cfg, pickle.loads(pickle.dumps(snap)))
        assert_same(back.snapshot(), snap)


@pytest.mark.parametrize(("mode", "allocation"), CASES, ids=IDS)
def test_mid_stream_restore_equals_uninterrupted_run(mode: str, allocation: str) -> None:
    cfg = config(mode, allocation)
    events = stream()
    half = len(events) // 2
    whole = Engine(cfg, env())
    expected = whole.process_many(events[:half]) + run(whole, events[half:])
    assert expected
    first = Engine(cfg, env())
    got = first.process_many(events[:half])
    restored = Engine.from_snapshot(cfg, pickle.loads(pickle.dumps(first.snapshot())), env())
    got += run(restored, events[half:])
    assert ids(got) == ids(expected)
    assert_same(restored.memory_metrics(), whole.memory_metrics(), "memory metrics")
    assert restored.stats == whole.stats
    assert [w.size() for w in bounded(restored).windows] == \
        [w.size() for w in bounded(whole).windows]
    metrics = whole.memory_metrics()
    assert metrics is not None and metrics["evictions"] > 0  # the policy's state moved


@pytest.mark.parametrize(("mode", "allocation"), CASES, ids=IDS)
def test_snapshot_of_another_mode_is_refused(mode: str, allocation: str) -> None:
    cfg = config(mode, allocation)
    for other in MEMORY_POLICIES:
        if other == mode:
            continue
        snap = bounded(Engine(config(other, allocation), env())).memory.snapshot()
        with pytest.raises(OperatorStateError):
            restore(cfg, snap)


@pytest.mark.parametrize(("mode", "allocation"), CASES, ids=IDS)
def test_fresh_engine_flushes_to_nothing(mode: str, allocation: str) -> None:
    cfg = config(mode, allocation)
    eng = Engine(cfg, env())
    assert eng.flush() == []
    assert eng.stats.inputs == 0 and eng.stats.results == 0
    again = Engine.from_snapshot(cfg, pickle.loads(pickle.dumps(eng.snapshot())), env())
    assert again.flush() == []


@pytest.mark.parametrize(("mode", "allocation"), CASES, ids=IDS)
def test_windows_stay_within_the_budget(mode: str, allocation: str) -> None:
    cfg = config(mode, allocation)
    eng = Engine(cfg, env())
    events = stream()
    for lo in range(0, len(events), 37):  # uneven calls: the bound holds between any two
        eng.process_many(events[lo:lo + 37])
        sizes = [w.size() for w in bounded(eng).windows]
        if allocation == "fixed":
            assert max(sizes) <= MAX_TUPLES // 3, sizes
        else:
            assert sum(sizes) <= MAX_TUPLES, sizes
