"""Budget sources (ARCHITECTURE §5): the virtual CPU against an event-by-event simulation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.budget.factory import make_budget
from pipeline.operators.budget.virtual_cpu import VirtualCpu, VirtualCpuConfig
from pipeline.operators.budget.wall import WallBudget, WallBudgetConfig


def simulate(arrivals: list[int], costs: list[float], capacity: float,
             queue: int) -> list[bool]:
    """Oracle: a FIFO single server; a tuple is dropped if ``queue`` tuples wait."""
    admitted: list[bool] = []
    starts: list[float] = []  # start times of admitted tuples
    free_at = 0.0
    for t, c in zip(arrivals, costs, strict=True):
        waiting = sum(1 for s in starts if s > t)
        if waiting >= queue:
            admitted.append(False)
            continue
        start = max(float(t), free_at)
        free_at = start + 1000.0 * c / capacity
        starts.append(start)
        admitted.append(True)
    return admitted


@settings(max_examples=50, deadline=None)
@given(gaps=st.lists(st.integers(0, 30), min_size=1, max_size=80),
       costs=st.lists(st.floats(0.0, 50.0), min_size=80, max_size=80),
       capacity=st.floats(100.0, 5000.0), queue=st.integers(1, 5))
def test_admission_matches_a_fifo_simulation(gaps: list[int], costs: list[float],
                                             capacity: float, queue: int) -> None:
    arrivals = []
    t = 0
    for g in gaps:
        t += g
        arrivals.append(t)
    costs = costs[: len(arrivals)]
    cpu = VirtualCpu(VirtualCpuConfig(capacity, queue))
    got = []
    for a, c in zip(arrivals, costs, strict=True):
        ok = cpu.admit(a)
        if ok:
            cpu.charge(c, a)
        got.append(ok)
    assert got == simulate(arrivals, costs, capacity, queue)
    reading = cpu.measure(arrivals[-1] + 10**9, 1000)
    assert reading.pushed == len(arrivals)
    assert reading.dropped == got.count(False)
    assert reading.consumed == got.count(True)  # everything started by the far future
    # overflow episodes: runs of consecutive drops
    runs = sum(1 for k, ok in enumerate(got) if not ok and (k == 0 or got[k - 1]))
    assert reading.overflows == runs


def test_overflow_episodes_tell_one_long_probe_from_a_sustained_excess() -> None:
    """One probe outlasting the queue makes one episode; an excess of many ordinary
    probes makes the queue overflow again and again."""
    long_probe = VirtualCpu(VirtualCpuConfig(capacity=1000.0, queue=2))
    for k in range(20):  # 100 tuples/s; the first costs 200 ms, the others 1 ms
        if long_probe.admit(k * 10):
            long_probe.charge(200.0 if k == 0 else 1.0, k * 10)
    r = long_probe.measure(1000, 1000)
    assert r.dropped > 5 and r.overflows == 1
    excess = VirtualCpu(VirtualCpuConfig(capacity=1000.0, queue=2))
    for k in range(100):  # every tuple costs 12 ms at 100 tuples/s
        if excess.admit(k * 10):
            excess.charge(12.0, k * 10)
    r = excess.measure(1000, 1000)
    assert r.overflows >= 5
    assert excess.measure(2000, 1000).overflows == 0  # counted per interval


def test_beta_and_headroom_under_overload() -> None:
    cpu = VirtualCpu(VirtualCpuConfig(capacity=1000.0, queue=2, utilization=1.0))
    # 100 tuples/s for 1 s, each costs 20 units = 20 ms of a 1000-units/s server
    for k in range(100):
        now = k * 10
        if cpu.admit(now):
            cpu.charge(20.0, now)
    r = cpu.measure(1000, 1000)
    assert r.pushed == 100
    assert r.beta == pytest.approx(r.consumed / 100)
    assert 0.45 <= r.beta <= 0.55  # the server does half the work asked of it
    assert r.headroom == pytest.approx(1000.0 / r.cost)


def test_idle_server_never_drops() -> None:
    cpu = VirtualCpu(VirtualCpuConfig(capacity=1e6, queue=1))
    for t in range(0, 1000, 5):
        assert cpu.admit(t)
        cpu.charge(1.0, t)
    reading = cpu.measure(1000, 1000)
    assert reading.beta == 1.0 and reading.dropped == 0


def test_snapshot_roundtrip_is_exact() -> None:
    cfg = VirtualCpuConfig(capacity=500.0, queue=3)
    mid = VirtualCpu(cfg)
    mid.overflows, mid.last_dropped = 2, True
    back = VirtualCpu.from_snapshot(cfg, mid.snapshot())
    assert (back.overflows, back.last_dropped) == (2, True)
    a, b = VirtualCpu(cfg), None
    decisions = []
    for k in range(60):
        cpu = a if b is None else b
        if k == 30:
            b = VirtualCpu.from_snapshot(cfg, a.snapshot())
            cpu = b
        ok = cpu.admit(k * 7)
        if ok:
            cpu.charge(9.0, k * 7)
        decisions.append(ok)
    ref = VirtualCpu(cfg)
    want = []
    for k in range(60):
        ok = ref.admit(k * 7)
        if ok:
            ref.charge(9.0, k * 7)
        want.append(ok)
    assert decisions == want


def charged_wall_budget() -> WallBudget:
    """Speed-up 2, utilization 0.5; two tuples timed at 0.5 s and 0.25 s by the clock."""
    ticks = iter([0.0, 0.5, 1.0, 1.25])
    wb = WallBudget(WallBudgetConfig(speedup=2.0, utilization=0.5), clock=lambda: next(ticks))
    for now in (0, 100):
        assert wb.admit(now)
        wb.charge(10.0, now)
    return wb


def test_wall_budget_uses_the_injected_clock() -> None:
    wb = charged_wall_budget()
    r = wb.measure(1000, 2000)  # 2 s of stream time / 2 × 0.5 = 0.5 s available
    assert r.beta == pytest.approx(0.5 / 0.75)
    assert r.dropped == 0 and r.pushed == 2


@pytest.mark.parametrize(
    ("overhead", "lag_ratio", "beta"),
    [
        (0.0, None, 0.5 / 0.75),  # the join's own time only
        (0.25, None, 0.5 / 1.0),  # time outside admit→charge counts as spent
        (0.0, 0.5, 0.5 / 0.75),  # well ahead of the latency target: no cap
        (0.0, 4.0, 0.25),  # four times the latency target: β and headroom ≤ 1/4
        (0.25, 1.5, 0.5),  # the CPU reading is the tighter one
    ],
)
def test_wall_budget_batch_overhead_and_lag(overhead: float, lag_ratio: float | None,
                                            beta: float) -> None:
    wb = charged_wall_budget()
    assert wb.timed_total == pytest.approx(0.75)
    wb.observe_batch(overhead, lag_ratio)
    restored = WallBudget.from_snapshot(wb.config, wb.clock, wb.snapshot())
    for budget in (wb, restored):
        r = budget.measure(1000, 2000)
        assert r.beta == pytest.approx(beta) and r.headroom == pytest.approx(beta)
    # the lag cap is read once
    assert wb.measure(2000, 2000).beta == float("inf")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"budget": "virtual", "capacity": None}, "capacity"),
        ({"budget": "wall", "clock": None}, "clock"),
        ({"budget": "cpu"}, "budget"),
    ],
)
def test_make_budget_errors(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"budget": "virtual", "capacity": 1.0, "queue": 1,
                               "utilization": 1.0, "clock": None, "speedup": 1.0}
    args.update(kwargs)
    with pytest.raises(ConfigError, match=field):
        make_budget(**args)  # type: ignore[arg-type]


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="capacity"):
        VirtualCpuConfig(capacity=0.0)
    with pytest.raises(ConfigError, match="queue"):
        VirtualCpuConfig(capacity=1.0, queue=0)
    with pytest.raises(ConfigError, match="speedup"):
        WallBudgetConfig(speedup=0.0)
