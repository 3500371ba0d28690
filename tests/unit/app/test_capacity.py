"""The full-join capacity estimate used by the demo and the pipeline benchmark."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from pipeline.app.capacity import (
    Capacity,
    capacity_from_fit,
    fit_cost,
    measure_capacity,
    refine_rates,
    time_full_join,
    time_instance_join,
    timing_config,
)
from pipeline.core.errors import ConfigError
from pipeline.quality.oracle import oracle
from pipeline.testing.streams import make_dump, make_spec


@pytest.mark.parametrize(
    ("a", "b", "rates"),
    [
        (1e-3, 2e-5, [100.0, 200.0]),
        (0.0, 4e-6, [50.0, 150.0]),  # purely quadratic
        (2e-4, 0.0, [10.0, 30.0]),  # purely linear
        (5e-4, 1e-6, [40.0, 80.0, 160.0]),  # least squares over three samples
    ],
)
def test_fit_recovers_the_cost_model(a: float, b: float, rates: list[float]) -> None:
    costs = [a * r + b * r * r for r in rates]
    got_a, got_b = fit_cost(rates, costs)
    assert got_a == pytest.approx(a, abs=1e-12)
    assert got_b == pytest.approx(b, abs=1e-14)


def test_fit_clips_negative_terms() -> None:
    # costs that fall with rate in their quadratic part: b would be negative → linear fit
    a, b = fit_cost([100.0, 200.0], [0.5, 0.8])
    assert b == 0.0 and a > 0
    a, b = fit_cost([100.0, 200.0], [0.1, 0.9])  # a would be negative → quadratic
    assert a == 0.0 and b > 0


@pytest.mark.parametrize(
    ("a", "b", "groups", "speedup", "u"),
    [(1e-3, 2e-5, 1, 1.0, 0.8), (0.0, 4e-6, 2, 2.0, 0.6), (2e-4, 0.0, 1, 8.0, 0.8),
     (5e-4, 1e-6, 3, 4.0, 1.0)],
)
def test_capacity_spends_exactly_the_budget(a: float, b: float, groups: int,
                                            speedup: float, u: float) -> None:
    r = capacity_from_fit(a, b, groups, speedup, u)
    assert r > 0
    assert math.isclose((a * r + b * r * r) / groups, u / speedup, rel_tol=1e-9)


@pytest.mark.parametrize(
    ("rates", "costs"), [([100.0], [1.0]), ([100.0, 100.0], [1.0, 2.0]),
                         ([0.0, 10.0], [1.0, 2.0]), ([1.0, 2.0], [0.0, 1.0])],
)
def test_bad_samples_are_rejected(rates: list[float], costs: list[float]) -> None:
    with pytest.raises(ConfigError, match="capacity"):
        fit_cost(rates, costs)


def test_capacity_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match="capacity"):
        capacity_from_fit(0.0, 0.0, 1, 1.0, 0.8)


def test_measure_capacity_times_the_exact_join_on_full_windows() -> None:
    spec = make_spec(3, "band", [200, 200, 200],
                     shedding={"mode": "grubjoin", "budget": "wall"},
                     disorder={"mode": "fixed", "slack_ms": 0}, job={"groups": 2})
    low = make_dump(3, 3, 30, max_gap=20, max_delay=50)
    high = make_dump(4, 3, 60, max_gap=10, max_delay=50)
    # each timed span "took" 2.5 s and 7.5 s
    ticks: Iterator[float] = iter([10.0, 12.5, 20.0, 27.5])
    cap = measure_capacity(spec, {40.0: low, 80.0: high}, sample_seconds=5.0, speedup=2.0,
                           warm_seconds=0.0, clock=lambda: next(ticks))
    # shedding forced off, fixed K raised to the max delay: the exact results
    assert cap.results == len(oracle(spec.join, low)) + len(oracle(spec.join, high))
    assert cap.costs == pytest.approx((0.5, 1.5))
    a, b = fit_cost([40.0, 80.0], [0.5, 1.5])
    assert (cap.linear, cap.quadratic) == pytest.approx((a, b))
    assert cap.capacity_rate == pytest.approx(capacity_from_fit(a, b, 2, 2.0, 0.8))
    assert "r_cap" in cap.describe()


def test_warm_up_tuples_are_inserted_not_timed() -> None:
    spec = make_spec(2, "band", [300, 300])
    dump = make_dump(5, 2, 40, max_gap=20, max_delay=0)
    warm_s = 0.2
    ticks: Iterator[float] = iter([0.0, 1.0, 0.0, 1.0])
    cap = measure_capacity(spec, {10.0: dump, 20.0: dump}, sample_seconds=1.0, speedup=1.0,
                           warm_seconds=warm_s, clock=lambda: next(ticks))
    timed_ids = {r.id for r in oracle(spec.join, dump)
                 if r.result_time >= warm_s * 1000}
    # every result completed by a timed tuple is found (windows were pre-filled)
    assert cap.results == 2 * len(timed_ids)


def test_repeats_keep_the_fastest_run() -> None:
    spec = make_spec(2, "band", [300, 300])
    dump = make_dump(6, 2, 30, max_gap=20, max_delay=0)
    ticks: Iterator[float] = iter([0.0, 3.0, 10.0, 12.0, 20.0, 24.0])  # 3 s, 2 s, 4 s
    wall, results = time_full_join(spec, dump, 0.0, clock=lambda: next(ticks), repeats=3)
    assert wall == 2.0
    assert results == len(oracle(spec.join, dump))


@pytest.mark.parametrize(("disorder", "mode", "slack"), [
    ({"mode": "quality", "recall": 0.9}, "quality", None),  # the job's per-tuple policy
    ({"mode": "fixed", "slack_ms": 5}, "fixed", 50),  # exact: K = the sample's max delay
    ({"mode": "none"}, "fixed", 50),
])
def test_timing_config_keeps_the_quality_policy_else_makes_the_join_exact(
        disorder: dict[str, object], mode: str, slack: int | None) -> None:
    spec = make_spec(3, "band", [200, 200, 200], disorder=disorder,
                     shedding={"mode": "grubjoin", "budget": "wall"})
    dump = make_dump(3, 3, 30, max_gap=20, max_delay=50)
    want_max = max(int(r["arrival_time"]) - int(r["event_time"]) for r in dump)
    cfg = timing_config(spec, dump)
    assert cfg.shedding.mode == "off"
    assert cfg.disorder.mode == mode
    if slack is not None:
        assert cfg.disorder.slack_ms == want_max


def test_instance_timing_runs_the_jobs_join_instance_exactly() -> None:
    """``through="instance"``: the job's join instance (validation, member store, result
    rows, state changes), one micro-batch per trigger interval — the same exact results
    as the bare engine; warm-up tuples are inserted, not timed."""
    spec = make_spec(3, "band", [300, 300, 300],
                     shedding={"mode": "grubjoin", "budget": "wall"},
                     disorder={"mode": "fixed", "slack_ms": 0}, job={"trigger_ms": 200})
    dump = make_dump(5, 3, 80, max_gap=10, max_delay=40)
    ids: set[str] = set()
    now = iter(range(10**6))
    wall, results = time_instance_join(spec, dump, 0.0, clock=lambda: float(next(now)),
                                       ids=ids)
    assert wall > 0
    truth = {r.id for r in oracle(spec.join, dump)}
    assert results == len(truth) and ids == truth
    eng_ids: set[str] = set()
    time_full_join(spec, dump, 0.0, ids=eng_ids)
    assert eng_ids == truth
    with pytest.raises(ConfigError, match="through"):
        measure_capacity(spec, {1.0: dump, 2.0: dump}, 1.0, speedup=1.0, through="spark")


def test_refine_rates_sample_around_the_first_estimate() -> None:
    first = Capacity((150.0, 450.0), 15.0, 0.0, (1.0, 2.0), 0, (0.1, 0.3), 1e-4, 1e-7, 1,
                     1.0, 0.6, 2000.0)
    assert refine_rates(first) == (1400.0, 2000.0, 2600.0)


def test_instance_profile_times_the_phases_of_every_admitted_tuple() -> None:
    """The in-process profile (``harvest bench pipeline --only instance-profile``): every
    tuple past the warm-up is admitted and counted, each phase's seconds come from the
    injected timer, and the phases sum to the time the timer saw."""
    from pipeline.app.instance_profile import profile_instance

    spec = make_spec(3, "band", [300, 300, 300], disorder={"mode": "fixed", "slack_ms": 0},
                     job={"trigger_ms": 200})
    dump = make_dump(5, 3, 80, max_gap=10, max_delay=40)
    ticks = iter(range(10**6))
    prof = profile_instance(spec, dump, 0.0, timer=lambda: float(next(ticks)))
    assert prof.tuples == len(dump) and prof.batches > 1
    seconds = prof.seconds
    assert {"input", "validation", "results", "state", "output"} <= set(seconds)
    assert all(s >= 0 for s in seconds.values()) and sum(seconds.values()) > 0
    rows = {r["phase"]: r for r in prof.rows()}
    assert rows["input"]["us_per_tuple"] == round(seconds["input"] * 1e6 / len(dump), 3)


def test_the_idle_flush_charges_no_phase_for_the_time_before_it() -> None:
    """An idle flush (the processor's timer, long after the last batch) starts its own
    laps: the idle time is in no phase."""
    from pipeline.app.capacity import envelope_frames
    from pipeline.core.profile import PhaseProfile
    from pipeline.runtime.instance import InstanceConfig, JoinInstance

    spec = make_spec(3, "band", [300, 300, 300], disorder={"mode": "fixed", "slack_ms": 50},
                     job={"trigger_ms": 200})
    dump = make_dump(5, 3, 60, max_gap=10, max_delay=40)
    now = [0.0]

    def timer() -> float:
        now[0] += 1e-3
        return now[0]

    inst = JoinInstance(InstanceConfig.from_spec(spec, ["value"]), 0, timer)
    prof = PhaseProfile(timer)
    inst.attach_profile(prof)
    for frame in envelope_frames(spec, dump, ["value"]):
        inst.process(frame)
    busy = sum(prof.seconds.values())
    now[0] += 1_000.0  # the query idles
    inst.flush()
    assert 0 < sum(prof.seconds.values()) - busy < 1.0
