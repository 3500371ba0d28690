"""GrubJoin on the wall budget under a step change of the input rate (issue 28, item 4).

A simulated machine behind an injected clock: every admitted tuple costs T0 seconds of
fixed work plus T1(r) × the share of the full join's scanning its plan does (window
harvest fractions × probe share), with T1 growing with the windows (∝ r). The shedder
is driven run by run (admit_some → the clock advances by the machine's time →
charge_some) and adapts every Δ. Overload at 3× capacity, then the rate drops to 0.3×:

* z never sits at its floor while the input queue is empty;
* after the drop, z reaches the level the budget allows (the full join, z = 1, fits
  with room to spare) within 3 adaptation steps.
No real time is read: the clock is a counter the test moves.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.operators.contract import PluginEnv
from pipeline.operators.shedding.grubjoin.shedder import EMPTY_SHARE, GrubJoinShedder
from pipeline.operators.shedding.throttle import Z_MIN
from pipeline.testing.wall import ManualClock, wall_grubjoin

DELTA_MS = 1_000
RUN_MS = 100
T0 = 20e-6  # seconds of fixed work per admitted tuple


def _t1(rate: float) -> float:
    """Seconds of full scanning per probing tuple at ``rate`` tuples/s per stream."""
    return 200e-6 * rate / 1000.0


def _shedder(clock: ManualClock, **extra: object) -> GrubJoinShedder:
    return wall_grubjoin(clock, adapt_interval_ms=DELTA_MS, learn=False, **extra)


def _scan_share(sh: GrubJoinShedder) -> float:
    """Share of the full join's scanning the plans in force do."""
    return float(np.mean(sh.fractions)) * sh.share if sh.plans is not None else 1.0


def _interval(sh: GrubJoinShedder, clock: ManualClock, start: int, rate: float,
              rng: np.random.Generator) -> None:
    """One Δ of input at ``rate`` per stream, in runs of RUN_MS."""
    for a in range(start, start + DELTA_MS, RUN_MS):
        n = rng.poisson(3 * rate * RUN_MS / 1000.0)
        nows = np.sort(rng.integers(a, a + RUN_MS, size=n)).astype(np.int64)
        streams = rng.integers(0, 3, size=n).astype(np.int64)
        kept = sh.admit_some(streams, nows)
        assert kept is not None
        k = int(np.count_nonzero(kept))
        per = T0 + _t1(rate) * _scan_share(sh)
        clock.t += k * per
        sh.charge_some(np.ones(k), nows[kept])


def test_step_down_recovers_within_three_steps_and_never_floors_with_an_empty_queue(
) -> None:
    clock = ManualClock()
    sh = _shedder(clock)
    rng = np.random.default_rng(5)
    rows = []
    high, low, steps_high = 3_000.0, 300.0, 20
    for step in range(steps_high + 8):
        rate = high if step < steps_high else low
        _interval(sh, clock, step * DELTA_MS, rate, rng)
        row = sh.maybe_adapt((step + 1) * DELTA_MS)
        assert row is not None
        rows.append(row)
    queue = sh.budget.queue()
    assert queue is not None
    bound = queue.queue_config.bound_ms
    for r in rows:
        empty = r["queue_drops"] == 0 and r["backlog_ms"] <= EMPTY_SHARE * bound
        assert not (empty and r["z"] <= Z_MIN), r
    assert min(r["z"] for r in rows[5:steps_high]) < 0.5  # overloaded: z was cut
    after = [r["z"] for r in rows[steps_high:steps_high + 3]]
    assert max(after) >= 0.99, after
    assert all(r["z"] >= 0.99 for r in rows[steps_high + 3:])  # and stays there


