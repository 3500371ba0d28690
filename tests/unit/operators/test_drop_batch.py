"""The drop baselines on the engine's batch path (``admit_some``/``charge_some``,
engine_batch.py) against their tuple-by-tuple path.

``taildrop``, ``randomdrop`` and ``randomdrop-static`` on the wall clock: the same events
go through ``Engine.process`` one by one and through ``Engine.process_many`` in random
chunks. After each chunk both budgets are told the same Spark-like batch overhead and lag
(:meth:`WallBudget.observe_batch`), so the queue fills and the throttle moves without
any clock: the clock never moves inside a call, so a run's measured time is zero on both
paths and the decisions may not differ at all. Same seed → the same tuples kept (random
and queue drops), the same results in the same order, the same metrics rows and the
same engine state but for the join's stored rows, which the batch join expires at other
moments, and the static drop's wall-fit sums, which are per timed unit (a tuple or a
run). On the virtual CPU the batch path admits
tuple by tuple, which must give the same too.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from pipeline.operators.budget.queue import queue_admit_run, queue_charge_run
from pipeline.operators.budget.wall import WallQueue, WallQueueConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.engine.engine import Engine
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events

MODES = ("taildrop", "randomdrop", "randomdrop-static")
WINDOWS = [400, 300, 500]


def _engine(mode: str, budget: str, predicate: str, seed: int,
            result_us: float = 0.0) -> Engine:
    shedding: dict[str, Any] = {"mode": mode, "budget": budget, "adapt_interval_ms": 300,
                                "utilization": 0.8, "seed": seed, "result_us": result_us}
    if budget == "virtual":
        shedding["capacity"] = 4_000.0
    if mode != "randomdrop":
        shedding["queue_ms"] = 150
    if mode == "randomdrop-static":
        shedding["warmup_ms"] = 600
    spec = make_spec(3, predicate, WINDOWS, shedding=shedding,
                     disorder={"mode": "fixed", "slack_ms": 40, "interval_ms": 200})
    return Engine(resolve_engine(spec), PluginEnv(clock=lambda: 0.0, speedup=1.0))


def _without_fit(snap: Any) -> Any:
    """The engine snapshot without the static drop's wall-fit sums (module docstring) and
    the join's basic windows (the batch join expires rows at other moments; which tuples
    were joined is pinned by the results and the counters)."""
    if isinstance(snap, dict):
        return {k: _without_fit(v) for k, v in snap.items() if k not in ("fit", "windows")}
    if isinstance(snap, list | tuple):
        return [_without_fit(v) for v in snap]
    if isinstance(snap, np.ndarray):
        return snap.tolist()
    return snap


def _observe(eng: Engine, overhead_s: float, lag: float | None) -> None:
    budget = eng.shedder.budget  # type: ignore[attr-defined]
    if hasattr(budget, "observe_batch"):
        budget.observe_batch(overhead_s, lag)


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 10_000), mode=st.sampled_from(MODES),
       budget=st.sampled_from(["wall", "wall", "virtual"]),
       predicate=st.sampled_from(["band", "equi"]),
       overheads=st.lists(st.floats(0.0, 0.6), min_size=6, max_size=6),
       lags=st.lists(st.one_of(st.none(), st.floats(0.2, 4.0)), min_size=6, max_size=6))
def test_batch_path_keeps_the_same_tuples(seed: int, mode: str, budget: str, predicate: str,
                                          overheads: list[float],
                                          lags: list[float | None]) -> None:
    dump = make_dump(seed=seed, m=3, n=220, max_gap=12, max_delay=120)
    events = to_events(dump, make_spec(3, predicate, WINDOWS))
    one = _engine(mode, budget, predicate, seed)
    many = _engine(mode, budget, predicate, seed)
    rng = np.random.default_rng(seed)
    cuts = sorted({0, len(events), *rng.integers(0, len(events), size=5).tolist()})
    want: list[str] = []
    got: list[str] = []
    for (a, b), over, lag in zip(pairwise(cuts), overheads, lags, strict=False):
        for ev in events[a:b]:
            want += [r.id for r in one.process(ev)]
        got += [r.id for r in many.process_many(events[a:b])]
        _observe(one, over, lag)
        _observe(many, over, lag)
    want += [r.id for r in one.flush()]
    got += [r.id for r in many.flush()]
    assert got == want
    assert one.stats == many.stats
    assert one.drain_metrics() == many.drain_metrics()
    assert _without_fit(one.snapshot()) == _without_fit(many.snapshot())


@pytest.mark.parametrize("mode", MODES)
def test_the_wall_baselines_run_batched_and_drop(mode: str) -> None:
    """The batch path is really taken on the wall clock (no per-tuple admit), and the
    fixture drops — random drops for the random modes, queue drops for the queued ones."""
    dump = make_dump(seed=3, m=3, n=400, max_gap=12, max_delay=120)
    events = to_events(dump, make_spec(3, "band", WINDOWS))
    eng = _engine(mode, "wall", "band", 3)

    def no_admit(*args: Any) -> bool:
        raise AssertionError("tuple-by-tuple admit on the batch path")

    eng.shedder.admit = no_admit  # type: ignore[method-assign]
    step = len(events) // 8
    rows: list[dict[str, Any]] = []
    for a in range(0, len(events), step):
        eng.process_many(events[a : a + step])
        _observe(eng, 0.5, 2.0)
        rows += eng.drain_metrics()
    assert eng.stats.dropped > 0
    shed = [r for r in rows if r["source"] == "shedding"]
    if mode != "taildrop":
        assert sum(r["random_drops"] for r in shed) > 0
    if mode != "randomdrop":
        assert sum(r["queue_drops"] for r in shed) > 0


@settings(max_examples=60, deadline=None)
@given(nows=st.lists(st.integers(0, 2_000), min_size=1, max_size=60),
       busy=st.floats(0.0, 3_000.0), service=st.floats(0.0, 80.0),
       offered=st.lists(st.booleans(), min_size=60, max_size=60))
def test_queue_run_equals_admit_and_charge(nows: list[int], busy: float, service: float,
                                           offered: list[bool]) -> None:
    """:func:`queue_admit_run` + :func:`queue_charge_run` against ``WallQueue.admit`` /
    ``charge`` per tuple, with a clock that moves ``service`` ms of modelled time per
    tuple on the per-tuple side and the same total over the run on the batch side: the
    batch decisions use the predicted ``service`` and must match."""
    nows_arr = np.array(sorted(nows), np.int64)
    mask = np.array(offered[: len(nows)], bool)
    cfg = WallQueueConfig(speedup=1.0, utilization=1.0, bound_ms=400.0)
    t1 = [0.0]
    t2 = [0.0]
    one = WallQueue(cfg, lambda: t1[0])
    many = WallQueue(cfg, lambda: t2[0])
    one.busy_until = many.busy_until = busy
    kept_one = []
    for now, go in zip(nows_arr.tolist(), mask.tolist(), strict=True):
        if not go:
            kept_one.append(False)
            continue
        ok = one.admit(now)
        kept_one.append(ok)
        if ok:
            t1[0] += service / 1000.0
            one.charge(1.0, now)
    before = many.last_now
    kept = queue_admit_run(many, nows_arr, service, mask)
    assert kept.tolist() == kept_one
    t2[0] += service / 1000.0 * int(kept.sum())
    queue_charge_run(many, np.ones(int(kept.sum())), nows_arr[kept], before)
    for key in ("pushed", "admitted", "dropped", "overflows", "last_dropped", "cost"):
        assert getattr(one, key) == getattr(many, key), key
    assert one.busy_until == pytest.approx(many.busy_until)
    assert one.last_now == many.last_now


@settings(max_examples=300, deadline=None)
@given(gaps=st.lists(st.integers(0, 20), min_size=1, max_size=80),
       start=st.sampled_from([0, 1_700_000_000_000]), busy=st.floats(-100.0, 260.0),
       last=st.floats(-500.0, 500.0), service=st.floats(0.0, 30.0),
       offered=st.lists(st.booleans(), min_size=80, max_size=80))
@example(gaps=[0] * 8, start=0, busy=0.0, last=0.0, service=30.0, offered=[True] * 80)
@example(gaps=[0] * 7, start=1_700_000_000_000, busy=0.0, last=0.0, service=30.0,
         offered=[True] * 80)  # the 8th tuple would wait 210 ms > 200, the 7th 180
def test_queue_admit_run_closed_form_equals_its_loop(
        gaps: list[int], start: int, busy: float, last: float, service: float,
        offered: list[bool]) -> None:
    """The all-admitted decision taken at once (``_admits_all``'s closed form of the
    busy-until recurrence) against the tuple loop it short-cuts, on epoch-sized clocks
    too: the same mask and the same counters; and the short cut is taken whenever the
    loop admitted everything with room to spare."""
    from pipeline.operators.budget import queue as queue_mod

    nows = start + np.cumsum(np.array(gaps, np.int64))
    mask = np.array(offered[: len(gaps)], bool)
    cfg = WallQueueConfig(speedup=1.0, utilization=1.0, bound_ms=200.0)
    fast, slow = WallQueue(cfg, lambda: 0.0), WallQueue(cfg, lambda: 0.0)
    for q in (fast, slow):
        q.busy_until, q.last_now = start + busy, start + last
    shortcut = queue_mod._admits_all(fast, nows[mask], service)
    kept = queue_admit_run(fast, nows, service, mask)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(queue_mod, "_admits_all", lambda *_: False)
        kept_loop = queue_admit_run(slow, nows, service, mask)
    assert kept.tolist() == kept_loop.tolist()
    for key in ("pushed", "admitted", "dropped", "overflows", "last_dropped", "last_now"):
        assert getattr(fast, key) == getattr(slow, key), key
    if shortcut:
        assert kept.tolist() == mask.tolist()
    # the loop's own busy-until before each offered tuple, with every one admitted
    b, lt, worst = start + busy, start + last, -np.inf
    for now in nows[mask].tolist():
        worst = max(worst, b - now)
        lt = max(lt, float(now))
        b = max(b, lt) + service
    if worst <= cfg.bound_ms - 1.0:
        assert shortcut
    if worst > cfg.bound_ms:
        assert not shortcut


@pytest.mark.parametrize("mode", MODES)
def test_priced_results_fill_the_wall_budget(mode: str) -> None:
    """``[shedding] result_us``: with a clock that never moves, the measured time is zero,
    so the unpriced engine never drops; each result found is charged result_us
    (WallBudget.charge_results) and the same input is shed."""
    dump = make_dump(seed=5, m=3, n=400, max_gap=12, max_delay=120)
    events = to_events(dump, make_spec(3, "band", WINDOWS))
    free = _engine(mode, "wall", "band", 5)
    priced = _engine(mode, "wall", "band", 5, result_us=2_000.0)
    budget = priced.shedder.budget  # type: ignore[attr-defined]
    charged: list[float] = []
    pay = budget.charge_results

    def spy(n: int, seconds_each: float) -> None:
        charged.append(n * seconds_each)
        pay(n, seconds_each)

    budget.charge_results = spy
    priced.process_many(events)
    free.process_many(events)
    assert priced.stats.results > 0 and budget.timed_total == 0.0
    assert sum(charged) == pytest.approx(priced.stats.results * 2_000e-6)
    assert free.stats.dropped == 0
    assert priced.stats.dropped > 0
