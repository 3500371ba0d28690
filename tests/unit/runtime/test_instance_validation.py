"""JoinInstance with hostile input (no Spark): far-future and late tuples become dead
letters naming the rule with their coordinates and bytes, exact duplicates are dropped
and counted, and the valid results equal the oracle — one instance or ATR over several,
with state round trips between batches."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pandas as pd
import pytest

from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS, sensor_rows, sensor_spec

TOPICS = tuple(f"t.in.{s}" for s in SENSOR_STREAMS)
YEAR_MS = 365 * 24 * 3600 * 1000


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    f = batch_frame(rows)
    f["partition"] = [r.get("partition", 0) for r in rows]
    f["offset"] = [r.get("offset", i) for i, r in enumerate(rows)]
    f["raw"] = [f"raw-{r['stream']}-{r['seq']}".encode() for r in rows]
    f["dl_key"] = [r["stream"].encode() for r in rows]
    return f


def _hostile(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``rows`` with a far-future tuple first and in the middle, a late one and exact
    duplicates interleaved (arrival order kept); returns them and the expected reason
    prefix of each bad (stream, seq)."""
    out = list(rows)
    bad: dict[str, str] = {}
    first = dict(rows[0], seq=9_000, event_time=50 * YEAR_MS, arrival_time=50 * YEAR_MS)
    out.insert(0, first)
    bad["s1:9000" if first["stream"] == "s1" else f"{first['stream']}:9000"] = "future:"
    mid = len(out) // 2
    t = out[mid]["arrival_time"] + 3_600_000  # an hour ahead: one tuple per stream, which
    for k, name in enumerate(SENSOR_STREAMS):  # would join among themselves
        far = dict(out[mid], stream=name, seq=9_001, event_time=t + k, arrival_time=t + k,
                   value=0.5)
        out.insert(mid + k, far)
        bad[f"{name}:9001"] = "future:"
    end = out[-1]
    late = dict(end, seq=9_002, event_time=0, arrival_time=end["arrival_time"])
    out.append(late)
    bad[f"{late['stream']}:9002"] = "late:"
    for i in (30, 100, 170):  # a producer's retry: the same record again, a bit later
        out.insert(i + 5, dict(rows[i]))
    return out, bad


def _dead(frames: list[pd.DataFrame]) -> list[dict[str, Any]]:
    return [r for f in frames if "kind" in f.columns
            for r in f[f["kind"] == "deadletter"].to_dict("records")]


def _run(cfg: InstanceConfig, key: int, rows: list[dict[str, Any]], cuts: list[int]
         ) -> tuple[list[pd.DataFrame], JoinInstance]:
    """Batches split at ``cuts``, the state saved and read back between them as the
    processor's incremental layout does (header + pieces)."""
    inst = JoinInstance(cfg, key, time.perf_counter)
    out: list[pd.DataFrame] = []
    pieces: dict[Any, bytes] = {}
    bounds = [0, *sorted(set(cuts)), len(rows)]
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            out += inst.process(_frame(rows[lo:hi]))
        changes = inst.changes()
        pieces.update(changes.put)
        for gone in changes.removed:
            pieces.pop(gone, None)
        inst = JoinInstance.from_pieces(cfg, key, changes.header, pieces, time.perf_counter)
    out += inst.flush()
    return out, inst


def test_hostile_tuples_become_dead_letters_and_results_equal_oracle() -> None:
    valid = sensor_rows(3)
    sp = sensor_spec("band")
    rows, bad = _hostile(valid)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS, topics=TOPICS)
    out, inst = _run(cfg, 0, rows, [2, 5, 60, 150])
    assert_same_results(result_ids(out), oracle_ids(sp.join, valid))
    dead = _dead(out)
    got = {d["dl_raw"].decode().removeprefix("raw-").replace("-", ":"): d for d in dead}
    assert set(got) == set(bad)
    for key, prefix in bad.items():
        d = got[key]
        assert d["dl_reason"].startswith(prefix), d["dl_reason"]
        assert d["dl_topic"] == f"t.in.{key.split(':')[0]}"
        assert d["dl_key"] == key.split(":")[0].encode()
        assert d["dl_partition"] == 0 and d["dl_offset"] is not None
    assert inst.validator is not None and inst.validator.counts["duplicates"] == 3
    metrics = [json.loads(e) for f in out if "kind" in f.columns
               for e in f.loc[f["kind"] == "metric", "extra"].tolist()]
    assert metrics and metrics[-1]["validator_duplicates"] == 3.0


def test_without_validation_far_future_tuples_join_into_bogus_results() -> None:
    """The reason for the validator: unvalidated, the far-future tuples join among
    themselves into results no valid input has."""
    valid = sensor_rows(3)
    sp = sensor_spec("band")
    rows, _ = _hostile(valid)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS, topics=TOPICS, validate=False)
    out, _ = _run(cfg, 0, rows, [2, 5, 60, 150])
    assert set(result_ids(out)) - set(oracle_ids(sp.join, valid))


@pytest.mark.parametrize("groups", [1, 3])
def test_atr_instances_write_each_dead_letter_once(groups: int) -> None:
    valid = sensor_rows(5)
    sp = sensor_spec("band", "atr", groups)
    rows, bad = _hostile(valid)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS, topics=TOPICS)
    router = Router(RouterConfig.from_spec(sp))
    f = batch_frame(rows)
    idx, route = router.route_batch(f["stream_idx"].to_numpy(), f["event_time"].to_numpy(),
                                    None)
    results: list[str] = []
    dead: list[dict[str, Any]] = []
    for key in range(groups):
        mine = [rows[i] for i in idx[route == key].tolist()]
        out, _ = _run(cfg, key, mine, [len(mine) // 2])
        results += result_ids(out)
        dead += _dead(out)
    assert_same_results(results, oracle_ids(sp.join, valid))
    keys = [d["dl_raw"].decode().removeprefix("raw-").replace("-", ":") for d in dead]
    assert sorted(keys) == sorted(bad)
