"""``[memory]`` in the Spark job's JoinInstance: bounded windows through state round trips,
evictions and window state in the metrics' ``extra``."""

from __future__ import annotations

import json
import time

import pandas as pd

from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.spec.model import parse_spec
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS, sensor_rows

BUDGET = 12


def test_instance_windows_stay_bounded_and_metrics_report_evictions() -> None:
    spec = parse_spec({
        "join": {"streams": list(SENSOR_STREAMS), "window_ms": 300, "predicate": "equi",
                 "attribute": "a1"},
        "disorder": {"mode": "fixed", "slack_ms": 400, "interval_ms": 100, "period_ms": 1000},
        "memory": {"mode": "prob", "max_tuples": BUDGET},
    })
    rows = sensor_rows(3, n=600)
    cfg = InstanceConfig.from_spec(spec, SENSOR_ATTRS)
    out: list[pd.DataFrame] = []
    blob = None
    for lo in range(0, len(rows), 100):
        inst = (JoinInstance(cfg, 0, time.perf_counter) if blob is None
                else JoinInstance.load(cfg, 0, blob, time.perf_counter))
        out += inst.process(batch_frame(rows[lo:lo + 100]))
        assert inst.engine.join.state_size() <= BUDGET
        blob = inst.dump()
    assert blob is not None
    out += JoinInstance.load(cfg, 0, blob, time.perf_counter).flush()
    got = result_ids(out)
    truth = oracle_ids(spec.join, rows)
    assert got and set(got) <= set(truth) and len(got) == len(set(got))  # precision 1
    metrics = [json.loads(x) for f in out if "kind" in f.columns
               for x in f.loc[f["kind"] == "metric", "extra"].tolist()]
    assert metrics
    last = metrics[-1]
    assert last["evictions"] > 0 and last["memory_budget"] == BUDGET
    assert all(m["window_state"] <= BUDGET for m in metrics)
    assert "kslack_tuples" in last
