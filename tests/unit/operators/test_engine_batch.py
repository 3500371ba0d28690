"""The engine's batch path (engine_batch.py, batchfront.py) against the per-tuple path.

The same events go through ``Engine.process`` one by one and through
``Engine.process_many`` in random chunks: results (ids, in order), counters, metrics
rows and the plug-ins' statistics must agree — for every K policy, with and without
shedding (the virtual CPU and RandomDrop join tuple by tuple inside the batch path; the
wall budget, with a clock that never moves, runs batched).
"""

from __future__ import annotations

from dataclasses import asdict
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from pipeline.operators.contract import PluginEnv
from pipeline.operators.disorder.kslack import KSlack, KSlackConfig
from pipeline.operators.disorder.quality.adwin import Adwin, AdwinConfig
from pipeline.operators.disorder.run_front import kslack_run, sync_run
from pipeline.operators.disorder.synchronizer import Synchronizer, SynchronizerConfig
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events

CASES = [
    ({"mode": "none"}, {"mode": "off"}),
    ({"mode": "fixed", "slack_ms": 60, "interval_ms": 200}, {"mode": "off"}),
    ({"mode": "max", "interval_ms": 200}, {"mode": "off"}),
    ({"mode": "quality", "interval_ms": 200, "period_ms": 2000, "recall": 0.9},
     {"mode": "off"}),
    ({"mode": "fixed", "slack_ms": 40, "interval_ms": 200},
     {"mode": "grubjoin", "budget": "wall", "basic_window_ms": 100,
      "adapt_interval_ms": 500, "shred_rate": 0.3}),
    ({"mode": "quality", "interval_ms": 200, "period_ms": 2000},  # GrubJoin.plan_run
     {"mode": "grubjoin", "budget": "wall", "basic_window_ms": 100,
      "adapt_interval_ms": 500, "shred_rate": 0.0}),
    ({"mode": "quality", "interval_ms": 200, "period_ms": 2000},
     {"mode": "grubjoin", "budget": "virtual", "capacity": 3000.0, "basic_window_ms": 100,
      "adapt_interval_ms": 500, "shred_rate": 0.2}),
    ({"mode": "fixed", "slack_ms": 60, "interval_ms": 200},
     {"mode": "randomdrop", "budget": "virtual", "capacity": 3000.0,
      "adapt_interval_ms": 500}),
]


def _env() -> PluginEnv:
    return PluginEnv(clock=lambda: 0.0, speedup=1.0)


def _engine(disorder: dict[str, Any], shedding: dict[str, Any], predicate: str,
            index: bool = False) -> Engine:
    spec = make_spec(3, predicate, [400, 300, 500], disorder=disorder, shedding=shedding)
    cfg = resolve_engine(spec)
    if index:
        import dataclasses

        cfg = dataclasses.replace(cfg, index=True)
    return Engine(cfg, _env())


@settings(max_examples=30, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 10_000), case=st.integers(0, len(CASES) - 1),
       predicate=st.sampled_from(["band", "equi", "distance"]), index=st.booleans())
def test_process_many_equals_process(seed: int, case: int, predicate: str,
                                     index: bool) -> None:
    disorder, shedding = CASES[case]
    dump = make_dump(seed=seed, m=3, n=150, max_delay=150)
    events = to_events(dump, make_spec(3, predicate, [400, 300, 500]))
    one = _engine(disorder, shedding, predicate, index)
    many = _engine(disorder, shedding, predicate, index)
    want = [r.id for ev in events for r in one.process(ev)] + [r.id for r in one.flush()]
    rng = np.random.default_rng(seed)
    cuts = sorted({0, len(events), *rng.integers(0, len(events), size=4).tolist()})
    got: list[str] = []
    for a, b in pairwise(cuts):
        got += [r.id for r in many.process_many(events[a:b])]
    got += [r.id for r in many.flush()]
    if index and shedding["mode"] == "grubjoin":
        # the indexed cost differs by path, so can GrubJoin's σ estimates and join orders
        # — and with them the order of a probe's results (batchprobe.py)
        got, want = sorted(got), sorted(want)
    assert got == want
    sa, sb = asdict(one.stats), asdict(many.stats)
    if index:  # the batch path charges its own index cost (batchjoin.INDEX_WINDOW_COST)
        for key in ("comparisons", "checks", "cost"):
            sa.pop(key), sb.pop(key)
    assert sa == sb
    assert many.pairs_evaluated >= many.stats.checks or index
    if not index:
        assert one.drain_metrics() == many.drain_metrics()
        assert one.slack.snapshot() == many.slack.snapshot() or disorder["mode"] == "quality"
    if disorder["mode"] == "quality":
        _same_quality(one.slack, many.slack)


def _same_quality(a: Any, b: Any) -> None:
    """The quality policy's statistics after both paths (ADWIN windows, histograms)."""
    for x, y in zip(a.stats.streams, b.stats.streams, strict=True):
        assert list(x._bins) == list(y._bins)
        assert list(x._ksync) == list(y._ksync)
        assert x._adwin.snapshot() == y._adwin.snapshot()
    assert a.stats.local_time == b.stats.local_time
    assert a.profiler.snapshot() == b.profiler.snapshot()
    assert a.monitor.snapshot() == b.monitor.snapshot()
    assert a.joined == b.joined and a.first_ts == b.first_ts


