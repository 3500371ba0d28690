"""The plug-in contract, over every entry of ``SHEDDERS`` and ``SLACK_POLICIES``.

Each plug-in is created through its factory from the frozen config and a
:class:`~pipeline.operators.contract.PluginEnv` (a fake wall clock; shedders on a virtual
budget with a capacity, or on the wall budget), and must:

* survive snapshot → pickle → ``from_snapshot`` with an identical snapshot;
* inside an :class:`~pipeline.operators.engine.engine.Engine` snapshotted half-way through a
  generated stream and restored, give the same results and metrics as an uninterrupted
  run;
* refuse another mode's snapshot with :class:`OperatorStateError`;
* flush a fresh engine to no results.
"""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import numpy as np
import pytest

import pipeline.operators.engine.engine as engine_module
from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv, Shedder, ShedderFactory
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event, JoinResult
from pipeline.operators.registry import (
    SHEDDERS,
    SLACK_POLICIES,
    shedder_class,
    slack_policy_class,
)
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events

WINDOWS = [400, 400, 400]
#: cost units per second of stream time: well below the full join's need, so the
#: shedders throttle (and drop) and their state moves
CAPACITY = 3_000.0
#: the fake wall clock's step: a power of two, so every difference of readings is exact
#: whatever the clock's absolute value (a restored run starts a new clock)
TICK = 2.0**-7

#: (kind, mode, budget): every slack policy, every shedder on both budget sources
CASES = [("disorder", mode, "virtual") for mode in SLACK_POLICIES] + [
    ("shedding", mode, budget) for mode in SHEDDERS for budget in ("virtual", "wall")
]
IDS = [f"{kind}-{mode}-{budget}" for kind, mode, budget in CASES]


class FakeClock:
    """Wall clock (seconds) advancing one ``tick`` (:data:`TICK`) per reading."""

    def __init__(self, tick: float = TICK) -> None:
        self.now = 0.0
        self.tick = tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def env(tick: float = TICK) -> PluginEnv:
    """A fresh environment: fake wall clock, speed-up 2 (no real time anywhere)."""
    return PluginEnv(clock=FakeClock(tick), speedup=2.0)


@cache
def config(kind: str, mode: str, budget: str = "virtual") -> EngineConfig:
    """3-way band join; the plug-in under test in ``mode``, the other kind a baseline."""
    disorder: dict[str, Any] = {"mode": "fixed", "slack_ms": 60, "interval_ms": 200,
                                "period_ms": 2_000}
    shedding: dict[str, Any] = {"mode": "off"}
    if kind == "disorder":
        disorder["mode"] = mode
    else:
        shedding = {"mode": mode, "budget": budget, "capacity": CAPACITY,
                    "basic_window_ms": 100, "adapt_interval_ms": 500, "shred_rate": 0.2,
                    "utilization": 0.9}
    return resolve_engine(make_spec(3, "band", WINDOWS, disorder=disorder, shedding=shedding))


@cache
def stream() -> tuple[Event, ...]:
    """3 streams × 300 tuples (~6 s of stream time), 30 % delayed by up to 120 ms."""
    spec = make_spec(3, "band", WINDOWS)
    return tuple(to_events(make_dump(seed=5, m=3, n=300, max_delay=120), spec))


def plugin(eng: Engine, kind: str) -> Any:
    return eng.slack if kind == "disorder" else eng.shedder


def factory(kind: str, mode: str) -> Any:
    return slack_policy_class(mode) if kind == "disorder" else shedder_class(mode)


