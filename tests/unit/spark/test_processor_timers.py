"""The idle flush with few state calls (ARCHITECTURE §3): batches with input move the
flush deadline in the saved header and register a timer only when the key has none; a
timer that fires before the deadline is moved to it and flushes nothing; once the query
has been idle for ``idle_flush_ms`` the flush releases the rest, and the results equal
the oracle's. Every state and timer call is counted: one state read per batch, no timer
call while input flows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import pytest

from pipeline.runtime.instance import InstanceConfig
from pipeline.spark import processor as proc
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.state import FakeStateHandle, FakeStateStore
from pipeline.testing.streams import SENSOR_ATTRS, sensor_rows, sensor_spec

IDLE_MS = 3_000


class _Counted:
    """A state variable whose every call is counted as ``<name>.<method>``."""

    def __init__(self, inner: Any, name: str, calls: Counter[str]) -> None:
        self._inner, self._name, self._calls = inner, name, calls

    def __getattr__(self, method: str) -> Any:
        fn = getattr(self._inner, method)

        def call(*args: Any) -> Any:
            self._calls[f"{self._name}.{method}"] += 1
            return fn(*args)

        return call


class CountingHandle(FakeStateHandle):
    """:class:`FakeStateHandle` that keeps its timers and counts every call."""

    def __init__(self, store: FakeStateStore) -> None:
        super().__init__(store)
        self.calls: Counter[str] = Counter()
        self.timers: set[int] = set()

    def getListState(self, name: str, schema: Any) -> Any:  # noqa: N802 - Spark API
        return _Counted(super().getListState(name, schema), name, self.calls)

    def getValueState(self, name: str, schema: Any) -> Any:  # noqa: N802 - Spark API
        return _Counted(super().getValueState(name, schema), name, self.calls)

    def getMapState(self, name: str, key_schema: Any, value_schema: Any) -> Any:  # noqa: N802
        return _Counted(super().getMapState(name, key_schema, value_schema), name, self.calls)

    def listTimers(self) -> list[int]:  # noqa: N802 - Spark API
        self.calls["listTimers"] += 1
        return sorted(self.timers)

    def deleteTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        self.calls["deleteTimer"] += 1
        self.timers.discard(t)

    def registerTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        self.calls["registerTimer"] += 1
        self.timers.add(t)


class _Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> float:
        return self.ms / 1000.0


def _fire(p: JoinProcessor, handle: CountingHandle, now_ms: int) -> list[pd.DataFrame]:
    """Spark's timer phase: every timer due at ``now_ms`` fires, then is deleted."""
    out: list[pd.DataFrame] = []
    for t in sorted(x for x in handle.timers if x <= now_ms):
        out += p.handleExpiredTimer((0,), proc.TimerValues(now_ms, -1),
                                    proc.ExpiredTimerInfo(t))
        handle.timers.discard(t)
    return out


def test_batches_move_the_deadline_and_the_idle_query_flushes_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(proc, "WALL_CLOCK", clock)
    sp = sensor_spec("band")
    p = JoinProcessor(ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS),
                                      idle_flush_ms=IDLE_MS, run_token="timers"))
    store = FakeStateStore()
    handle = CountingHandle(store)
    p.init(handle)  # type: ignore[arg-type]
    rows = sensor_rows(3)
    got: list[str] = []
    batches = [rows[i:i + 20] for i in range(0, len(rows), 20)]
    for i, batch in enumerate(batches):
        now = clock.ms
        got += result_ids(p.handleInputRows(
            (0,), iter([batch_frame(batch)]), proc.TimerValues(now, -1)))
        fired = _fire(p, handle, now)
        assert not result_ids(fired), "no flush while input flows"
        store.commit()
        clock.ms += 1_000  # a 1 s trigger: the first timer comes due mid-stream
        if i == 0:
            assert handle.calls["registerTimer"] == 1
    n = len(batches)
    # while input flowed: one state read per batch, no list or delete, and the timer
    # moved once per idle_flush_ms at most
    assert handle.calls["version.get"] == n + handle.calls["registerTimer"] - 1
    assert handle.calls["listTimers"] == handle.calls["deleteTimer"] == 0
    assert 1 < handle.calls["registerTimer"] <= 1 + n * 1_000 // IDLE_MS
    assert len(handle.timers) == 1
    # idle: the next due timer flushes what K-slack still holds, once
    clock.ms += IDLE_MS
    flushed = _fire(p, handle, clock.ms)
    store.commit()
    assert result_ids(flushed)
    got += result_ids(flushed)
    assert not handle.timers and not _fire(p, handle, clock.ms + 10 * IDLE_MS)
    assert_same_results(got, oracle_ids(sp.join, rows))
    # input again after the flush: a new timer
    before = handle.calls["registerTimer"]
    list(p.handleInputRows((0,), iter([batch_frame(rows[:3])]),
                           proc.TimerValues(clock.ms, -1)))
    assert handle.calls["registerTimer"] == before + 1


def test_a_replayed_batch_moves_the_deadline_before_the_timer_phase(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a crash the state is read back (no live instance): a batch with input in
    the same micro-batch as a due timer keeps the timer from flushing."""
    clock = _Clock()
    monkeypatch.setattr(proc, "WALL_CLOCK", clock)
    sp = sensor_spec("band")
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    store = FakeStateStore()
    first = JoinProcessor(ProcessorConfig(cfg, idle_flush_ms=IDLE_MS))
    handle = CountingHandle(store)
    first.init(handle)  # type: ignore[arg-type]
    rows = sensor_rows(4)
    list(first.handleInputRows((0,), iter([batch_frame(rows[:60])]),
                               proc.TimerValues(clock.ms, -1)))
    store.commit()
    clock.ms += 5 * IDLE_MS  # the query was down; the timer is long due
    again = JoinProcessor(ProcessorConfig(cfg, idle_flush_ms=IDLE_MS))
    again.init(handle)  # type: ignore[arg-type]
    list(again.handleInputRows((0,), iter([batch_frame(rows[60:120])]),
                               proc.TimerValues(clock.ms, -1)))
    assert not result_ids(_fire(again, handle, clock.ms))  # moved, not flushed
    assert handle.timers == {clock.ms + IDLE_MS}
