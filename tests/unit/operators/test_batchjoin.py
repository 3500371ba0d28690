"""The batch-vectorized join (batchjoin.py, batchprobe.py) against the per-tuple probe.

A random run — late and discarded tuples, expiry inside the run, stored windows, probe
plans with harvested and empty positions, feedback, explicit and default join orders,
every dense predicate, with and without the index — goes once through
``MWayJoin.process`` tuple by tuple and once through ``MWayJoin.process_batch`` in
random chunks: outcomes, results (rows, in order), costs and feedback must agree (with
the index, where the batch path charges its own lookup cost, outcomes and results).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.join.config import JoinConfig, Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.join.run import encode_dense

CODES = {o: o.value for o in Outcome}


def _predicate(kind: str) -> Any:
    if kind == "band":
        return build_predicate("band", attribute="value", epsilon=0.6)
    if kind == "equi":
        return build_predicate("equi", attribute="value")
    if kind == "distance":
        return build_predicate("distance", x="x", y="y", epsilon=3.0)
    return build_predicate("custom", fn=lambda l, r: np.abs(l["value"] - r["value"]) < 1.0,
                           columns=["value"])


def _tuples(rng: np.random.Generator, m: int, n: int, t0: int, late: float,
            kind: str) -> list[tuple[int, int, int, dict[str, float]]]:
    out = []
    t = t0
    for q in range(n):
        t += int(rng.integers(0, 25))
        ts = t - int(rng.integers(0, 300)) if rng.random() < late else t
        val = float(rng.integers(0, 8)) if kind == "equi" else float(
            np.round(rng.normal(5.0, 1.5), 1))
        out.append((int(rng.integers(0, m)), 10_000 + q, ts,
                    {"value": val, "x": float(rng.uniform(0, 10)),
                     "y": float(rng.uniform(0, 10))}))
    return out


def _plans(rng: np.random.Generator, m: int, windows: tuple[int, ...], b: int,
           mode: str) -> list[ProbePlan | None]:
    """One plan per direction (shared, as within an adaptation step), or None."""
    if mode == "none":
        return [None] * m
    plans: list[ProbePlan | None] = []
    for i in range(m):
        others = [l for l in range(m) if l != i]
        order = tuple(int(v) for v in rng.permutation(others))
        wins: list[tuple[int, ...] | None] = []
        for l in order:
            n_l = max(1, -(-windows[l] // b))
            pick = rng.random()
            if pick < 0.3:
                wins.append(None)
            elif pick < 0.4:
                wins.append(())
            else:
                k = int(rng.integers(1, n_l + 1))
                wins.append(tuple(int(v) for v in rng.choice(n_l, size=k, replace=False)))
        plans.append(ProbePlan(order=None if mode == "windows" else order,
                               windows=tuple(wins), feedback=bool(rng.random() < 0.5)))
    return plans


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4),
       kind=st.sampled_from(["band", "equi", "distance", "custom"]),
       index=st.booleans(), plan_mode=st.sampled_from(["none", "order", "windows", "mixed"]),
       late=st.sampled_from([0.0, 0.2, 0.5]))
def test_batch_equals_per_tuple(seed: int, m: int, kind: str, index: bool, plan_mode: str,
                                late: float) -> None:
    rng = np.random.default_rng(seed)
    pred = _predicate(kind)
    windows = tuple(int(rng.integers(50, 400)) for _ in range(m))
    b = int(rng.integers(20, 120))
    cfg = JoinConfig(windows, b, pred, index=index)
    ref, bat = MWayJoin(cfg), MWayJoin(cfg)
    warm = _tuples(rng, m, int(rng.integers(0, 60)), 0, 0.0, kind)
    for s, q, ts, attrs in warm:
        for join in (ref, bat):
            join.insert(s, ts, q, pred.encode(attrs))
            join.join_time = max(join.join_time, ts)
    t0 = max((w[2] for w in warm), default=0)
    run = _tuples(rng, m, int(rng.integers(1, 120)), t0, late, kind)
    shared = _plans(rng, m, windows, b, "order" if plan_mode == "mixed" else plan_mode)
    plans = [shared[s] if plan_mode != "mixed" or rng.random() < 0.5 else
             _plans(rng, m, windows, b, "order")[s] for s, _, _, _ in run]
    want, cross = [], []
    for k, (s, q, ts, a) in enumerate(run):
        want.append(ref.process(s, ts, q, pred.encode(a), plans[k]))
        cross.append(ref.cross_count(s, ts))  # what the engine asks right after
    streams = np.array([r[0] for r in run], np.int64)
    seqs = np.array([r[1] for r in run], np.int64)
    tss = np.array([r[2] for r in run], np.int64)
    feats = encode_dense(pred, [r[3] for r in run])
    cuts = sorted({0, len(run), *rng.integers(0, len(run) + 1, size=3).tolist()})
    got_rows: list[np.ndarray] = []
    for lo, hi in pairwise(cuts):
        if hi <= lo:
            continue
        out = bat.process_batch(streams[lo:hi], tss[lo:hi], seqs[lo:hi], feats[lo:hi],
                                plans[lo:hi], want_cross=True)
        start = np.cumsum(out.count) - out.count
        fb = dict(out.feedback)
        for r in range(hi - lo):
            w = want[lo + r]
            assert out.outcome[r] == CODES[w.outcome]
            assert out.count[r] == w.count
            rows = slice(start[r], start[r] + out.count[r])
            np.testing.assert_array_equal(out.seqs[rows], w.seqs)
            np.testing.assert_array_equal(out.tss[rows], w.tss)
            if not index:
                assert out.cost[r] == w.cost
                if w.feedback is not None:
                    got = fb[r]
                    assert got.order == w.feedback.order
                    assert got.scanned == w.feedback.scanned
                    assert got.partials == w.feedback.partials
                    assert got.results == w.feedback.results and got.cost == w.feedback.cost
                    for x, y in zip(got.matches, w.feedback.matches, strict=True):
                        np.testing.assert_array_equal(x, y)
            if w.outcome is Outcome.PROBED and out.cross is not None:
                assert out.cross[r] == cross[lo + r]
            got_rows.append(out.seqs[rows])
    assert bat.join_time == ref.join_time
    np.testing.assert_array_equal(bat.sel_trials, ref.sel_trials)
    np.testing.assert_array_equal(bat.probes, ref.probes)
    # what any later probe can still see is the same
    for l in range(m):
        lo = ref.join_time - windows[l]
        for join in (ref, bat):
            join.windows[l].expire(lo)
        seen = [sorted((int(t), int(q)) for bw in (j.windows[l].bws[i] for i in j.windows[l].bids)
                       for t, q in zip(bw.ts.view(), bw.seq.view(), strict=True) if t >= lo)
                for j in (ref, bat)]
        assert seen[0] == seen[1]


@pytest.mark.parametrize("kind", ["band", "equi"])
def test_batch_output_is_independent_of_the_split(kind: str) -> None:
    rng = np.random.default_rng(3)
    pred = _predicate(kind)
    cfg = JoinConfig((300, 300, 300), 50, pred)
    run = _tuples(rng, 3, 400, 0, 0.2, kind)
    streams = np.array([r[0] for r in run], np.int64)
    seqs = np.array([r[1] for r in run], np.int64)
    tss = np.array([r[2] for r in run], np.int64)
    feats = encode_dense(pred, [r[3] for r in run])
    outs = []
    for step in (1, 7, 400):
        join = MWayJoin(cfg)
        parts = [join.process_batch(streams[a:a + step], tss[a:a + step], seqs[a:a + step],
                                    feats[a:a + step], [None] * len(run[a:a + step]))
                 for a in range(0, len(run), step)]
        outs.append(np.concatenate([p.seqs for p in parts]))
    for other in outs[1:]:
        np.testing.assert_array_equal(other, outs[0])
