"""The fair baselines: ``taildrop`` (bounded input queue), ``randomdrop-static`` (the
paper's RandomDrop: keep probabilities fixed once) and the wall clock's queue bounded
in waiting time (:class:`~pipeline.operators.budget.virtual_cpu.WallQueue`).

The static drop's cost formula is checked against a brute-force count: every subset of
a small input is joined by the real MWayJoin, and the probability-weighted comparisons
per join position equal p^(j+1) × the full join's (module docstring of
``randomdrop_static``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.budget.factory import restore_budget as restore_queue_budget
from pipeline.operators.budget.virtual_cpu import VirtualCpu, VirtualCpuConfig
from pipeline.operators.budget.wall import WallQueue, WallQueueConfig
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.events import Event
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.shedding.baselines.randomdrop import keep_probabilities, thinned_cost
from pipeline.operators.shedding.baselines.randomdrop_static import (
    StaticRandomDropShedder,
    cost_coefficients,
    polynomial_cost,
    uniform_keep,
)
from pipeline.operators.shedding.baselines.taildrop import TailDropShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.costmodel import random_model
from pipeline.testing.streams import make_spec

from .test_randomdrop import whole_windows


class StepClock:
    """A wall clock whose readings advance by a programmable step."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.step = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def config(mode: str, budget: str = "virtual", **shedding: Any) -> EngineConfig:
    sh = {"mode": mode, "budget": budget, "capacity": 2_000.0, "basic_window_ms": 100,
          "adapt_interval_ms": 500, "shred_rate": 0.5, "utilization": 0.9, **shedding}
    return resolve_engine(make_spec(3, "band", [400, 400, 400], shedding=sh))


# ---------------------------------------------------------------- tail drop


def test_taildrop_on_the_virtual_cpu_is_the_bounded_queue_alone() -> None:
    cfg = config("taildrop", queue=3)
    shedder = TailDropShedder.create(cfg, PluginEnv())
    cpu = VirtualCpu(VirtualCpuConfig(2_000.0, 3))
    rng = np.random.default_rng(4)
    for t in range(0, 3_000, 7):
        ev = Event(int(rng.integers(3)), t, t, t)
        ok = shedder.admit(ev, t)
        assert ok == cpu.admit(t)
        assert shedder.plan(ev.stream) is None  # full scans, always
        if ok:
            cost = float(rng.integers(1, 200))
            shedder.charge(cost, t)
            cpu.charge(cost, t)
    assert cpu.dropped > 0
    row = shedder.maybe_adapt(3_000)
    assert row is not None and row["mode"] == "taildrop" and row["queue_drops"] == cpu.dropped


def test_wall_queue_drops_only_beyond_its_backlog_bound() -> None:
    clock = StepClock()
    queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=0.5, bound_ms=100.0), clock)
    # each tuple takes 10 ms of wall time = 20 ms of service at utilization 0.5; one
    # arrival every 10 ms: the backlog grows by 10 ms per tuple until it passes 100 ms
    decisions = []
    for t in range(0, 400, 10):
        ok = queue.admit(t)
        decisions.append(ok)
        if ok:
            clock.step = 0.010
            queue.charge(1.0, t)
            clock.step = 0.0
    assert decisions[:10] == [True] * 10
    assert not all(decisions) and queue.dropped == decisions.count(False)
    assert queue.backlog_ms() <= 100.0 + 20.0
    reading = queue.measure(400, 400)
    assert reading.dropped == queue.dropped and reading.pushed == len(decisions)
    assert reading.consumed == decisions.count(True)


def test_wall_queue_keeps_up_when_the_work_fits_and_lag_stretches_it() -> None:
    clock = StepClock()
    queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=1.0, bound_ms=50.0), clock)
    for t in range(0, 1_000, 10):
        assert queue.admit(t)
        clock.step = 0.005  # half of the inter-arrival time
        queue.charge(1.0, t)
        clock.step = 0.0
    assert queue.dropped == 0
    queue.observe_batch(0.0, 4.0)  # a batch ended 4 lag targets behind: service × 4
    kept = 0
    for t in range(1_000, 2_000, 10):
        if queue.admit(t):
            kept += 1
            clock.step = 0.005
            queue.charge(1.0, t)
            clock.step = 0.0
    assert 0 < kept < 100


def _serve_one(queue: WallQueue, clock: StepClock, t: int, seconds: float) -> float:
    """busy_until's growth from one tuple admitted at ``t`` that takes ``seconds``."""
    before = max(queue.busy_until, float(t))
    assert queue.admit(t)
    clock.step = seconds
    queue.charge(1.0, t)
    clock.step = 0.0
    return queue.busy_until - before


