"""Adaptive ATR decided per micro-batch (:mod:`pipeline.diffusion.batches`) against a
brute-force join: tuples arrive out of order, each batch is routed by several tasks that
each extend their own copy of the batch's state, results are owned under the state of the
batch that forms them, and every result is still produced exactly once (ARCHITECTURE §6)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.diffusion.adaptive import AdaptiveConfig
from pipeline.diffusion.batches import BatchConfig, BatchRouting, observe_task
from tests.unit.diffusion.test_routing import ResultKey, Tup, brute_join

Case = tuple[BatchConfig, list[list[Tup]], list[int], list[float], float]


@st.composite
def batch_case(draw: st.DrawFn) -> Case:
    m = draw(st.integers(2, 3))
    windows = tuple(draw(st.lists(st.integers(1, 30), min_size=m, max_size=m)))
    cfg = AdaptiveConfig(
        groups=draw(st.integers(2, 4)), windows_ms=windows,
        segment_ms=draw(st.integers(5, 40)), master=draw(st.integers(0, m - 1)),
        segment_keys=draw(st.sampled_from(["round-robin", "least-loaded"])),
        adapt_master=draw(st.booleans()), adapt_interval_ms=draw(st.integers(10, 60)),
        switch_margin=draw(st.sampled_from([0.0, 0.1])), adapt_segment=draw(st.booleans()),
        segment_min_ms=5, segment_max_ms=60, segment_step_ms=draw(st.integers(1, 20)))
    # ahead_ms beyond the data's span: a batch past it is the documented limit
    bcfg = BatchConfig(cfg, ahead_ms=draw(st.sampled_from([300, 3000])),
                       retain_ms=draw(st.sampled_from([0, 60])))
    n = draw(st.integers(1, 12 if m == 3 else 22))
    seqs = [0] * m
    tuples: list[tuple[int, Tup]] = []  # (arrival, tuple)
    for _ in range(n):
        s = draw(st.integers(0, m - 1))
        ts = draw(st.integers(0, 240))
        late = draw(st.sampled_from([0, 0, 0, 5, 25]))  # arrival − event time
        tuples.append((ts + late, (s, seqs[s], ts, draw(st.integers(0, 6)))))
        seqs[s] += 1
    tuples.sort(key=lambda x: x[0])
    batches = [[t for a, t in tuples if b * 30 <= a < (b + 1) * 30] for b in range(10)]
    tasks = [draw(st.integers(1, 3)) for _ in batches]
    costs = draw(st.lists(st.floats(0, 100), min_size=10, max_size=10))
    return bcfg, batches, tasks, costs, draw(st.sampled_from([1.0, 3.0, 10.0]))


def copy(state: BatchRouting) -> BatchRouting:
    """What a task reads: the state through its JSON file."""
    return BatchRouting.from_snapshot(json.loads(json.dumps(state.snapshot())))


def run(bcfg: BatchConfig, batches: Sequence[Sequence[Tup]], tasks: Sequence[int],
        costs: Sequence[float]) -> tuple[dict[Tup, set[int]], list[BatchRouting]]:
    """Route batch by batch, each by ``tasks[b]`` tasks on their own copies; → each
    tuple's keys and the state of every batch."""
    g = bcfg.adaptive.groups
    state = BatchRouting.initial(bcfg)
    states: list[BatchRouting] = []
    routes: dict[Tup, set[int]] = {}
    acc = np.zeros(g)
    for b, batch in enumerate(batches):
        states.append(state)
        observed = []
        for part in range(tasks[b]):
            mine = [t for i, t in enumerate(batch) if i % tasks[b] == part]
            own = copy(state)
            s, ts = [t[0] for t in mine], [t[2] for t in mine]
            if mine:
                rows, keys = own.route(s, ts)
                for r, k in zip(rows.tolist(), keys.tolist(), strict=True):
                    routes.setdefault(mine[r], set()).add(k)
            horizon = own.router.log.horizon if own.router is not None else None
            observed.append(observe_task(bcfg, own, s, ts, horizon))
        acc[b % g] += costs[b]
        usage = {k: [float(acc[k]), float(acc[k]) / 2, float(acc[k]) / 3] for k in range(g)}
        state = state.step(observed, usage)
    return routes, states


