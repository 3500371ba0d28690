"""The throttle fraction update (GrubJoin §IV-A) and the learned ceiling, table-driven."""

from __future__ import annotations

import math

import pytest

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.budget.reading import BudgetReading
from pipeline.operators.shedding.throttle import (
    BUSY_CUT,
    JOIN_FLOOR,
    QUEUE_GUARD,
    Z_MIN,
    Ceiling,
    CeilingConfig,
    JoinShare,
    Throttle,
    ThrottleConfig,
    load_beta,
)


@pytest.mark.parametrize(
    ("z0", "beta", "headroom", "used", "cap", "want"),
    [
        (1.0, 0.5, None, None, True, 0.5),     # fell behind: z ← β·z (paper)
        (0.5, 0.8, 0.9, None, True, 0.4),      # β < 1: the paper's cut, whatever h says
        (0.5, 0.8, 10.0, 0.1, True, 0.4),      # cuts apply to z, not to the level in use
        (0.5, 1.0, None, None, True, 0.6),     # boost γ = 1.2 (paper)
        (0.9, 1.0, None, None, True, 1.0),     # capped at 1
        (0.5, 1.0, 1.1, None, True, 0.55),     # boost capped by the measured headroom
        (0.5, 1.0, 0.9, None, True, 0.45),     # over the utilization target: back off
        (0.5, 1.0, 1.1, None, False, 0.6),     # paper's rule only
        (0.5, 1.0, 3.0, 0.1, True, 0.3),       # anti-windup: h × the level in use
        (0.5, 1.0, 3.0, 0.4, True, 0.6),       # affordable: the paper's boost
        (0.5, 1.0, 3.0, 0.1, False, 0.6),      # no headroom cap, no anti-windup
        (0.5, 1.0, math.inf, 0.1, True, 0.6),  # nothing spent: no cap
        (0.002, 0.1, None, None, True, Z_MIN),  # floor
    ],
)
def test_update(z0: float, beta: float, headroom: float | None, used: float | None,
                cap: bool, want: float) -> None:
    t = Throttle(ThrottleConfig(boost=1.2, cap_by_headroom=cap), z=z0)
    assert t.update(beta, headroom, used) == pytest.approx(want)
    assert t.z == pytest.approx(want)


def test_clamp_only_lowers() -> None:
    t = Throttle(ThrottleConfig(), z=0.5)
    assert t.clamp(0.8) == 0.5
    assert t.clamp(0.2) == 0.2
    assert t.clamp(0.0) == Z_MIN


@pytest.mark.parametrize(
    ("before", "dropped", "overflows", "headroom", "learn"),
    [
        (0, 12, 4, 1.1, True),    # new drops, several overflows, at the target: learn
        (0, 12, 4, 1.25, True),   # utilization 0.8 ≥ learn_above
        (3, 12, 4, 1.1, False),   # drops continue: overload, the paper's cut alone
        (0, 3, 1, 1.1, False),    # one overflow: a single probe outlasted the queue
        (0, 12, 4, 2.0, False),   # utilization 0.5: not the mean load
        (0, 0, 0, 1.1, False),    # no drops
        (0, 12, 4, math.inf, False),
    ],
)
def test_ceiling_learns_only_load_overflows(before: int, dropped: int, overflows: int,
                                            headroom: float, learn: bool) -> None:
    c = Ceiling(CeilingConfig(learn_above=0.75, min_overflows=2))
    c.should_learn(before, 1 if before else 0, 1.0)  # the interval before
    assert c.should_learn(dropped, overflows, headroom) is learn
    assert c.calm is (dropped == 0)


def test_first_interval_is_never_learned() -> None:
    """Nothing is known about the interval before the first one (start-up overload)."""
    assert not Ceiling(CeilingConfig()).should_learn(12, 4, 1.1)


@pytest.mark.parametrize(("load", "kept"), [(90.0, True), (105.0, True), (70.0, False),
                                            (125.0, False)])
def test_ceiling_is_forgotten_when_the_input_rate_moves(load: float, kept: bool) -> None:
    c = Ceiling(CeilingConfig(forget_change=0.2))
    c.remember([[0, 2], [1, 0]], 0.5, 100.0)
    c.forget_if_moved(load)
    assert (c.counts is not None) is kept


def test_ceiling_snapshot_roundtrip() -> None:
    c = Ceiling(CeilingConfig())
    c.remember([[0, 2], [1, 0]], 0.5, 100.0)
    c.should_learn(0, 0, 1.0)
    back = Ceiling.from_snapshot(c.config, c.snapshot())
    assert (back.counts, back.share, back.load, back.calm) == (c.counts, 0.5, 100.0, True)
    with pytest.raises(OperatorStateError):
        Ceiling.from_snapshot(c.config, {"counts": [["x"]], "share": 1.0, "load": 1.0})


def test_bad_values() -> None:
    with pytest.raises(ConfigError, match="boost"):
        ThrottleConfig(boost=1.0)
    with pytest.raises(ConfigError, match="margin"):
        CeilingConfig(margin=1.0)
    with pytest.raises(ConfigError, match="learn_above"):
        CeilingConfig(learn_above=-0.1)
    with pytest.raises(ConfigError, match="min_overflows"):
        CeilingConfig(min_overflows=0)
    with pytest.raises(ConfigError, match="forget_change"):
        CeilingConfig(forget_change=0.0)
    with pytest.raises(OperatorStateError, match="beta"):
        Throttle(ThrottleConfig()).update(-1.0)
    with pytest.raises(OperatorStateError):
        Throttle.from_snapshot(ThrottleConfig(), {})