@pytest.mark.parametrize(("prior_lag", "age_s", "batch_lag", "stretch"), [
    (None, 4.0, True, 1.0),   # the running batch is on time (age 4 s < 8 s): no stretch
    (None, 24.0, True, 3.0),  # 24 s behind an 8 s target: service times × 3
    (None, 24.0, False, 1.0),  # [shedding] batch_lag = false: the last batch's lag only
    (5.0, 24.0, True, 5.0),   # the last batch's lag is the larger: it stays
    (2.0, 8.0, True, 2.0),
    (2.0, 24.0, False, 2.0),
])
def test_wall_queue_stretches_by_the_running_batchs_own_lag(
        prior_lag: float | None, age_s: float, batch_lag: bool, stretch: float) -> None:
    clock = StepClock(start=1_000.0)
    queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=0.5, bound_ms=1e9,
                                      batch_lag=batch_lag), clock)
    if prior_lag is not None:
        queue.observe_batch(0.0, prior_lag)
    # the freshest record was appended age_s before the 0.2 s tuple is charged
    queue.begin_batch((1_000.0 + 0.2 - age_s) * 1000.0, 8_000.0)
    grown = _serve_one(queue, clock, 0, 0.2)
    assert grown == pytest.approx(0.2 * 1000.0 / 0.5 * stretch)
    queue.observe_batch(0.0, None)  # the batch ended: its own lag no longer applies
    assert queue.batch_lag(clock()) is None
    clock.now += 100.0
    assert _serve_one(queue, clock, 10_000, 0.2) == pytest.approx(0.2 * 1000.0 / 0.5)


def test_wall_queue_batch_lag_sheds_a_late_batchs_tail_and_restores() -> None:
    """A batch that runs behind its input drops more of its own tail than one on time,
    and a snapshot taken mid-batch restores to the same decisions."""
    def drive(late: bool) -> tuple[int, WallQueue, StepClock]:
        clock = StepClock(start=500.0)
        queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=1.0, bound_ms=50.0,
                                          batch_lag=True), clock)
        fresh = (500.0 - (30.0 if late else 0.0)) * 1000.0
        queue.begin_batch(fresh, 8_000.0)
        kept = 0
        for t in range(0, 2_000, 10):
            if queue.admit(t):
                kept += 1
                clock.step = 0.008  # 0.8 of the inter-arrival time
                queue.charge(1.0, t)
                clock.step = 0.0
        return kept, queue, clock
    on_time, _, _ = drive(False)
    late, queue, clock = drive(True)
    assert on_time == 200 and late < on_time / 2
    snap = queue.snapshot()
    again = WallQueue.from_queue_snapshot(queue.queue_config, clock, snap)
    assert again.snapshot() == snap
    assert again.stretch_at(clock.now) == queue.stretch_at(clock.now) > 3.0


@pytest.mark.parametrize("serve_overhead", [True, False])
def test_wall_queue_serves_a_batchs_overhead_only_when_asked(serve_overhead: bool) -> None:
    """A batch's 2 s outside the join: served as 2 s × 1000 / utilization of backlog,
    or (``serve_overhead`` off, GrubJoin's ``queue_overhead = false``) left to the
    throttle, the queue's backlog untouched."""
    clock = StepClock()
    queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=0.5, bound_ms=1e9,
                                      serve_overhead=serve_overhead), clock)
    _serve_one(queue, clock, 0, 0.1)
    before = queue.busy_until
    queue.observe_batch(2.0, None)
    assert queue.busy_until - before == pytest.approx(4_000.0 if serve_overhead else 0.0)
    assert queue.measure(10, 1000).overhead == pytest.approx(2.0)  # spent either way


def test_wall_queue_restores_exactly_under_a_new_clock() -> None:
    def drive(q: WallQueue, clock: StepClock, ts: range) -> list[bool]:
        out = []
        for t in ts:
            ok = q.admit(t)
            out.append(ok)
            if ok:
                clock.step = 0.007 + (t % 3) * 0.004
                q.charge(1.0, t)
                clock.step = 0.0
        return out

    cfg = WallQueueConfig(speedup=2.0, utilization=0.8, bound_ms=60.0)
    c1 = StepClock(1_000.0)
    whole = WallQueue(cfg, c1)
    first = drive(whole, c1, range(0, 300, 5))
    snap = whole.snapshot()
    rest = drive(whole, c1, range(300, 600, 5))
    c2 = StepClock(-5.0)  # another absolute value: only differences may matter
    back = restore_queue_budget(WallQueue(cfg, c2), snap)
    assert isinstance(back, WallQueue)
    assert drive(back, c2, range(300, 600, 5)) == rest
    assert False in first + rest