def test_an_overhead_lump_does_not_floor_z_once_the_queue_is_empty() -> None:
    """One micro-batch reports 2 s of work outside the join (e.g. a state save): the
    queue overflows for a while, but once it is empty again z is not held at its floor
    by the decayed overhead estimate (JoinShare) and is back at 1 within 3 steps."""
    clock = ManualClock()
    sh = _shedder(clock)
    rng = np.random.default_rng(3)
    rows = []
    for step in range(14):
        _interval(sh, clock, step * DELTA_MS, 300.0, rng)
        if step == 4:
            wall = sh.wall_budget()
            assert wall is not None
            wall.observe_batch(2.0, None)
        rows.append(sh.maybe_adapt((step + 1) * DELTA_MS))
    queue = sh.budget.queue()
    assert queue is not None
    bound = queue.queue_config.bound_ms
    for r in rows:
        assert r is not None
        empty = r["queue_drops"] == 0 and r["backlog_ms"] <= EMPTY_SHARE * bound
        assert not (empty and r["z"] <= Z_MIN), r
    lump = [i for i, r in enumerate(rows) if r is not None and r["backlog_ms"] > bound]
    assert lump, "the lump must overflow the queue"
    back = next(i for i, r in enumerate(rows) if i > lump[-1] and r is not None
                and r["queue_drops"] == 0 and r["backlog_ms"] <= EMPTY_SHARE * bound)
    assert max(r["z"] for r in rows[back:back + 3] if r is not None) >= 0.99


def test_the_wall_clock_learns_the_per_tuple_cost_in_comparisons() -> None:
    """With ``learn_tuple_cost``, on a machine where an admitted tuple costs 40 µs
    plus 8 ns per comparison: the shedder's c_t (what the cost model charges per
    tuple, in comparisons) becomes 40e-6 / 8e-9 = 5,000 from the timed runs, whose
    comparisons per tuple differ."""
    clock = ManualClock()
    sh = _shedder(clock, learn_tuple_cost=True)
    off = _shedder(clock)
    rng = np.random.default_rng(11)
    cfg = sh.config.shedding
    for run in range(200):
        n = int(rng.integers(5, 50))
        nows = np.full(n, run * 10, dtype=np.int64)
        kept = sh.admit_some(np.zeros(n, dtype=np.int64), nows)
        assert kept is not None
        k = int(np.count_nonzero(kept))
        comparisons = rng.integers(0, 20_000, k).astype(np.float64)
        clock.t += k * 40e-6 + comparisons.sum() * 8e-9
        sh.charge_some(comparisons + cfg.tuple_cost + cfg.probe_cost, nows[kept])
        if off.admit_some(np.zeros(n, dtype=np.int64), nows) is not None:
            off.charge_some(np.ones(0), nows[:0])
    sh.maybe_adapt(2_000)
    off.maybe_adapt(2_000)
    assert off.tuple_cost == cfg.tuple_cost  # learn_tuple_cost off: as configured
    assert sh.tuple_cost == pytest.approx(5_000, rel=0.01)
    restored = GrubJoinShedder.from_snapshot(sh.config, sh.snapshot(),
                                             PluginEnv(clock=clock, speedup=1.0))
    assert restored.tuple_cost == sh.tuple_cost


@pytest.mark.parametrize("measured", [True, False])
def test_overhead_z_cannot_shed_does_not_spiral_z_to_its_floor(measured: bool) -> None:
    """Every Δ the micro-batch reports more work outside the join than the whole budget
    (0.7 s of overhead against 0.6 s available): the queue drops arrivals at any z. The
    measured level (``measure_budget``, throttle.measured_level) keeps the join at the
    share it is guaranteed (JoinShare's floor) — z settles well above its floor — while
    the paper's compounding cut z ← β·z by the queue's consumed / pushed spirals it to
    the floor (the rule this replaced on the wall clock)."""
    clock = ManualClock()
    sh = _shedder(clock, measure_budget=measured)
    rng = np.random.default_rng(7)
    rows = []
    for step in range(40):
        _interval(sh, clock, step * DELTA_MS, 1_000.0, rng)
        wall = sh.wall_budget()
        assert wall is not None
        wall.observe_batch(0.7, None)
        rows.append(sh.maybe_adapt((step + 1) * DELTA_MS))
    assert all(r is not None for r in rows)
    tail = [r["z"] for r in rows[-15:] if r is not None]
    drops = sum(r["queue_drops"] for r in rows[-15:] if r is not None)
    assert drops > 0, "the overhead must keep the queue dropping"
    if measured:
        assert min(tail) >= 0.05, tail
    else:
        assert max(tail) <= 0.01, tail
