"""Join predicates evaluated vectorized over whole basic windows (ARCHITECTURE §4).

Every predicate compares a *left side* (k partial-result members, or the probing tuple)
against the rows of one basic window's feature store and returns a k×n boolean matrix —
one NumPy expression per (partial set, basic window), never a Python loop over pairs.

* ``equi``: a_i = a_j on one attribute;
* ``band``: |a_i − a_j| ≤ ε (ε-band join);
* ``distance``: Euclidean distance of (x, y) ≤ ε (Ji et al. Q^×2: players within 5 m);
* ``cosine``: cosine similarity of keyword→weight vectors ≥ ε (news workload);
* ``overlap``: overlap of item sets (or inner product of weighted sets) ≥ ε (Gedik et
  al., CIKM: the selective-processing workload);
* ``custom``: a user callable ``fn(left, right) -> bool array`` over named columns,
  where ``left[c]`` has shape (k, 1) and ``right[c]`` shape (1, n).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, SerializationError
from pipeline.operators.join.growable import GrowableArray
from pipeline.operators.join.sparse import (
    EMPTY_ROW,
    SparseRow,
    SparseSide,
    SparseStore,
    concat_sides,
    dots,
    gather_side,
    keyword_key,
    side_of,
    sparse_row,
    take_side,
)

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
BoolMatrix = NDArray[np.bool_]
COSINE_TOLERANCE = 1e-9  # same tolerance as the oracle, for ties at the threshold
#: relative tolerance of the overlap threshold (weighted sets; the oracle's too)
OVERLAP_TOLERANCE = 1e-9
#: relative slack of the band/equi value pre-filter (the exact predicate re-checks)
VALUE_SLACK = 1e-9
CustomFn = Callable[[Mapping[str, F64], Mapping[str, F64]], Any]


def value_bounds(pred: Any, v: F64) -> tuple[F64, F64]:
    """[v − ε, v + ε] (ε = 0 for equi; for distance, of the first coordinate) widened by
    a relative slack, per probe value: the range a sorted index or a pre-filter is
    searched with (candidates are re-checked with the exact predicate)."""
    eps = float(pred.epsilon) if pred.kind in ("band", "distance") else 0.0
    slack = VALUE_SLACK * (np.abs(v) + eps) + 1e-300
    return v - eps - slack, v + eps + slack


# ----------------------------------------------------------------------------- dense
class DenseStore:
    """Growable k×d float64 feature rows of one basic window."""

    __slots__ = ("rows",)

    def __init__(self, d: int, rows: GrowableArray | None = None) -> None:
        self.rows = rows if rows is not None else GrowableArray((d,), np.float64)

    def append(self, enc: F64) -> None:
        self.rows.append(enc)

    def delete(self, rows: I64) -> None:
        """Drop rows ``rows`` (ascending), the others keep their order."""
        self.rows.delete(rows)

    def side(self, rows: I64 | None) -> F64:
        v = self.rows.view()
        return v if rows is None else v[rows]

    def snapshot(self) -> dict[str, Any]:
        return {"rows": self.rows.view().copy()}

    @staticmethod
    def from_snapshot(d: int, snap: Mapping[str, Any]) -> DenseStore:
        return DenseStore(d, GrowableArray.from_array(np.asarray(snap["rows"], np.float64)))


@dataclass(frozen=True)
class DensePredicate:
    """A predicate over fixed-width numeric columns (equi / band / distance / custom)."""

    kind: str
    columns: tuple[str, ...]
    epsilon: float = 0.0
    fn: CustomFn | None = None

    def encode(self, attrs: Mapping[str, Any]) -> F64:
        """The tuple's feature row; :class:`SerializationError` names a bad attribute."""
        out = np.empty(len(self.columns), dtype=np.float64)
        for c, name in enumerate(self.columns):
            try:
                out[c] = float(attrs[name])
            except KeyError:
                raise SerializationError(
                    f"tuple has no attribute {name!r}: {dict(attrs)!r}"
                ) from None
            except (TypeError, ValueError):
                raise SerializationError(
                    f"attribute {name!r} is not numeric: {attrs[name]!r}"
                ) from None
        return out

    @property
    def attributes(self) -> tuple[str, ...]:
        """The tuple attributes :meth:`encode` reads."""
        return self.columns

    def new_store(self) -> DenseStore:
        return DenseStore(len(self.columns))

    def store_from_snapshot(self, snap: Mapping[str, Any]) -> DenseStore:
        return DenseStore.from_snapshot(len(self.columns), snap)

    def left_one(self, enc: F64) -> F64:
        return enc.reshape(1, -1)

    def left_from_store(self, store: DenseStore, rows: I64) -> F64:
        return store.side(rows)

    @staticmethod
    def take(side: F64, idx: I64) -> F64:
        return side[idx]

    @staticmethod
    def concat(sides: Sequence[F64]) -> F64:
        return np.concatenate(sides, axis=0)

    def match(self, left: F64, store: DenseStore, rows: I64 | None) -> BoolMatrix:
        """k×n: does left[p] match row rows[q] of the basic window?"""
        return self.match_values(left, store.side(rows))

    def match_values(self, left: F64, right: F64) -> BoolMatrix:
        """k×n matrix for two feature blocks (k×d and n×d)."""
        if self.kind == "equi":
            return np.asarray(left[:, 0, None] == right[None, :, 0])
        if self.kind == "band":
            return np.asarray(np.abs(left[:, 0, None] - right[None, :, 0]) <= self.epsilon)
        if self.kind == "distance":
            dx = left[:, 0, None] - right[None, :, 0]
            dy = left[:, 1, None] - right[None, :, 1]
            return np.asarray(dx * dx + dy * dy <= self.epsilon * self.epsilon)
        assert self.fn is not None
        lcols = {c: left[:, i, None] for i, c in enumerate(self.columns)}
        rcols = {c: right[None, :, i] for i, c in enumerate(self.columns)}
        out = np.asarray(self.fn(lcols, rcols), dtype=bool)
        return np.broadcast_to(out, (left.shape[0], right.shape[0]))


