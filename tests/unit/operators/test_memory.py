"""Memory-bounded joins (Das et al.): exactness at full memory, the bound, snapshots."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.memory import BoundedJoin, make_join

MODES = ("rand", "prob", "life", "lagprob")
Arrival = tuple[int, int, float]  # stream, ts, value


def _config(m: int, window: int, kind: str = "equi") -> JoinConfig:
    pred = build_predicate(kind, attribute="v", epsilon=1.0 if kind == "band" else 0.0)
    return JoinConfig(tuple(window for _ in range(m)), max(1, window // 3), pred)


def _run(join: MWayJoin, arrivals: list[Arrival], check: Any = None) -> set[tuple[int, ...]]:
    out: set[tuple[int, ...]] = set()
    for seq, (s, ts, v) in enumerate(arrivals):
        res = join.process(s, ts, seq, np.array([v]))
        out |= {tuple(int(q) for q in row) for row in res.seqs}
        if check is not None:
            check(join)
    return out


@st.composite
def inputs(draw: Any, max_m: int = 3) -> tuple[int, int, list[Arrival]]:
    """m streams, a window, and arrivals: mostly in ts order, some late."""
    m = draw(st.integers(2, max_m))
    window = draw(st.sampled_from([5, 12, 30]))
    n = draw(st.integers(1, 45))
    ts = 0
    arrivals: list[Arrival] = []
    for _ in range(n):
        ts += draw(st.integers(0, 4))
        late = draw(st.integers(0, 8))
        arrivals.append((draw(st.integers(0, m - 1)), max(0, ts - (late if late > 6 else 0)),
                         float(draw(st.integers(0, 4)))))
    return m, window, arrivals


def _live_peak(cfg: JoinConfig, arrivals: list[Arrival]) -> tuple[list[int], int]:
    """Per stream and in total, the most tuples the unbounded join must keep at once."""
    join = MWayJoin(cfg)
    peak = [0] * cfg.m
    total = 0
    for seq, (s, ts, v) in enumerate(arrivals):
        join.process(s, ts, seq, np.array([v]))
        live = [w.count_from(join.join_time - cfg.windows[j]) for j, w in enumerate(join.windows)]
        peak = [max(a, b) for a, b in zip(peak, live, strict=True)]
        total = max(total, sum(live))
    return peak, total


@settings(max_examples=40, deadline=None)
@given(data=inputs(), mode=st.sampled_from(MODES), variable=st.booleans(),
       kind=st.sampled_from(["equi", "band"]))
def test_full_memory_gives_the_exact_join(data: tuple[int, int, list[Arrival]], mode: str,
                                          variable: bool, kind: str) -> None:
    m, window, arrivals = data
    cfg = _config(m, window, kind)
    peak, total = _live_peak(cfg, arrivals)
    budget = max(total, 1) if variable else m * max(max(peak), 1)
    mem = MemoryConfig(mode, budget, "variable" if variable else "fixed", seed=3)
    bounded = make_join(cfg, mem)
    assert _run(bounded, arrivals) == _run(MWayJoin(cfg), arrivals)
    assert isinstance(bounded, BoundedJoin)
    assert bounded.memory.metrics()["evictions"] == 0


@settings(max_examples=40, deadline=None)
@given(data=inputs(), mode=st.sampled_from(MODES), variable=st.booleans(),
       budget=st.integers(2, 9), stats_window=st.sampled_from([0, 10]))
def test_windows_never_exceed_the_budget(data: tuple[int, int, list[Arrival]], mode: str,
                                         variable: bool, budget: int,
                                         stats_window: int) -> None:
    m, window, arrivals = data
    cfg = _config(m, window)
    mem = MemoryConfig(mode, max(budget, m), "variable" if variable else "fixed",
                       stats_window_ms=stats_window, seed=1)
    bounded = make_join(cfg, mem)
    assert isinstance(bounded, BoundedJoin)
    per = mem.max_tuples // m  # type: ignore[operator]

    def check(join: MWayJoin) -> None:
        sizes = [w.size() for w in join.windows]
        if variable:
            assert sum(sizes) <= mem.max_tuples  # type: ignore[operator]
        else:
            assert max(sizes) <= per
        assert sizes == [sum(len(bw) for bw in w.bws.values()) for w in join.windows]
        assert bounded.memory.window_tuples() >= sizes  # the policy's count bounds the rows

    got = _run(bounded, arrivals, check)
    assert got <= _run(MWayJoin(cfg), arrivals)  # precision 1: only true results


@settings(max_examples=25, deadline=None)
@given(data=inputs(), mode=st.sampled_from(MODES), variable=st.booleans(),
       split=st.floats(0.0, 1.0))
def test_snapshot_restore_mid_stream_changes_nothing(
        data: tuple[int, int, list[Arrival]], mode: str, variable: bool, split: float) -> None:
    m, window, arrivals = data
    cfg = _config(m, window)
    mem = MemoryConfig(mode, 2 * m, "variable" if variable else "fixed", seed=5)
    whole = make_join(cfg, mem)
    want = _run(whole, arrivals)
    cut = int(split * len(arrivals))
    first = make_join(cfg, mem)
    got = _run(first, arrivals[:cut])
    blob = pickle.dumps(first.snapshot())
    again = BoundedJoin.restore(cfg, mem, pickle.loads(blob))
    rest: set[tuple[int, ...]] = set()
    for seq, (s, ts, v) in enumerate(arrivals[cut:], start=cut):
        res = again.process(s, ts, seq, np.array([v]))
        rest |= {tuple(int(q) for q in row) for row in res.seqs}
    assert got | rest == want
    assert isinstance(whole, BoundedJoin)
    assert again.memory.metrics() == whole.memory.metrics()
    assert [w.size() for w in again.windows] == [w.size() for w in whole.windows]


def test_prob_evicts_the_value_rarest_on_the_other_stream() -> None:
    cfg = _config(2, 1000)
    join = make_join(cfg, MemoryConfig("prob", 2, "fixed"))  # one tuple per stream
    # stream 1 sees value 7 often, value 3 once
    for seq, v in enumerate([7.0, 7.0, 7.0, 3.0]):
        join.process(1, seq, 100 + seq, np.array([v]))
    join.process(0, 10, 0, np.array([3.0]))  # rare partner value
    join.process(0, 11, 1, np.array([7.0]))  # common one: evicts the value-3 tuple
    stored = set(join.windows[0].bws[0].seq.view().tolist())
    assert stored == {1}
    join.process(0, 12, 2, np.array([3.0]))  # the newcomer itself is the least likely
    assert set(join.windows[0].bws[0].seq.view().tolist()) == {1}


def test_prob_ties_evict_the_older_tuple() -> None:
    cfg = _config(2, 1000)
    join = make_join(cfg, MemoryConfig("prob", 4, "fixed"))
    join.process(0, 0, 0, np.array([5.0]))
    join.process(0, 1, 1, np.array([5.0]))
    join.process(0, 2, 2, np.array([5.0]))
    assert set(join.windows[0].bws[0].seq.view().tolist()) == {1, 2}


def test_prob_ties_evict_the_tuple_that_expires_first() -> None:
    """Equal priorities in a shared pool over unequal windows: the tuple with the least
    lifetime left goes, even when it arrived later (with equal windows that is the
    older arrival, the paper's rule)."""
    cfg = JoinConfig((1000, 100), 50, build_predicate("equi", attribute="v"))
    join = make_join(cfg, MemoryConfig("prob", 2, "variable"))
    assert isinstance(join, BoundedJoin)
    join.process(0, 0, 0, np.array([5.0]))  # expires at 1000
    join.process(1, 10, 1, np.array([6.0]))  # expires at 110
    join.process(0, 20, 2, np.array([7.0]))  # no value seen on a partner: all tie
    mem = join.memory
    assert mem.window_tuples() == [2, 0]
    assert sorted(mem.res[0].seq[: mem.res[0].n].tolist()) == [0, 2]
    assert mem.evicted.tolist() == [0, 1]


def test_life_prefers_the_longer_remaining_lifetime() -> None:
    cfg = _config(2, 100)
    join = make_join(cfg, MemoryConfig("life", 4, "fixed"))
    for seq in range(3):
        join.process(1, seq, 100 + seq, np.array([1.0]))
    join.process(0, 10, 0, np.array([1.0]))
    join.process(0, 60, 1, np.array([1.0]))
    join.process(0, 61, 2, np.array([1.0]))  # same value: the oldest has the least time left
    assert sorted(q for w in join.windows[0].bws.values() for q in w.seq.view().tolist()) == [
        1, 2]


def test_rand_is_reproducible_from_the_seed() -> None:
    cfg = _config(2, 50)
    rng = np.random.default_rng(0)
    arrivals = [(int(rng.integers(2)), t, float(rng.integers(3))) for t in range(200)]
    a = _run(make_join(cfg, MemoryConfig("rand", 10, seed=4)), arrivals)
    b = _run(make_join(cfg, MemoryConfig("rand", 10, seed=4)), arrivals)
    c = _run(make_join(cfg, MemoryConfig("rand", 10, seed=5)), arrivals)
    assert a == b != c


def test_lagprob_keeps_tuples_that_have_not_met_their_lagged_partner() -> None:
    """Stream 1 leads stream 0 by 50 ms: a stream-1 tuple is matched only at age ≈ 50."""
    cfg = JoinConfig((100, 100), 10, build_predicate("band", attribute="v", epsilon=0.5))
    arrivals: list[Arrival] = []
    for t in range(0, 4000, 2):
        arrivals.append((1, t, float(t % 997)))
        arrivals.append((0, t, float((t - 50) % 997)))
    budget = 2 * 15  # 15 of the ~50 stream-1 tuples of a window
    got = {mode: len(_run(make_join(cfg, MemoryConfig(mode, budget)), arrivals))
           for mode in ("prob", "lagprob")}
    assert got["lagprob"] >= 1.5 * got["prob"]


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"mode": "prob"}, "memory.max_tuples"),
    ({"mode": "prob", "max_tuples": 0}, "memory.max_tuples"),
    ({"mode": "fast", "max_tuples": 5}, "memory.mode"),
    ({"mode": "rand", "max_tuples": 5, "allocation": "half"}, "memory.allocation"),
    ({"mode": "rand", "max_tuples": 5, "stats_window_ms": -1}, "memory.stats_window_ms"),
    ({"mode": "rand", "max_tuples": 5, "seed": -1}, "memory.seed"),
])
def test_bad_memory_config_names_the_key(kwargs: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        MemoryConfig(**kwargs)


def test_fixed_allocation_needs_a_tuple_per_stream() -> None:
    with pytest.raises(ConfigError, match=r"memory\.max_tuples"):
        make_join(_config(3, 10), MemoryConfig("prob", 2))


def test_off_is_the_plain_join() -> None:
    join = make_join(_config(2, 10), MemoryConfig())
    assert type(join) is MWayJoin
