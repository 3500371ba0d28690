"""Coordinated tuple routing (Gu et al. §3–4) against a brute-force m-way join: tuples are
stored on their segment's first hop, each prober walks its segment's path and every hop
host joins only the slots it was assigned — each result exactly once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.diffusion.ctr import CTRRouter, greedy_cover
from pipeline.diffusion.load import KeyLoads
from tests.unit.diffusion.test_routing import ResultKey, Tup, brute_join


def _pair_ok(a: Tup, b: Tup, windows: Sequence[int], eps: float) -> bool:
    return (a[2] - windows[b[0]] <= b[2] <= a[2] + windows[a[0]]
            and abs(a[3] - b[3]) <= eps)


def ctr_join(router: CTRRouter, batches: Sequence[Sequence[Tup]], eps: float,
             usage: Sequence[Sequence[float]] = ()) -> Counter[ResultKey]:
    """Route batch by batch; probers walk their paths over what each host stores."""
    order = {t: n for n, t in enumerate(sorted((t for b in batches for t in b),
                                               key=lambda t: (t[2], t[0], t[1])))}
    stored: dict[int, list[Tup]] = {h: [] for h in range(router.groups)}
    out: Counter[ResultKey] = Counter()
    T, windows = router.T, router.windows
    for b, batch in enumerate(batches):
        if b < len(usage):  # what the hosts report between batches: any loads will do
            router.loads.observe(usage[b], [0.0] * router.groups, [0.0] * router.groups,
                                 b * 25)
        if not batch:
            continue
        rows, hosts = router.route(np.asarray([t[0] for t in batch]),
                                   np.asarray([t[2] for t in batch]))
        for r, h in zip(rows.tolist(), hosts.tolist(), strict=True):
            stored[h].append(batch[r])
        for x in batch:
            path = router.paths[(x[0], x[2] // T)]
            partial: list[tuple[Tup, ...]] = [(x,)]
            for hop in path.hops:
                nxt = []
                for p in partial:
                    for h in hop.hosts:
                        for y in stored[h]:
                            if (y[0] == hop.stream and hop.assign.get(y[2] // T) == h
                                    and order[y] < order[x]
                                    and all(_pair_ok(y, z, windows, eps)
                                            and _pair_ok(z, y, windows, eps) for z in p)):
                                nxt.append((*p, y))
                partial = nxt
            for p in partial:
                out[tuple(sorted((t[0], t[1]) for t in p))] += 1
    return out


@st.composite
def ctr_case(draw: st.DrawFn
             ) -> tuple[CTRRouter, list[list[Tup]], float, list[list[float]]]:
    m = draw(st.integers(2, 4))
    windows = draw(st.lists(st.integers(1, 40), min_size=m, max_size=m))
    groups = draw(st.integers(1, 4))
    loads = KeyLoads(groups, recent_ms=draw(st.sampled_from([None, 25, 60])))
    router = CTRRouter(groups, windows, draw(st.integers(3, 30)), loads,
                       spread=draw(st.sampled_from([0.0, 0.5, 1.0])))
    grows = st.lists(st.floats(0, 50), min_size=groups, max_size=groups)
    usage = np.cumsum(draw(st.lists(grows, max_size=9)) or np.zeros((0, groups)),
                      axis=0).tolist()
    seqs = [0] * m
    tuples: list[Tup] = []
    for _ in range(draw(st.integers(1, 18 if m == 4 else 28))):
        s = draw(st.integers(0, m - 1))
        tuples.append((s, seqs[s], draw(st.integers(0, 200)), draw(st.integers(0, 6))))
        seqs[s] += 1
    tuples.sort(key=lambda t: (t[2], t[0], t[1]))
    batches = [[t for t in tuples if b * 25 <= t[2] < (b + 1) * 25] for b in range(9)]
    return router, batches, draw(st.sampled_from([1.0, 3.0, 10.0])), usage


@settings(max_examples=60, deadline=None)
@given(ctr_case())
def test_ctr_produces_each_result_exactly_once(
        case: tuple[CTRRouter, list[list[Tup]], float, list[list[float]]]) -> None:
    router, batches, eps, usage = case
    tuples = [t for b in batches for t in b]
    truth = Counter(tuple(sorted(k)) for k, _ in brute_join(tuples, router.windows, "band",
                                                            eps))
    assert ctr_join(router, batches, eps, usage) == truth


def test_recent_loads_forget_usage_older_than_the_horizon() -> None:
    since_start, recent = KeyLoads(2), KeyLoads(2, recent_ms=100)
    for loads in (since_start, recent):
        loads.observe([100.0, 0.0], [0, 0], [0, 0], until=100)
        loads.observe([100.0, 50.0], [0, 0], [0, 0], until=300)
    assert since_start.least_loaded() == 1  # 100 against 50 since the start
    assert recent.least_loaded() == 0  # the last 100 ms: 0 against 50
    again = KeyLoads.from_snapshot(recent.snapshot())
    assert again.values().tolist() == recent.values().tolist()
    assert "recent_ms" not in since_start.snapshot()  # the adaptive router's format


def test_the_estimate_charges_the_hosts_that_store_and_join() -> None:
    router = CTRRouter(3, (100, 100), 50, KeyLoads(3))
    router.rates = [0.1, 0.2]  # tuples per ms
    for slot in range(4):
        router.place_slot(slot)
    path = router.paths[(0, 3)]
    est = router.estimate(0, path)
    assert set(path.hops[0].hosts) | set(path.hops[0].assign.values()) == set(est)
    stored = 0.1 * 50
    per_slot = stored * 0.2 * 50
    assert sum(est.values()) == pytest.approx(
        stored * len(path.hops[0].hosts) + per_slot * len(path.hops[0].assign))


def test_greedy_cover_prefers_light_hosts_covering_more() -> None:
    holders = {0: [0, 1], 1: [1], 2: [1, 2], 3: [2]}
    load = np.array([1.0, 1.0, 1.0])
    chosen = greedy_cover([0, 1, 2, 3], holders, load)
    assert set(chosen) == {0, 1, 2, 3} and chosen[1] == 1 and chosen[3] == 2
    heavy = greedy_cover([0], {0: [0, 1]}, np.array([5.0, 1.0]))
    assert heavy == {0: 1}