# ---------------------------------------------------------------- static random drop


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 5), p=st.floats(0.0, 1.0))
def test_cost_polynomial_is_the_thinned_cost_with_one_keep_probability(
        seed: int, m: int, p: float) -> None:
    model = whole_windows(random_model(seed, m, 1, tuple_cost=2.0))
    coef = cost_coefficients(model)
    assert len(coef) == m  # p, p^2 … p^m
    assert polynomial_cost(coef, p) == pytest.approx(thinned_cost(model, np.full(m, p)),
                                                     rel=1e-9, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), share=st.floats(0.01, 0.99))
def test_uniform_keep_just_fits_the_budget(seed: int, share: float) -> None:
    model = whole_windows(random_model(seed, 3, 1, tuple_cost=1.0))
    budget = share * thinned_cost(model, np.ones(3))
    p = uniform_keep(model, budget)
    assert 0.0 < p < 1.0
    assert thinned_cost(model, np.full(3, p)) == pytest.approx(budget, rel=1e-6)
    # the per-stream refinement never expects less output than the uniform p
    x = keep_probabilities(model, share)
    assert float(np.prod(x)) >= p ** 3 * (1 - 1e-6)
    assert uniform_keep(model, 2 * thinned_cost(model, np.ones(3))) == 1.0


def _positions(stream_ts: list[tuple[int, int]], keep: tuple[bool, ...],
               orders: dict[int, tuple[int, ...]]) -> np.ndarray:
    """Comparisons per join position of the real MWayJoin over the kept tuples."""
    cfg = resolve_engine(make_spec(3, "band", [1_000, 1_000, 1_000]))
    join = MWayJoin(cfg.join_config())
    counts = np.zeros(2)
    for (stream, ts), kept in zip(stream_ts, keep, strict=True):
        if not kept:
            continue
        enc = cfg.predicate.encode({"value": 1.0 + 0.1 * (ts % 3)})
        out = join.process(stream, ts, ts, enc, ProbePlan(order=orders[stream],
                                                          feedback=True))
        if out.feedback is not None:
            scanned = out.feedback.scanned
            counts[: len(scanned)] += scanned
    return counts


def test_static_cost_formula_against_a_brute_force_count() -> None:
    """E[comparisons at position j] = p^(j+1) × the full join's, over every subset."""
    stream_ts = [(i % 3, 100 * i) for i in range(9)]
    orders: dict[int, tuple[int, ...]] = {0: (1, 2), 1: (2, 0), 2: (0, 1)}
    full = _positions(stream_ts, (True,) * 9, orders)
    assert full[1] > 0  # the second position is exercised
    per_subset = {keep: _positions(stream_ts, keep, orders)
                  for keep in itertools.product((False, True), repeat=9)}
    for p in (0.3, 0.7):
        expected = np.zeros(2)
        for keep, counts in per_subset.items():
            k = sum(keep)
            expected += p ** k * (1 - p) ** (9 - k) * counts
        assert expected == pytest.approx(full * np.array([p ** 2, p ** 3]), rel=1e-9)


def _feed(shedder: Any, cfg: EngineConfig, until: int, mult: float = 1.0
          ) -> tuple[list[bool], list[dict[str, Any]]]:
    """Drive a shedder over a 3-stream input at 60 tuples/s per stream on the real join."""
    join = MWayJoin(cfg.join_config())
    rng = np.random.default_rng(1)
    decisions, rows = [], []
    next_adapt = cfg.shedding.adapt_interval_ms
    seq = 0
    for t in range(0, until, 5):
        stream = seq % 3
        seq += 1
        while t >= next_adapt:
            row = shedder.maybe_adapt(next_adapt)
            rows.append(row)
            next_adapt += cfg.shedding.adapt_interval_ms
        ok = shedder.admit(Event(stream, seq, t, t), t)
        decisions.append(ok)
        if not ok:
            continue
        enc = cfg.predicate.encode({"value": float(rng.normal(0, 3))})
        out = join.process(stream, t, seq, enc, shedder.plan(stream))
        if out.feedback is not None:
            shedder.observe_probe(out.feedback)
        shedder.charge(out.cost * mult + cfg.tuple_cost, t)
    return decisions, rows


