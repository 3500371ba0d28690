"""Predicates: vectorized k×n matrices vs the scalar definitions (table-driven)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, SerializationError
from pipeline.operators.join.predicates import build_predicate

CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], bool]] = [
    ("equi", {"attribute": "a1"}, {"a1": 3}, {"a1": 3}, True),
    ("equi", {"attribute": "a1"}, {"a1": 3}, {"a1": 4}, False),
    ("band", {"attribute": "value", "epsilon": 0.5}, {"value": 1.0}, {"value": 1.5}, True),
    ("band", {"attribute": "value", "epsilon": 0.5}, {"value": 1.0}, {"value": 1.51}, False),
    ("distance", {"epsilon": 5.0}, {"x": 0, "y": 0}, {"x": 3, "y": 4}, True),
    ("distance", {"epsilon": 5.0}, {"x": 0, "y": 0}, {"x": 3, "y": 4.01}, False),
    (
        "cosine",
        {"attribute": "keywords", "epsilon": 1.0},
        {"keywords": {"a": 1, "b": 2}},
        {"keywords": {"a": 2, "b": 4}},
        True,
    ),
    (
        "cosine",
        {"attribute": "keywords", "epsilon": 0.5},
        {"keywords": {"a": 1}},
        {"keywords": {"b": 1}},
        False,
    ),
    (
        "cosine",
        {"attribute": "keywords", "epsilon": 0.7},
        {"keywords": {"a": 1, "b": 1}},
        {"keywords": {"a": 1}},
        True,
    ),
    (
        "cosine",
        {"attribute": "keywords", "epsilon": 0.1},
        {"keywords": {}},
        {"keywords": {"a": 1}},
        False,
    ),
]


@pytest.mark.parametrize(("kind", "params", "left", "right", "expected"), CASES)
def test_pair_semantics(
    kind: str, params: dict[str, Any], left: dict[str, Any], right: dict[str, Any], expected: bool
) -> None:
    pred: Any = build_predicate(kind, **params)
    store = pred.new_store()
    store.append(pred.encode(right))
    got = pred.match(pred.left_one(pred.encode(left)), store, None)
    assert got.shape == (1, 1)
    assert bool(got[0, 0]) is expected


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(k, 0.0) for k, w in a.items())
    na = math.sqrt(sum(w * w for w in a.values()))
    nb = math.sqrt(sum(w * w for w in b.values()))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


kw = st.dictionaries(st.sampled_from("abcdefg"), st.integers(1, 3).map(float), max_size=4)


@settings(max_examples=50, deadline=None)
@given(
    lefts=st.lists(kw, min_size=1, max_size=5),
    rights=st.lists(kw, min_size=1, max_size=8),
    eps=st.floats(0.05, 1.0),
    pick=st.lists(st.integers(0, 7), max_size=8),
)
def test_cosine_matrix_and_side_building(
    lefts: list[dict[str, float]], rights: list[dict[str, float]], eps: float, pick: list[int]
) -> None:
    """Matrix over a basic window = pure-Python cosine for every pair, for left sides built
    from events, from a store (gather), by take and by concat."""
    pred: Any = build_predicate("cosine", attribute="k", epsilon=eps)
    store = pred.new_store()
    for r in rights:
        store.append(pred.encode({"k": r}))
    lstore = pred.new_store()
    for left in lefts:
        lstore.append(pred.encode({"k": left}))
    rows = np.array(sorted({p % len(rights) for p in pick}), dtype=np.int64)
    side = pred.left_from_store(lstore, np.arange(len(lefts)))
    side = pred.concat(
        [
            pred.take(side, np.arange(len(lefts))),
            pred.left_one(pred.encode({"k": lefts[0]})),
        ]
    )
    got = pred.match(side, store, rows if len(rows) else None)
    cols = rows.tolist() if len(rows) else list(range(len(rights)))
    expect = [[_cos(a, rights[c]) >= eps - 1e-9 for c in cols] for a in [*lefts, lefts[0]]]
    assert got.tolist() == expect


def test_custom_callable_broadcasts() -> None:
    pred: Any = build_predicate("custom", fn=lambda l, r: l["v"] < r["v"], columns=("v",))
    store = pred.new_store()
    for v in (1.0, 5.0, 9.0):
        store.append(pred.encode({"v": v}))
    left = np.array([[2.0], [6.0]])
    assert pred.match(left, store, None).tolist() == [
        [False, True, True],
        [False, False, True],
    ]


@pytest.mark.parametrize(
    ("kind", "params", "attrs", "needle"),
    [
        ("band", {"attribute": "value"}, {"x": 1}, "'value'"),
        ("band", {"attribute": "value"}, {"value": "hot"}, "'value'"),
        ("cosine", {"attribute": "keywords", "epsilon": 0.5}, {"keywords": ["a"]}, "'keywords'"),
        ("distance", {"epsilon": 1.0}, {"x": 1.0}, "'y'"),
    ],
)
def test_bad_attribute_is_named(
    kind: str, params: dict[str, Any], attrs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(SerializationError, match=needle):
        build_predicate(kind, **params).encode(attrs)


def test_build_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"join\.attribute"):
        build_predicate("band")
    with pytest.raises(ConfigError, match=r"join\.predicate"):
        build_predicate("fuzzy")


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["band", "distance", "equi"]),
       eps=st.sampled_from([0.0, 0.3, 1.0, 3.0, 1e-6]),
       left=st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40)), min_size=1,
                     max_size=12),
       right=st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40)), min_size=1,
                      max_size=30),
       scale=st.sampled_from([0.1, 0.3, 1.0, 1e7]))
def test_block_hits_equal_the_full_matrix(kind: str, eps: float, left: list[tuple[int, int]],
                                          right: list[tuple[int, int]], scale: float) -> None:
    """The pre-filtered block test (band, distance) finds exactly the pairs of the full
    k×n predicate matrix, points on the ε boundary included (coordinates on a grid of
    ``scale``, so distances of exactly ε occur)."""
    from pipeline.operators.join.run_match import block_hits

    params: dict[str, Any] = {"epsilon": eps}
    if kind == "distance":
        params.update(x="x", y="y")
    elif kind == "band":
        params.update(attribute="x")
    else:
        params = {"attribute": "x"}
    pred = build_predicate(kind, **params)
    cols = 2 if kind == "distance" else 1
    a = (np.asarray(left, dtype=np.float64) * scale)[:, :cols]
    b = (np.asarray(right, dtype=np.float64) * scale)[:, :cols]
    pi, ri = block_hits(pred, a, b)
    want = np.argwhere(pred.match_values(a, b))
    assert sorted(zip(pi.tolist(), ri.tolist(), strict=True)) == [tuple(p) for p in want.tolist()]
