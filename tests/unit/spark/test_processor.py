"""JoinProcessor's state handling with an in-memory, transactional stand-in for Spark's
state handle: the worker-side live-instance cache must never resume a state the store
did not commit (a batch that failed is replayed from the stored blob)."""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd
import pytest

from pipeline.quality.oracle import oracle
from pipeline.spark import processor as proc
from pipeline.spark.instance import InstanceConfig, JoinInstance
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from tests.unit.spark.test_instance import ATTRS, frame, records, result_ids, spec


class _Store:
    """Committed and staged values of every state variable (one micro-batch = one txn)."""

    def __init__(self) -> None:
        self.committed: dict[str, Any] = {}
        self.staged: dict[str, Any] = {}

    def read(self, name: str) -> Any:
        return self.staged.get(name, self.committed.get(name))

    def commit(self) -> None:
        self.committed.update(self.staged)
        self.staged = {}

    def rollback(self) -> None:
        self.staged = {}


class _List:
    def __init__(self, store: _Store, name: str) -> None:
        self.store, self.name = store, name

    def exists(self) -> bool:
        return self.store.read(self.name) is not None

    def get(self) -> Any:
        return iter(self.store.read(self.name) or [])

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.store.staged[self.name] = list(rows)


class _Value(_List):
    def get(self) -> Any:
        return self.store.read(self.name)

    def update(self, row: tuple[Any, ...]) -> None:
        self.store.staged[self.name] = row


class _Handle:
    def __init__(self, store: _Store) -> None:
        self.store = store

    def getListState(self, name: str, schema: Any) -> _List:  # noqa: N802 - Spark API
        return _List(self.store, name)

    def getValueState(self, name: str, schema: Any) -> _Value:  # noqa: N802 - Spark API
        return _Value(self.store, name)

    def listTimers(self) -> list[int]:  # noqa: N802 - Spark API
        return []

    def deleteTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None

    def registerTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None


def _ids(out: list[pd.DataFrame]) -> list[str]:
    return result_ids([f for f in out if "kind" in f.columns])


@pytest.mark.parametrize("fail_batch", [None, 1, 3])
def test_failed_batches_replay_from_the_committed_state(
        monkeypatch: pytest.MonkeyPatch, fail_batch: int | None) -> None:
    rows = records(11)
    sp = spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, ATTRS), run_token=f"t{fail_batch}")
    store = _Store()
    p = JoinProcessor(cfg)
    p.init(_Handle(store))  # type: ignore[arg-type]
    real = JoinInstance.process
    got: list[str] = []
    bounds = [0, 40, 90, 130, 180, len(rows)]
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        batch = frame(rows[lo:hi])
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
    assert sorted(got) == sorted(r.id for r in oracle(sp.join, rows))
    assert (cfg.run_token, 0) in proc._LIVE  # the cache was in use


def test_a_stale_live_instance_is_not_resumed() -> None:
    sp = spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, ATTRS), run_token="stale")
    store = _Store()
    p = JoinProcessor(cfg)
    p.init(_Handle(store))  # type: ignore[arg-type]
    list(p.handleInputRows((0,), iter([frame(records(3)[:50])]), None))  # type: ignore[arg-type]
    store.commit()
    version, live = proc._LIVE[("stale", 0)]
    assert version == 1 and p._load(0) == (live, 1)  # resumed: same version
    proc._LIVE[("stale", 0)] = (version + 5, live)  # a version the store never committed
    assert p._load(0)[0] is not live