def test_snapshot_roundtrip() -> None:
    t = Throttle(ThrottleConfig(), z=0.3)
    assert Throttle.from_snapshot(t.config, t.snapshot()).z == 0.3


def _reading(available: float, spent: float, overhead: float, pushed: int = 100,
             consumed: int = 100, lag_cap: float | None = None) -> BudgetReading:
    return BudgetReading(beta=0.0, headroom=0.0, pushed=pushed, consumed=consumed,
                         dropped=pushed - consumed, cost=0.0, available=available,
                         spent=spent, overhead=overhead, lag_cap=lag_cap)


def test_join_share_measures_the_join_against_what_is_left_for_it() -> None:
    share = JoinShare(decay=0.5)
    # 5 s interval, 3 s available, 2 s spent outside the join, 0.5 s in it: what is left
    # for the join, 3 − 2 = 1 s, is below its floor share (JOIN_FLOOR · 3 = 1.5 s), so
    # the headroom is 1.5 / 0.5 = 3
    beta, h = share.reading(_reading(3.0, 2.5, 2.0), 5000)
    assert (beta, h) == pytest.approx((1.0, JOIN_FLOOR * 3.0 / 0.5))
    # the next interval reports no overhead (the batch's came in one lump): the decayed
    # rate still charges (0.5·2 + 0) / (0.5·5 + 5) per second → 0.667 s of 5
    beta, h = share.reading(_reading(3.0, 1.0, 0.0), 5000)
    assert h == pytest.approx((3.0 - 1.0 / 7.5 * 5.0) / 1.0)
    # queue drops at a busy join cut β (the paper's consumed / pushed); the lag cap caps
    # both, down to the join's floor share (JOIN_FLOOR of the 3 s available: 1.5 s for a 2.5 s join)
    beta, h = JoinShare().reading(_reading(3.0, 2.7, 0.0, consumed=80), 5000)
    assert beta == pytest.approx(0.8) and h == pytest.approx(3.0 / 2.7)
    beta, h = JoinShare().reading(_reading(3.0, 2.5, 0.0, lag_cap=0.25), 5000)
    assert beta == h == pytest.approx(JOIN_FLOOR * 3.0 / 2.5)
    beta, h = JoinShare().reading(_reading(3.0, 2.5, 0.0, lag_cap=0.9), 5000)
    assert beta == h == pytest.approx(0.9)


def test_queue_drops_cut_z_until_the_join_is_too_small_to_explain_them() -> None:
    """The paper's consumed / pushed, except that the wall queue no longer cuts once the
    join spends less than QUEUE_GUARD of the available time (the spiral guard)."""
    # half dropped, the join 2.5 s of 3 s: the paper's 0.5
    beta, _ = JoinShare().reading(_reading(3.0, 3.0, 0.5, consumed=50), 5000)
    assert beta == pytest.approx(0.5)
    # 90 % dropped while the join spends 0.6 s of 3 s: cut only to 0.1 · 3 / 0.6 = 0.5
    beta, _ = JoinShare().reading(_reading(3.0, 3.0, 2.4, consumed=10), 5000)
    assert beta == pytest.approx(QUEUE_GUARD * 3.0 / 0.6)
    # the join at 0.2 s of 3 s (under the guard share): drops cut nothing
    beta, _ = JoinShare().reading(_reading(3.0, 3.0, 2.8, consumed=10), 5000)
    assert beta == 1.0


@pytest.mark.parametrize(
    ("beta_q", "headroom", "want"),
    [
        (0.5, 1.0, 0.5),                  # busy at the target: the paper's cut
        (0.5, 1.0 / BUSY_CUT, 0.5),       # exactly at the threshold: cut
        (0.5, 1.0 / BUSY_CUT + 0.01, 1.0),  # just under it: bursts, no cut
        (0.5, 10.0, 1.0),                 # idle server: no cut
        (0.5, math.inf, 1.0),             # nothing spent: no cut
        (0.5, 0.0, 0.5),                  # no headroom at all: cut
        (1.0, 0.5, 1.0),                  # nothing dropped: nothing to cut
    ],
)
def test_load_beta_cuts_only_under_load(beta_q: float, headroom: float, want: float) -> None:
    assert load_beta(beta_q, headroom) == pytest.approx(want)


def test_join_keeps_its_floor_share_when_the_fixed_work_alone_exceeds_the_budget() -> None:
    # 3.5 s of overhead in a 3 s budget: the join (0.5 s) still gets JOIN_FLOOR · 3 s
    beta, h = JoinShare().reading(_reading(3.0, 4.0, 3.5), 5000)
    assert h == pytest.approx(JOIN_FLOOR * 3.0 / 0.5) and beta == 1.0
    restored = JoinShare.from_snapshot(JoinShare().snapshot())
    assert restored.snapshot() == {"overhead_s": 0.0, "span_s": 0.0}
    with pytest.raises(OperatorStateError):
        JoinShare.from_snapshot({"overhead_s": "x"})


def test_boost_by_headroom_recovers_from_the_floor_in_a_few_steps() -> None:
    slow = Throttle(ThrottleConfig(), z=0.001)
    fast = Throttle(ThrottleConfig(boost_by_headroom=True), z=0.001)
    assert fast.update(1.0, 9.0) == pytest.approx(0.003)  # √9 = 3 > γ
    assert slow.update(1.0, 9.0) == pytest.approx(0.0012)
    assert fast.update(1.0, 1.1) == pytest.approx(0.0033)  # capped at h × z
    steps = 0
    while fast.z < 0.5:
        fast.update(1.0, 9.0)
        steps += 1
    assert steps <= 6
