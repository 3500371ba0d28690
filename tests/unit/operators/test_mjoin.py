"""MWayJoin: Alg. 2 semantics, Fig. 1, probe plans (logical basic windows), feedback."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.engine.engine import Engine
from pipeline.operators.join.config import JoinConfig, Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import build_predicate
from pipeline.quality.oracle import brute_force_oracle
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec, to_events

# Fig. 1: 2-way equi-join, W1 = W2 = 2; capitals = S1, lower case = S2; x^ts.
# Arrival order: c^3, B^6, C^4 (out of order in S1), E^5, D^8, e^7 (after D^8).
LETTER = {"b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0}
FIG1 = [
    ("s2", "c", 3),
    ("s1", "B", 6),
    ("s1", "C", 4),
    ("s1", "E", 5),
    ("s1", "D", 8),
    ("s2", "e", 7),
]


def _fig1_dump() -> list[dict[str, Any]]:
    return [
        {
            "stream": s,
            "seq": i,
            "event_time": ts,
            "arrival_time": i,
            "a1": LETTER[x.lower()],
            "name": f"{x}{ts}",
        }
        for i, (s, x, ts) in enumerate(FIG1)
    ]


def _names(results: list[Any], dump: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    by = {(r["stream"], r["seq"]): r["name"] for r in dump}
    return {tuple(by[(m.stream, m.seq)] for m in r.members) for r in results}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # Alg. 2 with no buffering: B6 expires c3 before C4 arrives, C4 is late (not
        # probed), e7 arrives after D8 (late): both results are lost
        ("join only", set()),
        # K = 0: the Synchronizer alone re-orders across streams and saves both
        ("none", {("C4", "c3"), ("E5", "e7")}),
        ("fixed", {("C4", "c3"), ("E5", "e7")}),
        ("oracle", {("C4", "c3"), ("E5", "e7")}),
    ],
)
def test_fig1(case: str, expected: set[tuple[str, ...]]) -> None:
    spec = make_spec(
        2,
        "equi",
        [2, 2],
        disorder={"mode": "fixed" if case == "fixed" else "none", "slack_ms": 4},
        shedding={"basic_window_ms": 1},
    )
    dump = _fig1_dump()
    if case == "oracle":
        got = _names(brute_force_oracle(spec.join, dump), dump)
    elif case == "join only":
        config = resolve_engine(spec)
        join = MWayJoin(config.join_config())
        outcomes = []
        for ev in to_events(dump, spec):
            out = join.process(ev.stream, ev.ts, ev.seq, config.predicate.encode(ev.attrs))
            outcomes.append(out.outcome)
            assert out.count == 0
        assert outcomes == [
            Outcome.PROBED,
            Outcome.PROBED,
            Outcome.LATE,
            Outcome.LATE,
            Outcome.PROBED,
            Outcome.LATE,
        ]
        got = set()
    else:
        eng = Engine(resolve_engine(spec))
        got = _names(eng.process_many(to_events(dump, spec)) + eng.flush(), dump)
    assert got == expected


def _join(windows: tuple[int, ...], b: int) -> tuple[MWayJoin, Any]:
    pred = build_predicate("band", attribute="value", epsilon=1.0)
    return MWayJoin(JoinConfig(windows, b, pred)), pred


def _brute(
    rows: list[tuple[int, int, int, float]], ts: int, v: float, windows: tuple[int, ...], eps: float
) -> set[tuple[int, int]]:
    """(seq of s2, seq of s3) of every result of a stream-0 probe (ts, v): pure Python."""
    per = [[r for r in rows if r[0] == s and ts - windows[s] <= r[1] <= ts] for s in range(3)]
    out = set()
    for a in per[1]:
        for c in per[2]:
            vals = [v, a[3], c[3]]
            if all(abs(x - y) <= eps for x in vals for y in vals):
                out.add((a[2], c[2]))
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 5000),
    b=st.integers(1, 50),
    chosen=st.lists(st.lists(st.integers(0, 10), max_size=5), min_size=2, max_size=2),
    flip=st.booleans(),
)
def test_plan_scans_only_chosen_logical_basic_windows(
    seed: int, b: int, chosen: list[list[int]], flip: bool
) -> None:
    rng = np.random.default_rng(seed)
    windows = (100, 80, 120)
    join, pred = _join(windows, b)
    rows: list[tuple[int, int, int, float]] = []
    for s in (1, 2):
        for q, t in enumerate(rng.integers(0, 300, size=30).tolist()):
            v = float(rng.integers(0, 6))
            join.insert(s, int(t), q, pred.encode({"value": v}))
            rows.append((s, int(t), q, v))
    order = (2, 1) if flip else (1, 2)
    plan = ProbePlan(order=order, windows=(tuple(chosen[0]), tuple(chosen[1])), feedback=True)
    out = join.probe(0, 300, 0, pred.encode({"value": 3.0}), plan)

    def lbw(s: int, t: int) -> int:  # logical basic window: 0 = newest, last clipped at W
        return min((300 - t) // b, -(-windows[s] // b) - 1)

    allowed = {order[0]: set(chosen[0]), order[1]: set(chosen[1])}
    kept = [r for r in rows if lbw(r[0], r[1]) in allowed[r[0]]]
    expected = _brute(kept, 300, 3.0, windows, 1.0)
    got = [(int(a), int(c)) for a, c in out.seqs[:, 1:].tolist()]
    assert len(got) == len(set(got))
    assert set(got) == expected
    assert out.seqs[:, 0].tolist() == [0] * out.count
    assert out.feedback is not None
    assert out.feedback.order == order
    ts_of = {(r[0], r[2]): r[1] for r in rows}
    for j, s in enumerate(order):
        lb = [lbw(s, ts_of[(s, int(q))]) for q in out.seqs[:, s].tolist()]
        assert (
            out.feedback.matches[j].tolist()
            == np.bincount(np.array(lb, dtype=np.int64), minlength=-(-windows[s] // b)).tolist()
        )
    assert out.feedback.results == out.count
    assert out.feedback.cost == out.cost == sum(out.feedback.scanned)


def test_bad_plan_order_is_config_error() -> None:
    join, pred = _join((10, 10, 10), 5)
    with pytest.raises(ConfigError, match="permutation"):
        join.probe(0, 5, 0, pred.encode({"value": 1.0}), ProbePlan(order=(1, 1)))


def test_expiry_keeps_partially_valid_basic_windows_and_counts_cross() -> None:
    join, pred = _join((10, 10, 10), 100)  # basic windows much larger than windows
    for s in (1, 2):
        for t in (0, 5, 95, 99):
            join.insert(s, t, t, pred.encode({"value": 0.0}))
    out = join.process(0, 100, 0, pred.encode({"value": 0.0}))
    assert out.outcome is Outcome.PROBED
    assert {tuple(r) for r in out.seqs[:, 1:].tolist()} == {(95, 95), (95, 99), (99, 95), (99, 99)}
    # σ sample (2 + 2 in range), then NLJ: 2 candidates of s2, 2 partials x 2 of s3
    assert out.cost == (2 + 2) + 2 + 2 * 2
    assert join.cross_count(0, 100) == 4
    # a late tuple inside its window is inserted, an older one discarded
    assert join.process(1, 95, 7, pred.encode({"value": 0.0})).outcome is Outcome.LATE
    assert join.process(1, 80, 8, pred.encode({"value": 0.0})).outcome is Outcome.DISCARDED


def test_snapshot_round_trip_keeps_windows() -> None:
    join, pred = _join((50, 50, 50), 7)
    rng = np.random.default_rng(1)
    for t in range(0, 200, 3):
        s = int(rng.integers(0, 3))
        join.process(s, t, t, pred.encode({"value": float(rng.integers(0, 3))}))
    again = MWayJoin.from_snapshot(join.config, pickle.loads(pickle.dumps(join.snapshot())))
    a = join.process(0, 205, 999, pred.encode({"value": 1.0}))
    b = again.process(0, 205, 999, pred.encode({"value": 1.0}))
    assert a.seqs.tolist() == b.seqs.tolist() and a.cost == b.cost
    assert again.state_size() == join.state_size()


def test_default_order_puts_the_most_selective_stream_first() -> None:
    pred = build_predicate("equi", attribute="a1")
    join = MWayJoin(JoinConfig((100, 100, 100), 10, pred))
    for t in range(50):
        join.insert(1, t, t, pred.encode({"a1": 7}))  # always matches key 7
        join.insert(2, t, t, pred.encode({"a1": 7 if t % 10 == 0 else 1000 + t}))  # 10% match
    assert join.default_order(0) == (1, 2)  # nothing sampled yet: by index
    out = join.process(0, 60, 0, pred.encode({"a1": 7}))
    sel = join.selectivities()
    assert sel[0, 1] == 1.0 and sel[0, 2] == pytest.approx(5 / 50)
    assert join.default_order(0) == (2, 1)
    assert out.count == 50 * 5
    again = MWayJoin.from_snapshot(join.config, pickle.loads(pickle.dumps(join.snapshot())))
    assert again.default_order(0) == (2, 1)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(["band", "equi"]),
    m=st.integers(2, 4),
    b=st.integers(1, 40),
    eps=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    planned=st.booleans(),
)
def test_indexed_join_gives_exactly_the_unindexed_results(
    seed: int, kind: str, m: int, b: int, eps: float, planned: bool
) -> None:
    """Per-basic-window sorted indexes (ours) change the cost, never the results: same
    outcomes, same result rows in the same order, with and without a harvesting plan,
    including late tuples and values on the ε boundary."""
    rng = np.random.default_rng(seed)
    pred = build_predicate(kind, attribute="value", epsilon=eps)
    windows = tuple(int(w) for w in rng.integers(20, 120, m))
    plain = MWayJoin(JoinConfig(windows, b, pred))
    indexed = MWayJoin(JoinConfig(windows, b, pred, index=True))
    ts = 0
    for seq in range(250):
        ts += int(rng.integers(0, 6))
        t = max(0, ts - int(rng.integers(1, 40))) if rng.random() < 0.2 else ts  # some late
        stream = int(rng.integers(0, m))
        # integer and half-integer values: many exact ties and |a − b| = ε cases
        value = float(rng.integers(0, 12)) / 2.0
        enc = pred.encode({"value": value})
        plan = None
        if planned:
            order = tuple(j for j in range(m) if j != stream)
            wins = tuple(
                tuple(int(x) for x in rng.choice(20, size=int(rng.integers(1, 6)), replace=False))
                for _ in order
            )
            plan = ProbePlan(order=order, windows=wins)
        a = plain.process(stream, t, seq, enc, plan)
        c = indexed.process(stream, t, seq, enc, plan)
        assert a.outcome == c.outcome
        # the same result rows; their order within one probe is not part of the contract
        np.testing.assert_array_equal(_sorted_rows(a.seqs, a.tss), _sorted_rows(c.seqs, c.tss))


def _sorted_rows(seqs: np.ndarray, tss: np.ndarray) -> np.ndarray:
    """(seq…, ts…) result rows in lexicographic order."""
    rows = np.concatenate([seqs, tss], axis=1)
    return rows[np.lexsort(rows.T[::-1])] if len(rows) else rows
