"""Contract of every join predicate (pipeline/operators/join/predicates.py, ARCHITECTURE §4).

Whatever way its left side was built — one encoded tuple at a time and concatenated,
gathered from a store, re-gathered with ``take``, or concatenated from those — and over
any basic window (empty, all rows or a subset of them, before or after a snapshot round
trip), a predicate's vectorized k×n matrix equals a plain Python loop over its definition
applied to every (left tuple, window tuple) pair of the raw attribute dicts:

* ``equi``: a == b; ``band``: |a − b| ≤ ε; ``distance``: dx² + dy² ≤ ε² (Euclidean
  distance ≤ ε, inclusive);
* ``cosine``: cosine similarity of the keyword→weight dicts ≥ ε − 1e-9 (0 for a zero
  vector); pairs within 1e-12 of that threshold are left undecided (float rounding);
* ``overlap``: Σ w_a(x)·w_b(x) over the items both hold ≥ ε less a relative 1e-9 (a
  list's distinct items weigh 1, a map gives each item's weight; ``7`` and ``"7"`` are
  one item); pairs that close to the threshold are left undecided;
* ``custom``: the user's vectorized callable agrees with its scalar twin.

Hypothesis runs derandomized with bounded examples, finite (NaN-free) values, and ε = 0
among the drawn thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.operators.join.predicates import (
    COSINE_TOLERANCE,
    build_predicate,
    overlap_threshold,
)

KINDS = ("equi", "band", "distance", "cosine", "overlap", "custom")
WORDS = "abcdefg"
UNDECIDED = 1e-12  # |cosine − threshold| below this: either answer is right

CONTRACT = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

Attrs = Mapping[str, Any]


# ------------------------------------------------------------------ the definitions
def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    dot = sum(w * b.get(k, 0.0) for k, w in a.items())
    na = math.sqrt(sum(w * w for w in a.values()))
    nb = math.sqrt(sum(w * w for w in b.values()))
    return 0.0 if na == 0.0 or nb == 0.0 else dot / (na * nb)


def _item_weights(value: Any) -> dict[str, float]:
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for item, w in value.items():
            out[str(item)] = out.get(str(item), 0.0) + float(w)
        return out
    return {str(item): 1.0 for item in value}


def _overlap(a: Any, b: Any) -> float:
    wa, wb = _item_weights(a), _item_weights(b)
    return sum(w * wb[k] for k, w in wa.items() if k in wb)


def _custom_vec(eps: float) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Any]:
    """Values within ε AND the left x strictly below the right x (vectorized)."""
    return lambda l, r: (np.abs(l["value"] - r["value"]) <= eps) & (l["x"] < r["x"])


def _custom_scalar(eps: float, a: Attrs, b: Attrs) -> bool:
    return abs(float(a["value"]) - float(b["value"])) <= eps and float(a["x"]) < float(b["x"])


def definition(kind: str, eps: float, a: Attrs, b: Attrs) -> bool | None:
    """Does the pair (a, b) match? None: too close to the threshold to say."""
    if kind == "equi":
        return float(a["a1"]) == float(b["a1"])
    if kind == "band":
        return abs(float(a["value"]) - float(b["value"])) <= eps
    if kind == "distance":
        dx = float(a["x"]) - float(b["x"])
        dy = float(a["y"]) - float(b["y"])
        return dx * dx + dy * dy <= eps * eps
    if kind == "cosine":
        cos = _cosine(a["keywords"], b["keywords"])
        threshold = eps - COSINE_TOLERANCE
        return None if abs(cos - threshold) <= UNDECIDED else cos >= threshold
    if kind == "overlap":
        ov = _overlap(a["items"], b["items"])
        threshold = overlap_threshold(eps)
        undecided = UNDECIDED * max(1.0, abs(threshold), abs(ov)) * 1e3
        return None if abs(ov - threshold) <= undecided else ov >= threshold
    return _custom_scalar(eps, a, b)


def make(kind: str, eps: float) -> Any:
    if kind == "custom":
        return build_predicate("custom", fn=_custom_vec(eps), columns=("value", "x"),
                               epsilon=eps)
    attribute = {"equi": "a1", "band": "value", "cosine": "keywords",
                 "overlap": "items"}.get(kind)
    return build_predicate(kind, attribute=attribute, epsilon=eps)


# ------------------------------------------------------------------------ inputs
# small grids make exact ties (a == b, |a − b| == ε, equal points) likely; bounded finite
# floats cover the rest without overflow
grid = st.integers(-8, 8).map(lambda i: i * 0.25)
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
number = st.one_of(grid, finite)
item = st.integers(0, 6)
weight = st.one_of(st.just(0.0), st.integers(1, 3).map(float), st.floats(1e-3, 1e3),
                   st.floats(-1e3, -1e-3))
tuples = st.fixed_dictionaries({
    "a1": st.one_of(st.integers(-3, 3), finite),
    "value": number,
    "x": number,
    "y": number,
    "keywords": st.dictionaries(st.sampled_from(WORDS), weight, max_size=4),
    "items": st.one_of(
        st.lists(st.one_of(item, st.sampled_from(["1", "2", "a"])), max_size=5),
        st.dictionaries(st.one_of(item, st.sampled_from(["1", "2", "a"])), weight,
                        max_size=4)),
})


def epsilons(kind: str) -> st.SearchStrategy[float]:
    if kind == "cosine":
        return st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0))
    if kind == "overlap":
        return st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.floats(0.0, 1e4))
    return st.one_of(st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0.0, 10.0))


@st.composite
def cases(draw: st.DrawFn, kind: str) -> tuple[float, list[Attrs], list[Attrs], list[int],
                                               list[int] | None]:
    """(ε, left tuples, window tuples, picks into the left tuples, window rows or None)."""
    eps = draw(epsilons(kind))
    lefts = draw(st.lists(tuples, min_size=1, max_size=5))
    window = draw(st.lists(tuples, max_size=8))
    picks = draw(st.lists(st.integers(0, len(lefts) - 1), max_size=6))
    rows = draw(st.none() | st.lists(st.integers(0, max(len(window) - 1, 0)), unique=True)
                .map(lambda r: sorted(i for i in r if i < len(window))))
    return eps, lefts, window, picks, rows


def store_of(pred: Any, tuples: list[Attrs]) -> Any:
    store = pred.new_store()
    for t in tuples:
        store.append(pred.encode(t))
    return store


def expected(kind: str, eps: float, lefts: list[Attrs], right: list[Attrs]
             ) -> list[list[bool | None]]:
    return [[definition(kind, eps, a, b) for b in right] for a in lefts]


def agrees(got: np.ndarray, want: list[list[bool | None]]) -> bool:
    """``got`` (of the same shape) says what ``want`` says wherever that is decided."""
    return all(w is None or bool(g) is w
               for grow, wrow in zip(got.tolist(), want, strict=True)
               for g, w in zip(grow, wrow, strict=True))


# ------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", KINDS)
def test_matrix_equals_the_pairwise_definition(kind: str) -> None:
    @CONTRACT
    @given(case=cases(kind))
    def check(case: tuple[float, list[Attrs], list[Attrs], list[int], list[int] | None]
              ) -> None:
        eps, lefts, window, picks, rows = case
        pred = make(kind, eps)
        store = store_of(pred, window)
        restored = pred.store_from_snapshot(store.snapshot())
        lstore = store_of(pred, lefts)
        idx = np.asarray(picks, dtype=np.int64)
        whole = pred.left_from_store(lstore, np.arange(len(lefts), dtype=np.int64))
        gathered = pred.left_from_store(lstore, idx)
        sides: dict[str, tuple[Any, list[int]]] = {
            "store": (gathered, picks),
            "take": (pred.take(whole, idx), picks),
            "concat": (pred.concat([gathered, pred.take(whole, idx)]), picks + picks),
        }
        if picks:
            ones = [pred.left_one(pred.encode(lefts[p])) for p in picks]
            sides["one"] = (pred.concat(ones), picks)
            sides["left_one"] = (ones[0], picks[:1])
        sel = None if rows is None else np.asarray(rows, dtype=np.int64)
        right = window if rows is None else [window[i] for i in rows]
        for name, (side, members) in sides.items():
            want = expected(kind, eps, [lefts[p] for p in members], right)
            for label, st_ in (("store", store), ("restored", restored)):
                got = np.asarray(pred.match(side, st_, sel))
                assert got.dtype == np.bool_, (name, label, got.dtype)
                assert got.shape == (len(members), len(right)), (name, label, got.shape)
                assert agrees(got, want), (name, label, got.tolist(), want)

    check()


@pytest.mark.parametrize("kind", KINDS)
def test_empty_window_and_empty_left_side(kind: str) -> None:
    """An empty basic window gives k×0, an empty left side 0×n, an empty row subset k×0."""
    t = {"a1": 1, "value": 0.0, "x": 0.0, "y": 0.0, "keywords": {"a": 1.0}, "items": [1]}
    pred = make(kind, 0.0)
    one = pred.left_one(pred.encode(t))
    assert np.asarray(pred.match(one, pred.new_store(), None)).shape == (1, 0)
    full = store_of(pred, [t, t, t])
    none = pred.left_from_store(store_of(pred, [t]), np.zeros(0, dtype=np.int64))
    assert np.asarray(pred.match(none, full, None)).shape == (0, 3)
    assert np.asarray(pred.match(one, full, np.zeros(0, dtype=np.int64))).shape == (1, 0)
    assert np.asarray(pred.match(one, full, None)).tolist() == [[definition(kind, 0.0, t, t)] * 3]


@pytest.mark.parametrize(("kind", "left", "right"), [
    ("equi", {"a1": 2}, {"a1": 2.0}),
    ("band", {"value": 1.5}, {"value": 1.5}),
    ("distance", {"x": 3.0, "y": -4.0}, {"x": 3.0, "y": -4.0}),
    ("cosine", {"keywords": {"a": 1.0, "b": 2.0}}, {"keywords": {"a": 2.0, "b": 4.0}}),
])
def test_epsilon_zero_matches_only_identical_values(kind: str, left: Attrs,
                                                    right: Attrs) -> None:
    """ε = 0: band and distance keep exactly equal values (the bound is inclusive); the
    cosine keeps parallel vectors (and, being ≥ 0 for non-negative weights, more)."""
    base = {"a1": 0, "value": 0.0, "x": 0.0, "y": 0.0, "keywords": {}}
    a, b = {**base, **left}, {**base, **right}
    pred = make(kind, 0.0)
    got = np.asarray(pred.match(pred.left_one(pred.encode(a)), store_of(pred, [b]), None))
    assert got.tolist() == [[True]]
    if kind in ("band", "distance", "equi"):
        shifted = {**b, "value": 1.75, "a1": 3, "x": 3.0 + 1e-9}
        got = np.asarray(pred.match(pred.left_one(pred.encode(a)), store_of(pred, [shifted]),
                                    None))
        assert got.tolist() == [[False]]
