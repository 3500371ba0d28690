"""c_t measured from the phase profile (shedding/phase_cost.py; issue 28).

Oracle: the aged sums recomputed by brute force from the per-step increments, and a
simulated machine whose admitted tuples cost a known number of seconds besides their
probes and whose probes cost a known number of seconds per comparison.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.profile import PhaseProfile
from pipeline.operators.contract import PluginEnv
from pipeline.operators.shedding.grubjoin.shedder import FIT_DECAY, GrubJoinShedder
from pipeline.operators.shedding.phase_cost import OWN_PHASES, TupleCostMeter
from pipeline.testing.wall import ManualClock, wall_grubjoin

step = st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 5.0), st.floats(0.0, 5.0),
                 st.integers(0, 1_000), st.floats(0.0, 1e7))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=12), decay=st.floats(0.1, 1.0),
       phase=st.sampled_from(OWN_PHASES))
def test_the_meter_equals_the_aged_sums_of_the_increments(
        steps: list[tuple[float, float, float, int, float]], decay: float,
        phase: str) -> None:
    """Each step adds own-phase seconds, probing seconds, seconds of a phase paid by
    every arrival (not c_t's), admitted tuples and comparisons; the meter's value is the
    ratio of the brute-force aged sums."""
    prof = PhaseProfile(lambda: 0.0)
    meter = TupleCostMeter(decay)
    meter.observe(prof)
    sums = np.zeros(4)
    for own, probe, before, tuples, cmps in steps:
        prof.add(phase, own)
        prof.add("probing", probe)
        prof.add("kslack_sync", before)
        meter.charge(tuples, cmps)
        meter.observe(prof)
        sums = decay * sums + np.array([own, probe, tuples, cmps])
    got = meter.value()
    if sums[1] <= 0 or sums[2] <= 0 or sums[3] <= 0:
        assert got is None
    else:
        assert got == pytest.approx((sums[0] / sums[2]) / (sums[1] / sums[3]), rel=1e-9)


def test_a_new_profile_starts_a_new_mark() -> None:
    """A restored operator's fresh profile (totals back at 0) adds nothing negative."""
    old, new = PhaseProfile(lambda: 0.0), PhaseProfile(lambda: 0.0)
    meter = TupleCostMeter(0.5)
    meter.observe(old)
    old.add("insertion", 10.0)
    old.add("probing", 10.0)
    meter.charge(10, 100.0)
    meter.observe(old)
    before = meter.snapshot()
    meter.observe(new)
    assert meter.snapshot() == before  # no negative increment from the reset totals
    new.add("insertion", 3.0)
    new.add("probing", 1.0)
    meter.charge(10, 100.0)
    meter.observe(new)
    assert meter.snapshot() == pytest.approx(
        {"own_s": 8.0, "probe_s": 6.0, "tuples": 15.0, "comparisons": 150.0})

def test_the_shedder_charges_the_measured_cost_per_tuple_in_comparisons() -> None:
    """A machine where an admitted tuple's own phases take 30 µs and probing takes
    2 ns per comparison: c_t = 30e-6 / 2e-9 = 15,000 comparisons. Without a profile
    (or with ``measure_tuple_cost = false``) c_t stays as configured."""
    clock = ManualClock()
    sh, off = wall_grubjoin(clock), wall_grubjoin(clock, measure_tuple_cost=False)
    no_profile = wall_grubjoin(clock)
    assert sh.wants_profile() and not off.wants_profile()
    prof = PhaseProfile(clock)
    sh.attach_profile(prof)
    off.attach_profile(PhaseProfile(clock))
    rng = np.random.default_rng(3)
    cfg = sh.config.shedding
    for delta in range(1, 6):
        for run in range(20):
            n = int(rng.integers(5, 50))
            nows = np.full(n, (delta - 1) * 1_000 + run * 50, dtype=np.int64)
            kept = sh.admit_some(np.arange(n, dtype=np.int64) % 3, nows)
            assert kept is not None
            k = int(np.count_nonzero(kept))
            comparisons = rng.integers(1, 20_000, k).astype(np.float64)
            prof.add("insertion", k * 10e-6)
            prof.add("results", k * 20e-6)
            prof.add("probing", comparisons.sum() * 2e-9)
            prof.add("validation", n * 50e-6)  # paid by every arrival: not c_t
            clock.t += k * 30e-6 + comparisons.sum() * 2e-9
            sh.charge_some(comparisons + cfg.tuple_cost + cfg.probe_cost, nows[kept])
        for s in (sh, off, no_profile):
            s.maybe_adapt(delta * 1_000)
    assert sh.tuple_cost == pytest.approx(15_000, rel=1e-6)
    assert off.tuple_cost == no_profile.tuple_cost == cfg.tuple_cost
    restored = GrubJoinShedder.from_snapshot(sh.config, sh.snapshot(),
                                             PluginEnv(clock=clock, speedup=1.0))
    assert restored.tuple_cost == sh.tuple_cost
    assert restored.cost_meter.snapshot() == sh.cost_meter.snapshot()
    assert restored.cost_meter.decay == FIT_DECAY
