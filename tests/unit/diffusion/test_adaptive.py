"""Adaptive ATR (Gu et al. §2.2–2.6): the epoch log and the adaptive router against a
brute-force m-way join — through master switches, changing segment lengths and
least-loaded placement, every result is produced exactly once (ARCHITECTURE §6)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.diffusion.adaptive import AdaptiveConfig, AdaptiveRouter, default_segment_ms
from pipeline.diffusion.epochs import EpochLog
from pipeline.diffusion.load import KeyLoads
from pipeline.spec.model import parse_spec
from tests.unit.diffusion.test_routing import ResultKey, Tup, brute_join


def owned_join(groups: int, windows: Sequence[int], tuples: Sequence[Tup],
               keys_of: Callable[[Tup], list[int]], owner: Callable[[tuple[int, ...]], int],
               eps: float) -> Counter[ResultKey]:
    """Route, join per key, emit the results each key owns: the multiset over keys."""
    per_key: dict[int, list[Tup]] = {g: [] for g in range(groups)}
    for tup in tuples:
        for key in keys_of(tup):
            per_key[key].append(tup)
    out: Counter[ResultKey] = Counter()
    for key, routed in per_key.items():
        for members, ts in brute_join(routed, windows, "band", eps):
            if owner(ts) == key:
                out[members] += 1
    return out


def _tuples(draw: st.DrawFn, m: int, n: int, lo: int, hi: int) -> list[Tup]:
    seqs = [0] * m
    out: list[Tup] = []
    for _ in range(n):
        s = draw(st.integers(0, m - 1))
        out.append((s, seqs[s], draw(st.integers(lo, hi)), draw(st.integers(0, 6))))
        seqs[s] += 1
    return out


@st.composite
def log_case(draw: st.DrawFn) -> tuple[EpochLog, int, list[Tup], float]:
    """A random plan: epochs with random masters, segment lengths and keys."""
    m = draw(st.integers(2, 4))
    windows = draw(st.lists(st.integers(1, 40), min_size=m, max_size=m))
    groups = draw(st.integers(1, 4))
    log = EpochLog(windows)
    t = draw(st.integers(-20, 0))
    log.open_epoch(t, draw(st.integers(0, m - 1)), draw(st.integers(0, groups - 1)))
    while t < 260:
        if draw(st.integers(0, 5)) == 0:
            log.open_epoch(t, draw(st.integers(0, m - 1)), draw(st.integers(0, groups - 1)))
        t += draw(st.integers(1, 60))
        log.append(t, draw(st.integers(0, groups - 1)))
    n = draw(st.integers(1, 18 if m == 4 else 28))
    eps = draw(st.sampled_from([1.0, 3.0, 10.0]))
    return log, groups, _tuples(draw, m, n, 0, 200), eps


@settings(max_examples=60, deadline=None)
@given(log_case())
def test_any_epoch_log_produces_each_result_exactly_once(
        case: tuple[EpochLog, int, list[Tup], float]) -> None:
    log, groups, tuples, eps = case
    truth = Counter(k for k, _ in brute_join(tuples, log.windows, "band", eps))
    got = owned_join(groups, log.windows, tuples, lambda t: log.keys_of(t[0], t[2]),
                     log.owner, eps)
    assert got == truth


@st.composite
def router_case(draw: st.DrawFn) -> tuple[AdaptiveConfig, list[list[Tup]], list[float], float]:
    m = draw(st.integers(2, 4))
    windows = tuple(draw(st.lists(st.integers(1, 40), min_size=m, max_size=m)))
    cfg = AdaptiveConfig(
        groups=draw(st.integers(1, 4)), windows_ms=windows,
        segment_ms=draw(st.integers(5, 50)), master=draw(st.integers(0, m - 1)),
        segment_keys=draw(st.sampled_from(["round-robin", "least-loaded"])),
        adapt_master=draw(st.booleans()), adapt_interval_ms=draw(st.integers(10, 60)),
        switch_margin=draw(st.sampled_from([0.0, 0.1])), adapt_segment=draw(st.booleans()),
        segment_min_ms=5, segment_max_ms=60, segment_step_ms=draw(st.integers(1, 20)))
    tuples = sorted(_tuples(draw, m, draw(st.integers(1, 18 if m == 4 else 28)), 0, 240),
                    key=lambda t: t[2])
    batches = [[t for t in tuples if b * 30 <= t[2] < (b + 1) * 30] for b in range(8)]
    costs = draw(st.lists(st.floats(0, 100), min_size=8, max_size=8))
    return cfg, batches, costs, draw(st.sampled_from([1.0, 3.0, 10.0]))


def drive(router: AdaptiveRouter, batches: Sequence[Sequence[Tup]], costs: Sequence[float]
          ) -> dict[Tup, list[int]]:
    """Route batch by batch, feeding made-up loads back after each: tuple → keys."""
    g = router.config.groups
    routes: dict[Tup, list[int]] = {}
    acc = np.zeros(g)
    for b, batch in enumerate(batches):
        if batch:
            rows, keys = router.route_batch([t[0] for t in batch], [t[2] for t in batch])
            for r, k in zip(rows.tolist(), keys.tolist(), strict=True):
                routes.setdefault(batch[r], []).append(k)
        acc[b % g] += costs[b]
        router.observe(acc, acc / 2, acc / 3, until=(b + 1) * 30)
    return routes


@settings(max_examples=60, deadline=None)
@given(router_case())
def test_adaptive_router_produces_each_result_exactly_once(
        case: tuple[AdaptiveConfig, list[list[Tup]], list[float], float]) -> None:
    cfg, batches, costs, eps = case
    router = AdaptiveRouter(cfg)
    routes = drive(router, batches, costs)
    tuples = [t for b in batches for t in b]
    truth = Counter(k for k, _ in brute_join(tuples, cfg.windows_ms, "band", eps))
    got = owned_join(cfg.groups, cfg.windows_ms, tuples, lambda t: routes.get(t, []),
                     router.log.owner, eps)
    assert got == truth


@settings(max_examples=40, deadline=None)
@given(router_case())
def test_restart_from_snapshot_routes_as_before(
        case: tuple[AdaptiveConfig, list[list[Tup]], list[float], float]) -> None:
    cfg, batches, costs, _ = case
    whole = drive(AdaptiveRouter(cfg), batches, costs)
    first = AdaptiveRouter(cfg)
    part = drive(first, batches[:4], costs[:4])
    again = AdaptiveRouter.from_snapshot(first.snapshot())
    rest = dict(part)
    acc_first = drive(again, [[]] * 0, [])  # nothing: the restored router is idle
    assert acc_first == {}
    g = cfg.groups
    acc = np.zeros(g)
    for b in range(4):
        acc[b % g] += costs[b]
    for b in range(4, 8):
        batch = batches[b]
        if batch:
            rows, keys = again.route_batch([t[0] for t in batch], [t[2] for t in batch])
            for r, k in zip(rows.tolist(), keys.tolist(), strict=True):
                rest.setdefault(batch[r], []).append(k)
        acc[b % g] += costs[b]
        again.observe(acc, acc / 2, acc / 3, until=(b + 1) * 30)
    assert rest == whole


def test_master_switches_to_the_fast_stream_and_stays_exact() -> None:
    cfg = AdaptiveConfig(groups=3, windows_ms=(20, 20, 20), segment_ms=10, master=0,
                         adapt_master=True, adapt_interval_ms=50)
    router = AdaptiveRouter(cfg)
    rng = np.random.default_rng(1)
    tuples: list[Tup] = []
    for s, rate in ((0, 0.05), (1, 0.4), (2, 0.05)):  # stream 1 is 8x faster
        ts = np.sort(rng.integers(0, 400, size=int(400 * rate)))
        tuples += [(s, q, int(t), int(rng.integers(0, 5))) for q, t in enumerate(ts)]
    tuples.sort(key=lambda t: t[2])
    batches = [[t for t in tuples if b * 25 <= t[2] < (b + 1) * 25] for b in range(16)]
    routes = drive(router, batches, [1.0] * 16)
    assert router.master == 1 and router.switches and router.switches[0][1:] == (0, 1)
    truth = Counter(k for k, _ in brute_join(tuples, cfg.windows_ms, "band", 1.0))
    got = owned_join(3, cfg.windows_ms, tuples, lambda t: routes.get(t, []),
                     router.log.owner, 1.0)
    assert got == truth and sum(truth.values()) > 0


def test_least_loaded_favours_the_fast_key() -> None:
    loads = KeyLoads(2, speeds=(1.0, 4.0))
    loads.observe(cost=[10.0, 30.0], memory=[0, 0], received=[0, 0], until=10)
    assert loads.least_loaded() == 1  # 30/4 < 10/1
    cfg = AdaptiveConfig(groups=2, windows_ms=(5, 5), segment_ms=10,
                         segment_keys="least-loaded", speeds=(1.0, 4.0))
    router = AdaptiveRouter(cfg)
    router.route_batch(np.zeros(50, np.int64), np.arange(0, 500, 10))
    keys = router.log.epochs[0].keys
    assert keys.count(1) > 2 * keys.count(0)


def test_segment_climb_changes_t_within_bounds() -> None:
    cfg = AdaptiveConfig(groups=2, windows_ms=(5, 5), segment_ms=20, adapt_segment=True,
                         adapt_interval_ms=40, segment_min_ms=10, segment_max_ms=40,
                         segment_step_ms=10)
    router = AdaptiveRouter(cfg)
    for b in range(20):
        router.route_batch(np.zeros(4, np.int64), np.arange(b * 40, b * 40 + 40, 10))
        router.observe([b * 3.0, b * 1.0 + (b % 3)], [0, 0], [0, 0], until=(b + 1) * 40)
    lengths = {b - a for ep in router.log.epochs
               for a, b in zip(ep.bounds[1:], ep.bounds[2:], strict=False)}
    assert len(lengths) > 1 and lengths <= {10, 20, 30, 40}


def _spec(job: dict[str, Any]) -> Any:
    return parse_spec({"join": {"streams": ["a", "b", "c"], "windows_ms": [6000, 3000, 9000],
                                "predicate": "band", "attribute": "v", "epsilon": 1.0},
                       "job": job})


def test_default_segment_respects_the_batch_bound() -> None:
    assert default_segment_ms(_spec({"groups": 4, "segment_keys": "least-loaded"})) == 2000
    assert default_segment_ms(_spec({"groups": 4})) == 10_000  # static ATR: unchanged
    assert default_segment_ms(_spec({"groups": 4, "segment_keys": "least-loaded",
                                     "segment_ms": 5000})) == 5000
    cfg = AdaptiveConfig.from_spec(_spec({"groups": 4, "adapt_master": True,
                                          "master_stream": "b"}))
    assert (cfg.master, cfg.segment_ms) == (1, 1000)


@pytest.mark.parametrize(("job", "key"), [
    ({"segment_keys": "random"}, "job.segment_keys"),
    ({"load_weights": [0.5, 0.6, 0.0]}, "job.load_weights"),
    ({"load_weights": [1.0, 0.0]}, "job.load_weights"),
    ({"switch_margin": 1.0}, "job.switch_margin"),
    ({"adapt_interval_ms": 0}, "job.adapt_interval_ms"),
    ({"segment_min_ms": 5000, "segment_max_ms": 1000}, "job.segment_min_ms"),
    ({"adapt_segment": True, "segment_ms": 100_000}, "job.segment_ms"),
    ({"segment_step_ms": 0}, "job.segment_step_ms"),
    ({"routing": "hash", "adapt_master": True}, "job.adapt_master"),
    ({"routing": "gossip"}, "job.routing"),
])
def test_bad_adaptive_keys_name_the_key(job: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        _spec(job)
