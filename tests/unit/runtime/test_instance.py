"""JoinInstance (the Spark processor's runtime, without Spark) against the oracle.

The Spark job hands each route key its rows micro-batch by micro-batch and keeps the
engine between batches only as pickled state bytes; these tests replay exactly that —
random batch boundaries, dump/load between batches, ATR/hash routing over G instances —
and require the oracle's result set, each result exactly once (ARCHITECTURE §4, §6).
"""

from __future__ import annotations

import itertools
import json
import pickle
import time
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.runtime.frames import TICK_STREAM, dead_letter_frame, output_columns
from pipeline.runtime.instance import LAG_TARGET_SHARE, InstanceConfig, JoinInstance
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec, parse_spec
from pipeline.testing.compare import assert_no_invented, assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS, sensor_rows, sensor_spec


def run_batches(sp: Spec, key: int, rows: list[dict[str, Any]], cuts: list[int]
                ) -> list[pd.DataFrame]:
    """Feed ``rows`` in batches split at ``cuts``, through dump/load like the state store."""
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    blob: bytes | None = None
    out: list[pd.DataFrame] = []
    bounds = [0, *sorted(set(cuts)), len(rows)]
    for lo, hi in itertools.pairwise(bounds):
        inst = (JoinInstance(cfg, key, time.perf_counter) if blob is None
                else JoinInstance.load(cfg, key, blob, time.perf_counter))
        if hi > lo:
            out += inst.process(batch_frame(rows[lo:hi]))
        blob = inst.dump()
    assert blob is not None
    out += JoinInstance.load(cfg, key, blob, time.perf_counter).flush()
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(0, 240), max_size=6))
def test_batches_with_state_round_trips_equal_oracle(seed: int, cuts: list[int]) -> None:
    rows = sensor_rows(seed)
    sp = sensor_spec("band")
    got = result_ids(run_batches(sp, 0, rows, cuts))
    assert_same_results(got, oracle_ids(sp.join, rows))