# ---------------------------------------------------------------------------- sparse
@dataclass(frozen=True)
class SparsePredicate:
    """What the set-valued predicates share: one attribute encoded as a sparse key →
    weight vector (:mod:`~pipeline.operators.join.sparse`), CSR basic windows, dense
    left sides; :meth:`match` compares the inner products with ε."""

    attribute: str
    epsilon: float

    @property
    def attributes(self) -> tuple[str, ...]:
        """The tuple attributes :meth:`encode` reads."""
        return (self.attribute,)

    def _raw(self, attrs: Mapping[str, Any]) -> Any:
        try:
            return attrs[self.attribute]
        except KeyError:
            raise SerializationError(
                f"tuple has no attribute {self.attribute!r}: {dict(attrs)!r}"
            ) from None

    def new_store(self) -> SparseStore:
        return SparseStore()

    def store_from_snapshot(self, snap: Mapping[str, Any]) -> SparseStore:
        return SparseStore.from_snapshot(snap)

    def left_one(self, enc: SparseRow) -> SparseSide:
        return side_of([enc])

    def left_from_store(self, store: SparseStore, rows: I64) -> SparseSide:
        return gather_side(store, rows)

    @staticmethod
    def take(side: SparseSide, idx: I64) -> SparseSide:
        return take_side(side, idx)

    @staticmethod
    def concat(sides: Sequence[SparseSide]) -> SparseSide:
        return concat_sides(sides)


@dataclass(frozen=True)
class CosinePredicate(SparsePredicate):
    """Cosine similarity of keyword→weight vectors ≥ ε (weighted keyword overlap).

    >>> cos = build_predicate("cosine", attribute="kw", epsilon=0.7)
    >>> window = cos.new_store()
    >>> window.append(cos.encode({"kw": {"rain": 1.0}}))   # cosine 1/√2 ≈ 0.71
    >>> window.append(cos.encode({"kw": {"goal": 3.0}}))   # no keyword in common: 0
    >>> left = cos.left_one(cos.encode({"kw": {"rain": 1.0, "storm": 1.0}}))
    >>> cos.match(left, window, None).tolist()
    [[True, False]]
    """

    kind: str = "cosine"

    def encode(self, attrs: Mapping[str, Any]) -> SparseRow:
        """Unit-normalized sparse vector; :class:`SerializationError` for a bad attribute."""
        raw = self._raw(attrs)
        if not isinstance(raw, Mapping):
            raise SerializationError(
                f"attribute {self.attribute!r} must map keyword -> weight, got {raw!r}"
            )
        merged: dict[int, float] = {}
        try:
            for word, weight in raw.items():
                k = keyword_key(str(word))
                merged[k] = merged.get(k, 0.0) + float(weight)
        except (TypeError, ValueError):
            raise SerializationError(
                f"attribute {self.attribute!r} has a non-numeric weight: {raw!r}"
            ) from None
        row = sparse_row(merged)
        norm = float(np.sqrt(np.dot(row.weights, row.weights)))
        if norm == 0.0:
            return EMPTY_ROW
        return SparseRow(row.keys, row.weights / norm)

    def match(self, left: SparseSide, store: SparseStore, rows: I64 | None) -> BoolMatrix:
        """k×n: cosine(left[p], row) ≥ ε, via one gather + ``np.add.reduceat``."""
        return np.asarray(dots(left, store, rows) >= self.epsilon - COSINE_TOLERANCE)


def overlap_threshold(epsilon: float) -> float:
    """The overlap an ``overlap`` match needs: ε less a relative float tolerance (exact
    for plain sets, whose overlaps are integers)."""
    return epsilon - OVERLAP_TOLERANCE * max(1.0, abs(epsilon))


