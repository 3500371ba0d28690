"""OPT-offline (Das et al. §4.1) as min-cost flow: the paper's example, a brute force,
and OPT as an upper bound of every online eviction policy."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.memory import make_join
from pipeline.operators.memory.opt import opt_offline

EQUI = build_predicate("equi", attribute="v")


def test_the_papers_worked_example_gives_five() -> None:
    """Fig. 3: R = 1,1,1,3,2, S = 2,3,1,1,3, w = 3, M = 2 (one slot each); one R and one S
    tuple per time step, same-step pairs (the top path) for free. OPT misses (r1, s2)
    and (r1, s3) of the exact join's seven results."""
    r, s = [1, 1, 1, 3, 2], [2, 3, 1, 1, 3]
    streams = [x for _ in range(5) for x in (0, 1)]
    tss = [t for t in range(5) for _ in (0, 1)]
    vals = [[v] for pair in zip(r, s, strict=True) for v in pair]
    got = opt_offline(streams, tss, vals, (2, 2), EQUI, 2, "fixed", steps=tss)
    assert (got.results, got.exact, got.same_step) == (5, 7, 1)


@st.composite
def instances(draw: Any) -> tuple[list[int], list[int], list[float], int]:
    n = draw(st.integers(1, 11))
    streams = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    vals = draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=n, max_size=n))
    return streams, list(np.cumsum(gaps)), vals, draw(st.sampled_from([3, 6, 100]))


def brute_force(streams: list[int], tss: list[int], vals: list[float], window: int,
                budget: int, variable: bool) -> int:
    """Every eviction schedule of the one-at-a-time model: probe, then (when the pool is
    full) drop one of the residents or the newcomer."""
    n = len(streams)

    def pool(i: int) -> int:
        return 0 if variable else streams[i]

    @cache
    def best(k: int, stored: frozenset[int]) -> int:
        if k == n:
            return 0
        gain = sum(1 for x in stored if streams[x] != streams[k] and vals[x] == vals[k]
                   and tss[k] - tss[x] <= window)
        mine = {x for x in stored if pool(x) == pool(k)}
        if len(mine) < budget:
            return gain + best(k + 1, stored | {k})
        options = [best(k + 1, stored)]  # refuse the newcomer
        options += [best(k + 1, (stored - {x}) | {k}) for x in mine]
        return gain + max(options)

    return best(0, frozenset())


@settings(max_examples=50, deadline=None)
@given(inst=instances(), budget=st.integers(1, 3), variable=st.booleans())
def test_flow_matches_the_brute_force(inst: tuple[list[int], list[int], list[float], int],
                                      budget: int, variable: bool) -> None:
    streams, tss, vals, window = inst
    m_tuples = budget if variable else 2 * budget
    got = opt_offline(streams, tss, [[v] for v in vals], (window, window), EQUI, m_tuples,
                      "variable" if variable else "fixed")
    assert got.results == brute_force(streams, tss, vals, window, budget, variable)


@settings(max_examples=40, deadline=None)
@given(inst=instances(), budget=st.integers(1, 4), variable=st.booleans(),
       mode=st.sampled_from(["rand", "prob", "life", "lagprob"]), seed=st.integers(0, 3))
def test_opt_bounds_every_online_policy(inst: tuple[list[int], list[int], list[float], int],
                                        budget: int, variable: bool, mode: str,
                                        seed: int) -> None:
    streams, tss, vals, window = inst
    m_tuples = budget if variable else 2 * budget
    alloc = "variable" if variable else "fixed"
    cfg = JoinConfig((window, window), 2, EQUI)
    join = make_join(cfg, MemoryConfig(mode, m_tuples, alloc, seed=seed))
    online = sum(join.process(s, t, q, np.array([v])).count
                 for q, (s, t, v) in enumerate(zip(streams, tss, vals, strict=True)))
    opt = opt_offline(streams, tss, [[v] for v in vals], (window, window), EQUI, m_tuples,
                      alloc)
    assert online <= opt.results <= opt.exact


def test_enough_memory_gives_the_exact_join_and_warmup_is_not_counted() -> None:
    rng = np.random.default_rng(3)
    n = 400
    streams = rng.integers(0, 2, n)
    tss = np.arange(n)
    vals = rng.integers(0, 5, n).astype(float)
    full = opt_offline(streams, tss, vals, (40, 40), EQUI, 200)
    assert full.results == full.exact > 0
    late = opt_offline(streams, tss, vals, (40, 40), EQUI, 200, count_from_step=200)
    assert 0 < late.exact < full.exact
    small = opt_offline(streams, tss, vals, (40, 40), EQUI, 10, "variable")
    assert 0 < small.results < small.exact


def test_band_join() -> None:
    band = build_predicate("band", attribute="v", epsilon=0.5)
    got = opt_offline([0, 1, 1], [0, 1, 2], [[1.0], [1.4], [2.0]], (5, 5), band, 2)
    assert (got.results, got.exact) == (1, 1)


@pytest.mark.parametrize(("args", "match"), [
    ({"streams": [0, 1, 2], "windows_ms": (5, 5, 5)}, "2-way"),
    ({"tss": [3, 1, 2]}, "ts order"),
    ({"predicate": build_predicate("cosine", attribute="k", epsilon=0.5)}, "dense"),
    ({"allocation": "half"}, "allocation"),
])
def test_opt_rejects_what_it_cannot_model(args: dict[str, Any], match: str) -> None:
    kw: dict[str, Any] = {"streams": [0, 1, 0], "tss": [0, 1, 2], "encs": [[1.0]] * 3,
                          "windows_ms": (5, 5), "predicate": EQUI, "max_tuples": 2}
    kw.update(args)
    with pytest.raises(ConfigError, match=match):
        opt_offline(**kw)
