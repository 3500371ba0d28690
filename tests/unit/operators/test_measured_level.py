"""The wall clock's measured level z (throttle.measured_level; issue 28)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.operators.shedding.throttle import (
    MEASURED_FALL,
    MEASURED_RISE,
    Z_MIN,
    measured_level,
)

level = st.floats(Z_MIN, 1.0)


@given(headroom=st.floats(0.0, 100.0), spent=st.one_of(st.none(), st.floats(0.0, 1.0)),
       z_old=level, idle=st.booleans(), boost=st.floats(1.01, 3.0))
def test_the_level_is_headroom_times_spent_within_its_bounds(
        headroom: float, spent: float | None, z_old: float, idle: bool,
        boost: float) -> None:
    """Oracle: headroom · spent (z_old when nothing was spent), clipped to
    [FALL, RISE] × z_old, at least boost · z_old when idle, inside [Z_MIN, 1]."""
    want = z_old if spent is None else headroom * spent
    want = min(max(want, MEASURED_FALL * z_old), MEASURED_RISE * z_old)
    if idle:
        want = max(want, boost * z_old)
    want = max(Z_MIN, min(1.0, want))
    assert measured_level(headroom, spent, z_old, idle, boost) == pytest.approx(want)


def test_a_join_that_took_no_time_raises_z_by_the_bound() -> None:
    assert measured_level(math.inf, 0.0, 0.01, False, 1.2) == pytest.approx(
        MEASURED_RISE * 0.01)


@given(share=st.floats(0.1, 0.9), z=st.floats(0.05, 1.0))
def test_drops_the_join_has_room_for_do_not_compound(share: float, z: float) -> None:
    """The queue passes ``share`` of the offered tuples every Δ (overhead bursts), and the
    join, serving only those, spent ``share`` of its time: headroom 1/share. The level
    stays where it is — the paper's z ← β·z would multiply it by ``share`` every Δ."""
    level_now = z
    for _ in range(20):
        level_now = measured_level(1.0 / share, share * level_now, level_now, False, 1.2)
    assert level_now == pytest.approx(z, rel=1e-6)


def test_a_join_over_its_share_is_cut_in_proportion() -> None:
    """Headroom 0.8 with every offered tuple passed: the next level is 0.8 of the one in
    force."""
    assert measured_level(0.8, 0.5, 0.5, False, 1.2) == pytest.approx(0.4)
