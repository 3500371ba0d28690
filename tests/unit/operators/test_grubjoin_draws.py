"""GrubJoin's plans for a whole run (draws.py) against the same plans tuple by tuple.

With window shredding (ω > 0) and a probe share q < 1, ``plan_run`` must give exactly
the plans ``plan`` gives tuple by tuple for the same seed, leave the random generator in
the same state, and the engine's batch path must then give the same results and shedder
state as the per-tuple path.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.contract import PluginEnv
from pipeline.operators.engine.engine import Engine
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.shedding.costmodel import HarvestModel
from pipeline.operators.shedding.grubjoin.plans import harvest_plans
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events


def _shedder(m: int, shred_rate: float, seed: int) -> GrubJoinShedder:
    spec = make_spec(m, "band", [400, 300, 500, 600][:m], shedding={
        "mode": "grubjoin", "budget": "wall", "basic_window_ms": 100,
        "adapt_interval_ms": 500, "shred_rate": shred_rate, "seed": seed})
    return GrubJoinShedder(resolve_engine(spec), PluginEnv(clock=lambda: 0.0))


def _install(sh: GrubJoinShedder, z: float, share: float, rng: np.random.Generator) -> None:
    """A harvesting configuration in force, the throttle at ``z``, probe share ``share``."""
    m = sh.config.m
    scores = [[rng.random(sh.n_windows[l]) for l in range(m) if l != i] for i in range(m)]
    orders = np.array([[l for l in range(m) if l != i] for i in range(m)], np.int64)
    model = HarvestModel.build(np.ones(m), np.ones(m), np.full((m, m), 0.1), scores, orders)
    counts = np.array([[int(rng.integers(0, n + 1)) for n in model.max_counts()[i]]
                       for i in range(m)], np.int64)
    sh.plans = harvest_plans(model, counts, scores)
    sh.throttle.z = z
    sh.share = share


def _value(plan: ProbePlan | None) -> Any:
    return None if plan is None else (plan.order, plan.windows, plan.feedback)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4),
       shred_rate=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
       share=st.sampled_from([1.0, 0.3, 0.01]), z=st.sampled_from([1.0, 0.2, 0.001]),
       n=st.integers(0, 60), installed=st.booleans())
def test_plan_run_equals_plan_tuple_by_tuple(seed: int, m: int, shred_rate: float,
                                             share: float, z: float, n: int,
                                             installed: bool) -> None:
    one, many = _shedder(m, shred_rate, seed), _shedder(m, shred_rate, seed)
    rng = np.random.default_rng(seed)
    if installed:
        _install(one, z, share, np.random.default_rng(seed))
        _install(many, z, share, np.random.default_rng(seed))
    streams = rng.integers(0, m, size=n).astype(np.int64)
    want = [_value(one.plan(s)) for s in streams.tolist()]
    got = [_value(p) for p in many.plan_run(streams)]
    assert got == want
    assert one.rng.bit_generator.state == many.rng.bit_generator.state
    assert one.draws.fractions == many.draws.fractions
    if shred_rate == 1.0 and n and z >= 1.0:
        assert all(p is not None and p[2] for p in got)  # every tuple shreds


def test_no_shredding_keeps_one_draw_per_tuple() -> None:
    """ω = 0, q = 1: one uniform per tuple, as the paper's sampling step always drew."""
    sh = _shedder(3, 0.0, 7)
    ref = np.random.default_rng(7)
    sh.plan_run(np.zeros(25, np.int64))
    ref.random(25)
    assert sh.rng.bit_generator.state == ref.bit_generator.state


def _engine(seed: int) -> Engine:
    spec = make_spec(3, "band", [400, 300, 500], disorder={"mode": "fixed", "slack_ms": 40,
                                                           "interval_ms": 200},
                     shedding={"mode": "grubjoin", "budget": "wall", "basic_window_ms": 100,
                               "adapt_interval_ms": 500, "shred_rate": 0.3, "seed": seed})
    return Engine(resolve_engine(spec), PluginEnv(clock=lambda: 0.0, speedup=1.0))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_engine_batch_path_equals_tuple_path_with_shredding_and_share(seed: int) -> None:
    """Shredding (ω = 0.3), a probe share of 0.4 at z = 0.05 and 70 % admission (forced
    after the first adaptations): the run path gives the per-tuple path's results and
    shedder state."""
    dump = make_dump(seed=seed, m=3, n=200, max_delay=100)
    events = to_events(dump, make_spec(3, "band", [400, 300, 500]))
    one, many = _engine(seed), _engine(seed)
    cut = len(events) // 3
    want = [r.id for ev in events[:cut] for r in one.process(ev)]
    got = [r.id for r in many.process_many(events[:cut])]
    for eng in (one, many):
        sh = eng.shedder
        assert isinstance(sh, GrubJoinShedder)
        _install(sh, 0.05, 0.4, np.random.default_rng(seed))
        sh.admit_fraction[:] = 0.7  # random admission (admission.py) in force too
    want += [r.id for ev in events[cut:] for r in one.process(ev)] + [
        r.id for r in one.flush()]
    rng = np.random.default_rng(seed)
    cuts = sorted({cut, len(events), *rng.integers(cut, len(events), size=3).tolist()})
    for a, b in pairwise(cuts):
        got += [r.id for r in many.process_many(events[a:b])]
    got += [r.id for r in many.flush()]
    assert got == want
    a, b = one.shedder.snapshot(), many.shedder.snapshot()
    assert a["rng"] == b["rng"] and a["admit_rng"] == b["admit_rng"]
    assert a["stats"]["sums"].tolist() == b["stats"]["sums"].tolist()
    assert a["hist"] is not None and str(a["hist"]) == str(b["hist"])
    assert one.drain_metrics() == many.drain_metrics()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4),
       z=st.sampled_from([1.0, 0.5, 0.34, 0.2, 0.001]), n=st.integers(1, 200))
def test_shredding_plans_that_scan_the_same_windows_are_one_object(
        seed: int, m: int, z: float, n: int) -> None:
    """Shredding plans are shared by what they scan, not by the offset that chose them:
    two tuples get the same plan object iff their plans have equal direction, order and
    windows (so the batched join probes them as one group), and every plan's first
    partner scans ⌈z·n⌉ windows spread evenly from some offset (§V-B)."""
    sh = _shedder(m, 1.0, seed)
    sh.throttle.z = z
    streams = np.random.default_rng(seed).integers(0, m, n).astype(np.int64)
    plans = sh.plan_run(streams)
    by_value: dict[Any, int] = {}
    for s, p in zip(streams.tolist(), plans, strict=True):
        if p is None or not p.feedback:
            continue
        key = (s, _value(p))
        assert by_value.setdefault(key, id(p)) == id(p), "equal plans must be one object"
        assert p.order is not None and p.windows is not None
        n_first = sh.n_windows[p.order[0]]
        count = min(n_first, max(1, math.ceil(z * n_first)))
        first = p.windows[0]
        if count == n_first:
            assert first is None
            continue
        assert first is not None and len(first) == count
        assert any(first == tuple(sorted({(off + (v * n_first) // count) % n_first
                                          for v in range(count)}))
                   for off in range(n_first))
    distinct = {id(p) for p in plans if p is not None and p.feedback}
    assert len(distinct) == len(by_value)
