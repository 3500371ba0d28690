"""JoinProcessor's state handling with an in-memory, transactional stand-in for Spark's
state handle: the worker-side live-instance cache must never resume a state the store
did not commit (a batch that failed is replayed from the stored blob)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from pipeline.spark import processor as proc
from pipeline.spark.instance import InstanceConfig, JoinInstance
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.state import FakeStateHandle, FakeStateStore
from pipeline.testing.streams import SENSOR_ATTRS, sensor_rows, sensor_spec


def _ids(out: list[pd.DataFrame]) -> list[str]:
    return result_ids([f for f in out if "kind" in f.columns])


@pytest.mark.parametrize("fail_batch", [None, 1, 3])
def test_failed_batches_replay_from_the_committed_state(
        monkeypatch: pytest.MonkeyPatch, fail_batch: int | None) -> None:
    rows = sensor_rows(11)
    sp = sensor_spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS), run_token=f"t{fail_batch}")
    store = FakeStateStore()
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(store))  # type: ignore[arg-type]
    real = JoinInstance.process
    got: list[str] = []
    bounds = [0, 40, 90, 130, 180, len(rows)]
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        batch = batch_frame(rows[lo:hi])
        if i == fail_batch:  # the instance mutates, then the task dies before its save
            def boom(self: JoinInstance, f: pd.DataFrame) -> list[pd.DataFrame]:
                real(self, f)
                raise RuntimeError("task lost")
            monkeypatch.setattr(JoinInstance, "process", boom)
            with pytest.raises(RuntimeError):
                list(p.handleInputRows((0,), iter([batch]), None))  # type: ignore[arg-type]
            store.rollback()
            monkeypatch.setattr(JoinInstance, "process", real)
        got += _ids(list(p.handleInputRows((0,), iter([batch]), None)))  # type: ignore[arg-type]
        store.commit()
    got += _ids(list(p.handleExpiredTimer((0,), None, None)))  # type: ignore[arg-type]
    assert_same_results(got, oracle_ids(sp.join, rows))
    assert (cfg.run_token, 0) in proc._LIVE  # the cache was in use


def test_a_stale_live_instance_is_not_resumed() -> None:
    sp = sensor_spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS), run_token="stale")
    store = FakeStateStore()
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(store))  # type: ignore[arg-type]
    list(p.handleInputRows((0,), iter([batch_frame(sensor_rows(3)[:50])]), None))  # type: ignore[arg-type]
    store.commit()
    version, live = proc._LIVE[("stale", 0)]
    assert version == 1 and p._load(0) == (live, 1)  # resumed: same version
    proc._LIVE[("stale", 0)] = (version + 5, live)  # a version the store never committed
    assert p._load(0)[0] is not live