@settings(max_examples=60, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 10_000), k=st.integers(0, 80), m=st.integers(2, 4))
def test_kslack_and_synchronizer_runs_equal_pushes(seed: int, k: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    events = []
    for q in range(int(rng.integers(1, 80))):
        ts = int(rng.integers(0, 400))
        events.append(Event(int(rng.integers(0, m)), q, ts, ts + int(rng.integers(0, 100))))
    events.sort(key=lambda e: e.arrival)
    split = int(rng.integers(0, len(events) + 1))
    one = [KSlack(KSlackConfig(s)) for s in range(m)]
    many = [KSlack(KSlackConfig(s)) for s in range(m)]
    sync1, sync2 = Synchronizer(SynchronizerConfig(m)), Synchronizer(SynchronizerConfig(m))
    want, got = [], []
    for ev in events:
        _, rel = one[ev.stream].push(ev, k)
        for item in rel:
            want += sync1.push(item)
    for part in (events[:split], events[split:]):
        streams = np.array([e.stream for e in part], np.int64)
        ts = np.array([e.ts for e in part], np.int64)
        seqs = np.array([e.seq for e in part], np.int64)
        _, rel, _ = kslack_run(many, part, streams, ts, seqs, k)
        out, _ = sync_run(sync2, rel)
        got += out.items
        assert out.seq.tolist() == [e.seq for e, _ in out.items]
        assert out.delay.tolist() == [d for _, d in out.items]
    assert [(e.stream, e.seq, d) for e, d in got] == [(e.stream, e.seq, d) for e, d in want]
    for a, b in zip(one, many, strict=True):
        assert sorted(a._heap, key=lambda h: (h[0], h[1])) == b._heap
        assert a.local_time == b.local_time and a._counter == b._counter
    assert sync1.sync_time == sync2.sync_time and sync1._counter == sync2._counter
    assert sorted(sync1._heap, key=lambda h: (h[0], h[1])) == sync2._heap
    assert sync1._counts == sync2._counts and sync1._missing == sync2._missing
    assert sync1.flush() == sync2.flush()


@pytest.mark.parametrize("predicate", ["band", "equi"])
def test_flush_and_advance_go_through_the_batch_path(predicate: str) -> None:
    disorder = {"mode": "quality", "interval_ms": 200, "period_ms": 2000, "recall": 0.9}
    dump = make_dump(seed=4, m=3, n=200, max_delay=300)
    events = to_events(dump, make_spec(3, predicate, [400, 300, 500]))
    one = _engine(disorder, {"mode": "off"}, predicate)
    many = _engine(disorder, {"mode": "off"}, predicate)
    want = [r.id for ev in events for r in one.process(ev)]
    want += [r.id for r in one.advance_to(events[-1].arrival + 5_000)] + [
        r.id for r in one.flush()]
    got = [r.id for r in many.process_many(events)]
    got += [r.id for r in many.advance_to(events[-1].arrival + 5_000)] + [
        r.id for r in many.flush()]
    assert got == want


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 10_000), width=st.sampled_from([64, 300, 2000]))
def test_adwin_add_many_equals_adding_one_at_a_time(seed: int, width: int) -> None:
    rng = np.random.default_rng(seed)
    parts = [rng.exponential(float(rng.choice([1.0, 30.0, 300.0])), int(rng.integers(20, 400)))
             .round() for _ in range(6)]  # level shifts, so cuts happen
    values = np.concatenate(parts).tolist()
    cfg = AdwinConfig(max_width=width)
    one, many = Adwin(cfg), Adwin(cfg)
    dropped_one = sum(one.add(v) for v in values)
    cut = int(rng.integers(0, len(values)))
    dropped_many = many.add_many(values[:cut]) + many.add_many(values[cut:])
    assert dropped_one == dropped_many
    assert one.snapshot() == many.snapshot()


@pytest.mark.parametrize("predicate", ["equi", "band"])
def test_long_indexed_runs_equal_process(predicate: str) -> None:
    """The indexed path joins runs of up to MAX_RUN_INDEXED tuples (no run × run matrix):
    one chunk of 3 × 4,000 in-order tuples (max_gap 2 ms, so a 400 ms window holds
    hundreds; keys and values drawn wide) — runs longer than the scan's MAX_RUN — gives
    the per-tuple path's results in its order and its counters."""
    from pipeline.operators.engine.step import MAX_RUN, MAX_RUN_INDEXED

    disorder, shedding = CASES[0]
    dump = make_dump(seed=3, m=3, n=4_000, max_gap=2)
    rng = np.random.default_rng(3)
    for rec in dump:  # a wide key and value domain: a few matches per probe, not hundreds
        rec["a1"], rec["value"] = int(rng.integers(0, 300)), float(rng.uniform(0.0, 300.0))
    events = to_events(dump, make_spec(3, predicate, [400, 300, 500]))
    one = _engine(disorder, shedding, predicate, index=True)
    many = _engine(disorder, shedding, predicate, index=True)
    assert many.step.max_run == MAX_RUN_INDEXED > MAX_RUN
    assert _engine(disorder, shedding, predicate).step.max_run == MAX_RUN
    want = [r.id for ev in events for r in one.process(ev)] + [r.id for r in one.flush()]
    got = [r.id for r in many.process_many(events)] + [r.id for r in many.flush()]
    assert len(want) > 1_000
    assert got == want
    sa, sb = asdict(one.stats), asdict(many.stats)
    for key in ("comparisons", "checks", "cost"):  # the indexed cost differs by path
        sa.pop(key), sb.pop(key)
    assert sa == sb
