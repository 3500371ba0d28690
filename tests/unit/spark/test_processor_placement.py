"""The processor behind spread route keys (ARCHITECTURE §6): a grouping key that is not
the instance number still runs that instance — its ATR ownership, its ``instance`` in the
metrics and results — so the routed instances together give the oracle's results once,
as with the instance numbers as keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.diffusion.placement import identity_keys, spread_keys
from pipeline.diffusion.routing import Router
from pipeline.runtime.instance import InstanceConfig
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.state import FakeStateHandle, FakeStateStore
from pipeline.testing.streams import SENSOR_ATTRS, sensor_rows, sensor_spec


@pytest.mark.parametrize("keys", [spread_keys(3, 3), identity_keys(3), spread_keys(3, 8)])
def test_spread_keys_run_their_instances(keys: tuple[int, ...]) -> None:
    sp = sensor_spec("band", routing="atr", groups=3)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    router = Router(cfg.router)
    rows = sensor_rows(7)
    frame = batch_frame(rows)
    idx, inst = router.route_batch(frame["stream_idx"].to_numpy(np.int64),
                                   frame["event_time"].to_numpy(np.int64))
    got: list[str] = []
    instances: set[str] = set()
    for i, key in enumerate(keys):
        p = JoinProcessor(ProcessorConfig(cfg, run_token=f"placement{keys}"))
        store = FakeStateStore()
        p.init(FakeStateHandle(store))  # type: ignore[arg-type]
        mine = frame.iloc[idx[inst == i]].reset_index(drop=True)
        out: list[pd.DataFrame] = []
        for lo in range(0, len(mine), 50):
            out += p.handleInputRows((key,), iter([mine.iloc[lo:lo + 50]]), None)  # type: ignore[arg-type]
            store.commit()
        out += p.handleExpiredTimer((key,), None, None)  # type: ignore[arg-type]
        got += result_ids(out)
        instances |= {str(v) for f in out for v in f["instance"].dropna()}
    assert instances == {"0", "1", "2"}
    assert_same_results(got, oracle_ids(sp.join, rows))