def test_static_random_drop_warms_up_then_keeps_fixed_probabilities() -> None:
    cfg = config("randomdrop-static", warmup_ms=1_000, queue=50)
    shedder = StaticRandomDropShedder.create(cfg, PluginEnv())
    decisions, rows = _feed(shedder, cfg, 4_000)
    warm = [r for r in rows if r["warmup"]]
    fixed = [r for r in rows if not r["warmup"]]
    assert len(warm) == 1 and warm[0]["random_drops"] == 0  # nothing drops at random
    assert fixed and "fixed" in fixed[0]
    keeps = {tuple(r["keep"]) for r in fixed}
    assert len(keeps) == 1  # static: never re-sized
    keep = np.array(next(iter(keeps)))
    assert np.all(keep > 0) and np.all(keep < 1)
    info = fixed[0]["fixed"]
    assert info["budget_comparisons_per_s"] == pytest.approx(0.9 * 2_000.0, rel=1e-6)
    assert sum(r["random_drops"] for r in fixed) > 0
    # deterministic: the same input and seed give the same decisions
    again = StaticRandomDropShedder.create(cfg, PluginEnv())
    assert _feed(again, cfg, 4_000)[0] == decisions


def test_static_random_drop_measures_the_cost_of_a_comparison() -> None:
    """A predicate 4× as costly (the benchmark's Table II multiplier) shrinks the
    comparisons the capacity affords 4×: μ comes from the feedback probes."""
    cfg = config("randomdrop-static", warmup_ms=1_000, queue=50)
    base = StaticRandomDropShedder.create(cfg, PluginEnv())
    _feed(base, cfg, 1_500)
    dear = StaticRandomDropShedder.create(cfg, PluginEnv())
    _feed(dear, cfg, 1_500, mult=4.0)
    assert base.fixed is not None and dear.fixed is not None
    assert dear.fixed["budget_comparisons_per_s"] == pytest.approx(
        base.fixed["budget_comparisons_per_s"] / 4.0, rel=1e-6)


def test_static_random_drop_on_the_wall_clock_fits_seconds() -> None:
    clock = StepClock()
    cfg = config("randomdrop-static", budget="wall", warmup_ms=1_000, queue_ms=10_000)
    shedder = StaticRandomDropShedder.create(cfg, PluginEnv(clock=clock, speedup=1.0))
    assert isinstance(shedder.budget, WallQueue)
    join = MWayJoin(cfg.join_config())
    rng = np.random.default_rng(2)
    for t in range(0, 1_500, 5):
        if t % 500 == 0 and t:
            shedder.maybe_adapt(t)
        ev = Event(t // 5 % 3, t, t, t)
        if not shedder.admit(ev, t):
            continue
        out = join.process(ev.stream, t, t, cfg.predicate.encode(
            {"value": float(rng.normal(0, 3))}), shedder.plan(ev.stream))
        if out.feedback is not None:
            shedder.observe_probe(out.feedback)
        clock.step = 1e-4 + 1e-6 * out.cost  # 100 µs per tuple + 1 µs per comparison
        shedder.charge(out.cost + 1.0, t)
        clock.step = 0.0
    assert shedder.fixed is not None
    # a = 100 µs, b = 1 µs → c_t' ≈ 100 comparisons; B' = 0.9 s / 1 µs
    assert shedder.fixed["tuple_cost_comparisons"] == pytest.approx(100.0, rel=0.05)
    assert shedder.fixed["budget_comparisons_per_s"] == pytest.approx(0.9e6, rel=0.05)


def test_modes_refuse_each_others_snapshots() -> None:
    from pipeline.core.errors import OperatorStateError

    cfg = config("taildrop")
    snap = TailDropShedder.create(cfg, PluginEnv()).snapshot()
    with pytest.raises(OperatorStateError):
        StaticRandomDropShedder.from_snapshot(config("randomdrop-static"), snap, PluginEnv())
    with pytest.raises(ConfigError, match="queue_ms"):
        WallQueueConfig(bound_ms=0.0)


def test_wall_queue_serves_priced_results_unstretched() -> None:
    """``charge_results``: n × s of the join's spending (not overhead) and n × s × 1000 /
    utilization of backlog at once — not stretched by the last batch's lag ratio, which
    stands for the time nobody priced."""
    clock = StepClock()
    queue = WallQueue(WallQueueConfig(speedup=1.0, utilization=0.5, bound_ms=1e9), clock)
    queue.observe_batch(0.0, 3.0)  # service times × 3 from here
    _serve_one(queue, clock, 0, 0.1)
    before = queue.busy_until
    queue.charge_results(400, 25e-6)
    assert queue.busy_until - before == pytest.approx(400 * 25e-6 * 1000.0 / 0.5)
    reading = queue.measure(10, 1000)
    assert reading.spent == pytest.approx(0.1 + 400 * 25e-6)
    assert reading.overhead == 0.0