@dataclass(frozen=True)
class OverlapPredicate(SparsePredicate):
    """Set overlap ≥ ε (Gedik et al., CIKM §1 and §5: the overlap join of item sets; the
    inner-product join of weighted sets).

    A set's items weigh 1, so the overlap of two sets is |A ∩ B|; two weighted sets
    overlap by Σ_{x ∈ A ∩ B} w_A(x)·w_B(x), the same sum. An attribute is a set (a list
    of items) or a weighted set (a map item → weight); an item is an integer or a
    string, identified by its text, so ``7`` and ``"7"`` are the same item (an Avro map's
    keys are strings).

    >>> ov = build_predicate("overlap", attribute="items", epsilon=2)
    >>> window = ov.new_store()
    >>> window.append(ov.encode({"items": [1, 2, 3]}))
    >>> window.append(ov.encode({"items": {"3": 1.0, "9": 1.0}}))
    >>> left = ov.left_one(ov.encode({"items": [2, 3, 9]}))
    >>> ov.match(left, window, None).tolist()   # overlaps 2 and 2
    [[True, True]]
    >>> heavy = ov.left_one(ov.encode({"items": {"9": 0.5}}))
    >>> ov.match(heavy, window, None).tolist()  # 0 and 0.5·1
    [[False, False]]
    """

    kind: str = "overlap"

    def encode(self, attrs: Mapping[str, Any]) -> SparseRow:
        """The set's 0/1 (or weighted) vector; :class:`SerializationError` names a bad
        attribute, item or weight."""
        raw = self._raw(attrs)
        merged: dict[int, float] = {}
        if isinstance(raw, Mapping):
            for item, weight in raw.items():
                k = keyword_key(self._item_text(item))
                merged[k] = merged.get(k, 0.0) + self._weight(item, weight)
        elif isinstance(raw, str | bytes) or not isinstance(raw, Iterable):
            raise SerializationError(
                f"attribute {self.attribute!r} must be a set (a list of items) or a weighted "
                f"set (a map item -> weight), got {raw!r}"
            )
        else:
            for item in raw:
                merged[keyword_key(self._item_text(item))] = 1.0
        return sparse_row(merged)

    def _item_text(self, item: Any) -> str:
        if isinstance(item, str):
            return item
        if isinstance(item, int | np.integer) and not isinstance(item, bool | np.bool_):
            return str(int(item))
        if isinstance(item, float | np.floating) and float(item).is_integer():
            return str(int(item))
        raise SerializationError(
            f"attribute {self.attribute!r}: an item must be an integer or a string, "
            f"got {item!r}"
        )

    def _weight(self, item: Any, weight: Any) -> float:
        try:
            w = float(weight)
        except (TypeError, ValueError):
            w = math.nan
        if not math.isfinite(w) or isinstance(weight, bool):
            raise SerializationError(
                f"attribute {self.attribute!r}: item {item!r} has weight {weight!r}, "
                "expected a finite number"
            )
        return w

    def match(self, left: SparseSide, store: SparseStore, rows: I64 | None) -> BoolMatrix:
        """k×n: overlap(left[p], row) ≥ ε, via one gather + ``np.add.reduceat``."""
        return self.passes(dots(left, store, rows))

    def passes(self, overlaps: F64) -> BoolMatrix:
        """Which overlaps reach ε (the threshold :meth:`match` and the inverted index
        apply)."""
        return np.asarray(overlaps >= overlap_threshold(self.epsilon))


Predicate = DensePredicate | CosinePredicate | OverlapPredicate


def build_predicate(
    kind: str,
    *,
    attribute: str | None = None,
    x: str = "x",
    y: str = "y",
    epsilon: float = 0.0,
    fn: CustomFn | None = None,
    columns: Sequence[str] = (),
) -> Predicate:
    """The predicate of a ``[join]`` spec (or a custom vectorized callable).

    A k×n match of two left tuples against a basic window of three:

    >>> band = build_predicate("band", attribute="value", epsilon=0.5)
    >>> window = band.new_store()
    >>> for v in (1.0, 1.5, 3.0):
    ...     window.append(band.encode({"value": v}))
    >>> left = band.concat([band.left_one(band.encode({"value": v})) for v in (1.2, 3.4)])
    >>> band.match(left, window, None).tolist()
    [[True, True, False], [False, False, True]]
    >>> band.match(left, window, np.array([2])).tolist()  # only row 2 of the window
    [[False], [True]]

    ``custom`` takes a vectorized ``fn(left, right)`` over named columns:

    >>> later = build_predicate("custom", fn=lambda l, r: l["t"] < r["t"], columns=["t"])
    >>> later.match_values(np.array([[1.0], [5.0]]), np.array([[2.0], [4.0]])).tolist()
    [[True, True], [False, False]]
    """
    if fn is not None:
        if not columns:
            raise ConfigError("join.predicate: a custom predicate needs its column names")
        return DensePredicate("custom", tuple(columns), epsilon, fn)
    if kind in ("equi", "band"):
        if not attribute:
            raise ConfigError(f"join.attribute: required for predicate {kind!r}")
        return DensePredicate(kind, (attribute,), epsilon)
    if kind == "distance":
        return DensePredicate("distance", (x, y), epsilon)
    if kind == "cosine":
        return CosinePredicate(attribute or "keywords", epsilon)
    if kind == "overlap":
        if not attribute:
            raise ConfigError("join.attribute: required for predicate 'overlap'")
        return OverlapPredicate(attribute, epsilon)
    raise ConfigError(f"join.predicate: unknown predicate {kind!r}")
