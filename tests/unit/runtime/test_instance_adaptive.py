"""Join instances under adaptive ATR decided per micro-batch (the Spark job's data path
without Spark): each batch routed by two tasks under the batch's state, each key's
instance owning results by the same state, the keys' usage fed back — together the
oracle's results, each once (Gu et al. §2.2–2.6, ARCHITECTURE §6)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pipeline.diffusion.batches import BatchConfig, BatchRouting, observe_task
from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.spec.model import parse_spec
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS, sensor_rows


def _spec(groups: int) -> Any:
    return parse_spec({
        "join": {"streams": list(SENSOR_STREAMS), "window_ms": 300, "predicate": "band",
                 "attribute": "value", "epsilon": 0.4},
        "disorder": {"mode": "fixed", "slack_ms": 400},
        "job": {"routing": "atr", "groups": groups, "segment_ms": 200,
                "segment_keys": "least-loaded", "adapt_master": True,
                "adapt_interval_ms": 400, "switch_margin": 0.0, "adapt_segment": True,
                "segment_min_ms": 100, "segment_max_ms": 400, "segment_step_ms": 100}})


def _copy(state: BatchRouting) -> BatchRouting:
    return BatchRouting.from_snapshot(state.snapshot())


@pytest.mark.parametrize("groups", [2, 3])
def test_adaptive_instances_together_equal_oracle_once(groups: int) -> None:
    rows = sensor_rows(5, n=600)
    sp = _spec(groups)
    bcfg = BatchConfig.from_spec(sp)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    stream_of = {name: i for i, name in enumerate(SENSOR_STREAMS)}
    blobs: dict[int, bytes] = {}
    got: list[str] = []
    state = BatchRouting.initial(bcfg)
    for lo in range(0, len(rows), 60):  # micro-batches in arrival order
        batch = rows[lo:lo + 60]
        mine: dict[int, list[dict[str, Any]]] = {k: [] for k in range(groups)}
        observed = []
        for part in (0, 1):  # two routing tasks, each on its own copy of the state
            task = batch[part::2]
            own = _copy(state)
            s = [stream_of[r["stream"]] for r in task]
            t = [r["event_time"] for r in task]
            idx, keys = own.route(s, t)
            for i, k in zip(idx.tolist(), keys.tolist(), strict=True):
                mine[k].append(task[i])
            horizon = own.router.log.horizon if own.router is not None else None
            observed.append(observe_task(bcfg, own, s, t, horizon))
        usage = {}
        for k in range(groups):
            inst = (JoinInstance.load(cfg, k, blobs[k], time.perf_counter) if k in blobs
                    else JoinInstance(cfg, k, time.perf_counter))
            inst.batch_routing = _copy(state)
            part_rows = sorted(mine[k], key=lambda r: r["arrival_time"])
            if part_rows:
                got += result_ids(inst.process(batch_frame(part_rows)))
            usage[k] = inst.usage()
            blobs[k] = inst.dump()
        state = state.step(observed, usage)
    for k in range(groups):
        inst = JoinInstance.load(cfg, k, blobs[k], time.perf_counter)
        inst.batch_routing = _copy(state)
        got += result_ids(inst.flush())
    assert state.router is not None and state.base_end is not None
    assert_same_results(got, oracle_ids(sp.join, rows))  # none missed, none twice