@pytest.mark.parametrize(("predicate", "routing", "groups"), [
    ("band", "atr", 1), ("band", "atr", 3), ("equi", "hash", 3), ("equi", "atr", 4),
])
def test_routed_instances_together_equal_oracle_once(predicate: str, routing: str,
                                                     groups: int) -> None:
    rows = sensor_rows(7)
    sp = sensor_spec(predicate, routing, groups)
    truth = oracle_ids(sp.join, rows)
    assert truth
    router = Router(RouterConfig.from_spec(sp))
    f = batch_frame(rows)
    keys = f["a1"].to_numpy() if routing == "hash" else None
    idx, route = router.route_batch(f["stream_idx"].to_numpy(), f["event_time"].to_numpy(), keys)
    got: list[str] = []
    for key in range(groups):
        mine = [rows[i] for i in idx[route == key].tolist()]
        got += result_ids(run_batches(sp, key, mine, [len(mine) // 2]))
    assert_same_results(got, truth)  # none missed, none produced twice


def test_tick_rows_are_not_events() -> None:
    sp = sensor_spec("band")
    inst = JoinInstance(InstanceConfig.from_spec(sp, SENSOR_ATTRS), 0, time.perf_counter)
    tick = batch_frame(sensor_rows(1)[:3])
    tick["stream_idx"] = TICK_STREAM
    assert inst.events(tick) == []
    assert inst.engine.stats.inputs == 0


def test_output_frames_have_the_declared_columns() -> None:
    rows = sensor_rows(3)
    out = run_batches(sensor_spec("band", disorder="quality"), 0, rows, [100])
    kinds = {k for f in out for k in f["kind"]}
    assert kinds == {"result", "metric"}
    for f in out:
        assert tuple(f.columns) == output_columns(3)
    metrics = pd.concat([f for f in out if (f["kind"] == "metric").all()])
    assert (metrics["instance"] == "0").all()
    assert metrics["k_ms"].notna().all() and (metrics["recall_target"] == 0.99).all()
    assert (metrics["state_size"] >= 0).all()


def test_dead_letter_frame_passes_bytes_through() -> None:
    rows = pd.DataFrame({"dl_key": [b"k1", None], "dl_value": [b"\x00\x01", b"\xff"]})
    out = dead_letter_frame(rows, 3)
    assert tuple(out.columns) == output_columns(3)
    assert out["kind"].tolist() == ["deadletter", "deadletter"]
    assert out["dl_value"].tolist() == [b"\x00\x01", b"\xff"]
    assert out["dl_key"].tolist() == [b"k1", None]


def test_unreadable_state_is_an_operator_state_error() -> None:
    cfg = InstanceConfig.from_spec(sensor_spec("band"), SENSOR_ATTRS)
    with pytest.raises(OperatorStateError, match="instance 2: unreadable state blob of 5"):
        JoinInstance.load(cfg, 2, b"junk!", time.perf_counter)


def test_job_budget_virtual_needs_a_capacity() -> None:
    sp = parse_spec({"join": {"streams": ["a", "b"], "window_ms": 10, "predicate": "band",
                              "attribute": "value"},
                     "shedding": {"mode": "grubjoin", "budget": "wall"},
                     "job": {"budget": "virtual"}})
    with pytest.raises(ConfigError, match=r"shedding\.capacity: required"):
        InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    wall = sp.model_copy(update={"job": sp.job.model_copy(update={"budget": "wall"})})
    assert InstanceConfig.from_spec(wall, SENSOR_ATTRS).engine.shedding.budget == "wall"


def test_instance_config_carries_the_resolved_engine_and_job_facts() -> None:
    """The workers get the resolved engine config (``[job] budget`` applied) and the
    few job facts they need, pickled; no spec."""
    sp = wall_budget_spec(speedup=3.0, trigger_ms=700)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    assert cfg.engine == resolve_engine(sp, budget="wall")
    assert (cfg.trigger_ms, cfg.speedup, cfg.attributes) == (700, 3.0, SENSOR_ATTRS)
    assert cfg.router == RouterConfig.from_spec(sp)
    assert pickle.loads(pickle.dumps(cfg)) == cfg


@pytest.mark.parametrize("predicate", ["band", "equi"])
def test_join_index_reaches_the_spark_instance(predicate: str) -> None:
    """``[join] index = true`` is not lost on the way to the workers: the instance's
    join runs the per-basic-window indexes, also after a state round trip, and still
    equals the oracle."""
    base = sensor_spec(predicate)
    sp = base.model_copy(update={"join": base.join.model_copy(update={"index": True})})
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    assert cfg.engine.index
    inst = JoinInstance(cfg, 0, time.perf_counter)
    assert inst.engine.join.config.index
    back = JoinInstance.load(cfg, 0, inst.dump(), time.perf_counter)
    assert back.engine.join.config.index
    rows = sensor_rows(11)
    got = result_ids(run_batches(sp, 0, rows, [80, 160]))
    assert_same_results(got, oracle_ids(sp.join, rows))


class FakeWall:
    """An injected wall clock starting at ``start`` seconds: each reading advances it by
    ``step`` (1 ms: the budget sees busy time; 0: a stopped clock, no CPU time at all)."""

    def __init__(self, start: float = 0.0, step: float = 0.001) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def wall_budget_spec(speedup: float, trigger_ms: int = 1000) -> Spec:
    """The 3-way band join with GrubJoin shedding on the wall budget."""
    return parse_spec({
        "join": {"streams": list(SENSOR_STREAMS), "window_ms": 300, "predicate": "band",
                 "attribute": "value", "epsilon": 0.4},
        "disorder": {"mode": "fixed", "slack_ms": 400},
        "shedding": {"mode": "grubjoin", "basic_window_ms": 100, "adapt_interval_ms": 500,
                     "budget": "wall"},
        "job": {"budget": "wall", "speedup": speedup, "trigger_ms": trigger_ms},
    })


def test_grubjoin_wall_budget_metrics_survive_state_round_trips() -> None:
    sp = wall_budget_spec(speedup=4.0)
    cfg = InstanceConfig.from_spec(sp, SENSOR_ATTRS)
    assert cfg.engine.shedding.budget == "wall"
    clock = FakeWall()
    rows = sensor_rows(9, n=600)
    inst = JoinInstance(cfg, 1, clock)
    out: list[pd.DataFrame] = []
    for lo in range(0, len(rows), 150):
        out += inst.process(batch_frame(rows[lo:lo + 150]))
        inst = JoinInstance.load(cfg, 1, inst.dump(), clock)
        assert inst.engine.shedder.snapshot()["mode"] == "grubjoin"
    out += inst.flush()
    metrics = pd.concat([f for f in out if (f["kind"] == "metric").all()])
    assert len(metrics) >= 3
    assert metrics["z"].between(0.0, 1.0).all()
    assert (metrics["instance"] == "1").all()
    fractions = [json.loads(v) for v in metrics["harvest_fractions"]]
    assert all(len(f) == 3 * 2 and all(0.0 <= x <= 1.0 for x in f) for f in fractions)
    # shedding may lose results, never invent them
    assert_no_invented(result_ids(out), oracle_ids(sp.join, rows), once=True)


def test_metric_rates_are_per_second_of_stream_time() -> None:
    rows = sensor_rows(4, n=600)
    sp = sensor_spec("band", disorder="quality")
    inst = JoinInstance(InstanceConfig.from_spec(sp, SENSOR_ATTRS), 0, time.perf_counter)
    out: list[pd.DataFrame] = []
    for lo in range(0, len(rows), 100):
        out += inst.process(batch_frame(rows[lo:lo + 100]))
    metrics = pd.concat([f for f in out if (f["kind"] == "metric").all()])
    later = metrics[metrics["time"] > metrics["time"].min()]
    assert len(later) >= 2
    # 3 streams x 40 tuples/s of stream time (25 ms apart); averaged per drained span
    assert later["rate_in"].between(60.0, 180.0).all(), later["rate_in"].tolist()
    assert (later["rate_out"] >= 0).all()


@pytest.mark.parametrize(("age_s", "expect_cut"), [(0.1, False), (8.0, True)])
def test_wall_budget_lag_guard_cuts_z_when_input_is_stale(age_s: float,
                                                         expect_cut: bool) -> None:
    """The freshest input's Kafka timestamp is ``age_s`` old when the batch ends; with a
    1 s trigger the lag target is LAG_TARGET_SHARE × 1 s, so 8 s of lag caps β (and z)
    at that target over 8 s."""
    cfg = InstanceConfig.from_spec(wall_budget_spec(speedup=1.0, trigger_ms=1000), SENSOR_ATTRS)
    wall = FakeWall(start=1_000_000.0, step=0.0)  # stopped: the CPU accounting sees no load
    inst = JoinInstance(cfg, 0, wall)
    rows = sensor_rows(5, n=600)
    z_after = []
    for lo in range(0, len(rows), 100):
        f = batch_frame(rows[lo:lo + 100])
        f["kafka_ms"] = wall.now * 1000.0 - age_s * 1000.0
        out = inst.process(f)
        z_after += [float(v) for fr in out if (fr["kind"] == "metric").all()
                    for v in fr["z"]]
    assert z_after, "no adaptation step ran"
    if expect_cut:
        assert min(z_after) <= LAG_TARGET_SHARE * 1.0 / age_s + 1e-9
    else:
        assert min(z_after) == 1.0  # no CPU time, fresh input: never throttled


@pytest.mark.parametrize("mode", ["taildrop", "grubjoin"])
def test_a_batch_behind_its_input_sheds_its_own_tail(mode: str) -> None:
    """One micro-batch, the same rows and the same clock: when its freshest record is
    already 30 lag targets old as it starts, the wall queue stretches its service times
    by that lag while the batch runs (WallQueue.stretch_at), so it admits fewer of the
    batch's tuples than when the record is fresh; the budget forgets the batch once it
    ends."""
    sp = parse_spec({
        "join": {"streams": list(SENSOR_STREAMS), "window_ms": 300, "predicate": "band",
                 "attribute": "value", "epsilon": 0.4},
        "disorder": {"mode": "fixed", "slack_ms": 400},
        "shedding": {"mode": mode, "basic_window_ms": 100, "adapt_interval_ms": 500,
                     "budget": "wall", "queue_ms": 400, "batch_lag": True},
        "job": {"budget": "wall", "speedup": 1.0, "trigger_ms": 60_000},
    })
    rows = sensor_rows(9, n=900)

    def dropped(age_s: float) -> int:
        wall = FakeWall(start=1_000_000.0, step=0.02)
        inst = JoinInstance(InstanceConfig.from_spec(sp, SENSOR_ATTRS), 0, wall)
        f = batch_frame(rows)
        f["kafka_ms"] = wall.now * 1000.0 - age_s * 1000.0
        inst.process(f)
        budget = inst.engine.shedder.wall_budget()
        assert budget is not None and budget.batch_lag(wall.now) is None
        return int(inst.engine.stats.dropped)

    fresh, late = dropped(0.0), dropped(1_800.0)
    assert late > fresh and late > 0


@pytest.mark.parametrize("disorder", ["fixed", "quality"])
def test_phase_profile_accounts_for_every_tick_of_a_batch(disorder: str) -> None:
    """With a profile attached, time lands only in the phases of PHASES (the adaptation
    steps in their own), never negative, with probing and K-slack seen, two batches
    counted and at most the input's tuples admitted."""
    from pipeline.core.profile import PHASES, PhaseProfile

    ticks = itertools.count()

    def timer() -> float:
        return float(next(ticks))

    sp = sensor_spec("band", disorder=disorder)
    inst = JoinInstance(InstanceConfig.from_spec(sp, SENSOR_ATTRS), 0, timer)
    profile = PhaseProfile(timer)
    inst.attach_profile(profile)
    rows = sensor_rows(3)
    for lo, hi in ((0, 120), (120, 240)):
        inst.process(batch_frame(rows[lo:hi]))
        inst.changes()
    assert set(profile.seconds) == set(PHASES)
    assert all(v >= 0 for v in profile.seconds.values())
    assert profile.batches == 2
    assert 0 < profile.tuples <= len(rows)
    assert profile.seconds["probing"] > 0 and profile.seconds["kslack_sync"] > 0