def owned(bcfg: BatchConfig, batches: Sequence[Sequence[Tup]], routes: dict[Tup, set[int]],
          states: Sequence[BatchRouting], eps: float) -> Counter[ResultKey]:
    """Join per key; a result is formed in the batch of its last member and emitted by
    the key that batch's state owns it by."""
    batch_of = {t: b for b, batch in enumerate(batches) for t in batch}
    own = [copy(s) for s in states]
    out: Counter[ResultKey] = Counter()
    for key in range(bcfg.adaptive.groups):
        mine = [t for t, keys in routes.items() if key in keys]
        for members, ts in brute_join(mine, bcfg.adaptive.windows_ms, "band", eps):
            formed = max(batch_of[(s, q, *rest)] for s, q, *rest in _tuples(members, mine))
            if int(own[formed].owners([list(ts)])[0]) == key:
                out[members] += 1
    return out


def _tuples(members: ResultKey, pool: Sequence[Tup]) -> list[Tup]:
    index = {(t[0], t[1]): t for t in pool}
    return [index[m] for m in members]


@settings(max_examples=40, deadline=None)
@given(batch_case())
def test_batch_routing_produces_each_result_exactly_once(case: Case) -> None:
    bcfg, batches, tasks, costs, eps = case
    routes, states = run(bcfg, batches, tasks, costs)
    tuples = [t for b in batches for t in b]
    truth = Counter(k for k, _ in brute_join(tuples, bcfg.adaptive.windows_ms, "band", eps))
    assert owned(bcfg, batches, routes, states, eps) == truth


@settings(max_examples=25, deadline=None)
@given(batch_case())
def test_replays_agree(case: Case) -> None:
    """A replay (the same input cut into the same tasks, the same usage) routes as
    before: the states are a function of them."""
    bcfg, batches, tasks, costs, _ = case
    routes, states = run(bcfg, batches, tasks, costs)
    again, states_again = run(bcfg, batches, tasks, costs)
    assert [s.snapshot() for s in states_again] == [s.snapshot() for s in states]
    assert again == routes


def test_master_switch_in_the_second_batch_on() -> None:
    """Stream 1 is 8× faster: from the batch after the first interval, the log's master
    is stream 1, and the results stay exact."""
    cfg = AdaptiveConfig(groups=2, windows_ms=(20, 20, 20), segment_ms=10, master=0,
                         adapt_master=True, adapt_interval_ms=50, segment_keys="least-loaded")
    bcfg = BatchConfig(cfg, ahead_ms=500, retain_ms=40)
    rng = np.random.default_rng(3)
    tuples: list[Tup] = []
    for s, rate in ((0, 0.05), (1, 0.4), (2, 0.05)):
        ts = np.sort(rng.integers(0, 400, size=int(400 * rate)))
        tuples += [(s, q, int(t), int(rng.integers(0, 5))) for q, t in enumerate(ts)]
    tuples.sort(key=lambda t: t[2])
    batches = [[t for t in tuples if b * 25 <= t[2] < (b + 1) * 25] for b in range(16)]
    routes, states = run(bcfg, batches, [2] * 16, [1.0] * 16)
    last = states[-1]
    assert last.router is not None and last.router.master == 1
    assert last.router.switches and last.router.switches[0][1:] == (0, 1)
    truth = Counter(k for k, _ in brute_join(tuples, cfg.windows_ms, "band", 1.0))
    assert owned(bcfg, batches, routes, states, 1.0) == truth and sum(truth.values()) > 0


def test_far_future_tuple_does_not_extend_the_log() -> None:
    cfg = AdaptiveConfig(groups=2, windows_ms=(10, 10), segment_ms=10)
    bcfg = BatchConfig(cfg, ahead_ms=100, retain_ms=20)
    s1 = BatchRouting.initial(bcfg).step([observe_task(bcfg, BatchRouting.initial(bcfg),
                                                       [0, 1], [5, 8], None)], {})
    own = copy(s1)
    rows, _ = own.route([0, 1], [20, 10**12])
    assert own.router is not None and own.router.log.horizon is not None
    assert own.router.log.horizon < 200 and sorted(set(rows.tolist())) == [0, 1]


def snapshot_roundtrip(state: BatchRouting) -> dict[str, Any]:
    return BatchRouting.from_snapshot(state.snapshot()).snapshot()


def test_snapshot_roundtrip() -> None:
    bcfg = BatchConfig(AdaptiveConfig(groups=3, windows_ms=(10, 20), segment_ms=5,
                                      adapt_master=True), ahead_ms=50, retain_ms=10)
    s = BatchRouting.initial(bcfg)
    s = s.step([observe_task(bcfg, s, [0, 1, 1], [1, 2, 30], None)], {1: [3.0, 1.0, 2.0]})
    assert snapshot_roundtrip(s) == s.snapshot()