def assert_same(a: Any, b: Any, path: str = "snapshot") -> None:
    """Deep equality of plain snapshot data (dicts, sequences, NumPy arrays, scalars)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), path
        assert a.dtype == b.dtype and np.array_equal(a, b), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"  # NaN == NaN


def ids(results: list[JoinResult]) -> list[str]:
    return [r.id for r in results]


def run(eng: Engine, events: tuple[Event, ...]) -> list[JoinResult]:
    return eng.process_many(events) + eng.flush()


@pytest.mark.parametrize(("kind", "mode", "budget"), CASES, ids=IDS)
def test_created_from_config_and_env(kind: str, mode: str, budget: str) -> None:
    cfg = config(kind, mode, budget)
    obj = factory(kind, mode).create(cfg, env())
    assert obj.snapshot()["mode"] == mode
    assert plugin(Engine(cfg, env()), kind).snapshot()["mode"] == mode


@pytest.mark.parametrize(("kind", "mode", "budget"), CASES, ids=IDS)
def test_snapshot_round_trip_is_identical(kind: str, mode: str, budget: str) -> None:
    cfg = config(kind, mode, budget)
    eng = Engine(cfg, env())
    events = stream()
    for part in (events[:0], events[: len(events) // 2], events[len(events) // 2:]):
        eng.process_many(part)
        snap = plugin(eng, kind).snapshot()
        back = factory(kind, mode).from_snapshot(cfg, pickle.loads(pickle.dumps(snap)), env())
        assert_same(back.snapshot(), snap)


@pytest.mark.parametrize(("kind", "mode", "budget"), CASES, ids=IDS)
def test_mid_stream_restore_equals_uninterrupted_run(kind: str, mode: str,
                                                     budget: str) -> None:
    cfg = config(kind, mode, budget)
    events = stream()
    half = len(events) // 2
    # the uninterrupted run gets the same two calls: a wall budget times each run of
    # tuples the batch path joins at once (so one reading covers a whole run: a coarser
    # tick keeps the shedders — GrubJoin, the drop baselines — overloaded), and the call
    # boundaries are part of the input
    tick = 2.0**-3 if budget == "wall" and mode != "off" else TICK
    whole = Engine(cfg, env(tick))
    expected = whole.process_many(events[:half]) + run(whole, events[half:])
    assert expected
    first = Engine(cfg, env(tick))
    got = first.process_many(events[:half])
    blob = pickle.dumps(first.snapshot())
    restored = Engine.from_snapshot(cfg, pickle.loads(blob), env(tick))
    got += run(restored, events[half:])
    assert ids(got) == ids(expected)
    rows = whole.drain_metrics()
    assert_same(restored.drain_metrics(), rows, "metrics")
    assert restored.stats == whole.stats
    if kind == "shedding" and mode != "off":  # the shedder's state really moved
        assert whole.stats.dropped > 0 or any(r.get("z", 1.0) < 1.0 for r in rows)


@pytest.mark.parametrize(("kind", "mode", "budget"), CASES, ids=IDS)
def test_snapshot_of_another_mode_is_refused(kind: str, mode: str, budget: str) -> None:
    table = SLACK_POLICIES if kind == "disorder" else SHEDDERS
    cfg = config(kind, mode, budget)
    for other in table:
        if other == mode:
            continue
        snap = factory(kind, other).create(config(kind, other, budget), env()).snapshot()
        with pytest.raises(OperatorStateError):
            factory(kind, mode).from_snapshot(cfg, snap, env())


@pytest.mark.parametrize(("kind", "mode", "budget"), CASES, ids=IDS)
def test_fresh_engine_flushes_to_nothing(kind: str, mode: str, budget: str) -> None:
    cfg = config(kind, mode, budget)
    eng = Engine(cfg, env())
    assert eng.flush() == []
    assert eng.stats.inputs == 0 and eng.stats.results == 0
    again = Engine.from_snapshot(cfg, pickle.loads(pickle.dumps(eng.snapshot())), env())
    assert again.flush() == []


class Counting:
    """A factory wrapper counting create / from_snapshot calls."""

    def __init__(self, inner: ShedderFactory) -> None:
        self.inner = inner
        self.created = 0
        self.restored = 0

    def create(self, config: EngineConfig, env: PluginEnv) -> Shedder:
        self.created += 1
        return self.inner.create(config, env)

    def from_snapshot(self, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> Shedder:
        self.restored += 1
        return self.inner.from_snapshot(config, snap, env)


@pytest.mark.parametrize("mode", list(SHEDDERS))
def test_engine_restores_its_shedder_exactly_once(mode: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config("shedding", mode)
    snap = Engine(cfg, env()).snapshot()
    counting = Counting(shedder_class(mode))

    def patched(name: str) -> ShedderFactory:
        assert name == mode
        return counting

    monkeypatch.setattr(engine_module, "shedder_class", patched)
    Engine.from_snapshot(cfg, snap, env())
    assert (counting.created, counting.restored) == (0, 1)

