"""Join predicates evaluated vectorized over whole basic windows (ARCHITECTURE §4).

Every predicate compares a *left side* (k partial-result members, or the probing tuple)
against the rows of one basic window's feature store and returns a k×n boolean matrix —
one NumPy expression per (partial set, basic window), never a Python loop over pairs.

* ``equi``: a_i = a_j on one attribute;
* ``band``: |a_i − a_j| ≤ ε (ε-band join);
* ``distance``: Euclidean distance of (x, y) ≤ ε (Ji et al. Q^×2: players within 5 m);
* ``cosine``: cosine similarity of keyword→weight vectors ≥ ε (news workload);
* ``custom``: a user callable ``fn(left, right) -> bool array`` over named columns,
  where ``left[c]`` has shape (k, 1) and ``right[c]`` shape (1, n).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, SerializationError
from pipeline.operators.join.growable import GrowableArray

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
BoolMatrix = NDArray[np.bool_]
COSINE_TOLERANCE = 1e-9  # same tolerance as the oracle, for ties at the threshold
#: relative slack of the band/equi value pre-filter (the exact predicate re-checks)
VALUE_SLACK = 1e-9
CustomFn = Callable[[Mapping[str, F64], Mapping[str, F64]], Any]


def value_bounds(pred: Any, v: F64) -> tuple[F64, F64]:
    """[v − ε, v + ε] (ε = 0 for equi) widened by a relative slack, per probe value: the
    range a sorted index or a pre-filter is searched with (candidates are re-checked with
    the exact predicate)."""
    eps = float(pred.epsilon) if pred.kind == "band" else 0.0
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
_KEY_CACHE: dict[str, int] = {}


def keyword_key(word: str) -> int:
    """A stable 63-bit key for a keyword (blake2b; the same in every process).

    >>> keyword_key("rain") == keyword_key("rain") != keyword_key("storm")
    True
    >>> 0 <= keyword_key("rain") < 2**63
    True
    """
    key = _KEY_CACHE.get(word)
    if key is None:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        key = int.from_bytes(digest, "little") & ((1 << 63) - 1)
        if len(_KEY_CACHE) < 1_000_000:
            _KEY_CACHE[word] = key
    return key


@dataclass(frozen=True, slots=True)
class SparseRow:
    """One unit-normalized keyword vector: sorted keys and their weights."""

    keys: I64
    weights: F64


@dataclass(frozen=True, slots=True)
class SparseSide:
    """k keyword vectors as a dense k×u matrix over their own sorted key union."""

    keys: I64
    mat: F64


class SparseStore:
    """Keyword vectors of one basic window in CSR form (keys, weights, row pointers).

    Every row holds at least one entry (a zero-weight key 0 for an empty vector), so
    ``np.add.reduceat`` over the row pointers gives one dot product per row.
    """

    __slots__ = ("keys", "ptr", "weights")

    def __init__(
        self,
        keys: GrowableArray | None = None,
        weights: GrowableArray | None = None,
        ptr: GrowableArray | None = None,
    ) -> None:
        self.keys = keys if keys is not None else GrowableArray((), np.int64)
        self.weights = weights if weights is not None else GrowableArray((), np.float64)
        self.ptr = ptr if ptr is not None else GrowableArray((), np.int64)

    def append(self, enc: SparseRow) -> None:
        self.ptr.append(len(self.keys))
        self.keys.extend(enc.keys)
        self.weights.extend(enc.weights)

    def delete(self, rows: I64) -> None:
        """Drop rows ``rows`` (ascending) and their entries; the others keep their order."""
        ptr = np.append(self.ptr.view(), len(self.keys))
        lengths = np.diff(ptr)
        gone = np.zeros(lengths.shape[0], dtype=bool)
        gone[rows] = True
        entries = np.flatnonzero(np.repeat(gone, lengths))
        self.keys.delete(entries)
        self.weights.delete(entries)
        kept = lengths[~gone]
        self.ptr = GrowableArray.from_array((np.cumsum(kept) - kept).astype(np.int64))

    def snapshot(self) -> dict[str, Any]:
        return {
            "keys": self.keys.view().copy(),
            "weights": self.weights.view().copy(),
            "ptr": self.ptr.view().copy(),
        }

    @staticmethod
    def from_snapshot(snap: Mapping[str, Any]) -> SparseStore:
        return SparseStore(
            GrowableArray.from_array(np.asarray(snap["keys"], np.int64)),
            GrowableArray.from_array(np.asarray(snap["weights"], np.float64)),
            GrowableArray.from_array(np.asarray(snap["ptr"], np.int64)),
        )


def _sparse_side(rows: Sequence[SparseRow]) -> SparseSide:
    if not rows:
        return SparseSide(np.zeros(0, np.int64), np.zeros((0, 0)))
    keys = np.unique(np.concatenate([r.keys for r in rows]))
    mat = np.zeros((len(rows), len(keys)))
    for p, r in enumerate(rows):
        mat[p, np.searchsorted(keys, r.keys)] = r.weights
    return SparseSide(keys, mat)


@dataclass(frozen=True)
class CosinePredicate:
    """Cosine similarity of keyword→weight vectors ≥ ε (weighted keyword overlap).

    >>> cos = build_predicate("cosine", attribute="kw", epsilon=0.7)
    >>> window = cos.new_store()
    >>> window.append(cos.encode({"kw": {"rain": 1.0}}))   # cosine 1/√2 ≈ 0.71
    >>> window.append(cos.encode({"kw": {"goal": 3.0}}))   # no keyword in common: 0
    >>> left = cos.left_one(cos.encode({"kw": {"rain": 1.0, "storm": 1.0}}))
    >>> cos.match(left, window, None).tolist()
    [[True, False]]
    """

    attribute: str
    epsilon: float
    kind: str = "cosine"

    @property
    def attributes(self) -> tuple[str, ...]:
        """The tuple attributes :meth:`encode` reads."""
        return (self.attribute,)

    def encode(self, attrs: Mapping[str, Any]) -> SparseRow:
        """Unit-normalized sparse vector; :class:`SerializationError` for a bad attribute."""
        try:
            raw = attrs[self.attribute]
        except KeyError:
            raise SerializationError(
                f"tuple has no attribute {self.attribute!r}: {dict(attrs)!r}"
            ) from None
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
        keys = np.array(sorted(merged), dtype=np.int64)
        weights = np.array([merged[k] for k in keys.tolist()], dtype=np.float64)
        norm = float(np.sqrt(np.dot(weights, weights)))
        if keys.size == 0 or norm == 0.0:
            return SparseRow(np.zeros(1, np.int64), np.zeros(1))
        return SparseRow(keys, weights / norm)

    def new_store(self) -> SparseStore:
        return SparseStore()

    def store_from_snapshot(self, snap: Mapping[str, Any]) -> SparseStore:
        return SparseStore.from_snapshot(snap)

    def left_one(self, enc: SparseRow) -> SparseSide:
        return _sparse_side([enc])

    def left_from_store(self, store: SparseStore, rows: I64) -> SparseSide:
        ptr = np.append(store.ptr.view(), len(store.keys))
        starts, ends = ptr[rows], ptr[rows + 1]
        lengths = ends - starts
        idx = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
            int(lengths.sum())
        )
        ks = store.keys.view()[idx]
        keys = np.unique(ks)
        mat = np.zeros((len(rows), len(keys)))
        mat[np.repeat(np.arange(len(rows)), lengths), np.searchsorted(keys, ks)] = (
            store.weights.view()[idx]
        )
        return SparseSide(keys, mat)

    @staticmethod
    def take(side: SparseSide, idx: I64) -> SparseSide:
        return SparseSide(side.keys, side.mat[idx])

    @staticmethod
    def concat(sides: Sequence[SparseSide]) -> SparseSide:
        keys = np.unique(np.concatenate([s.keys for s in sides]))
        mat = np.zeros((sum(s.mat.shape[0] for s in sides), len(keys)))
        r = 0
        for s in sides:
            mat[r : r + s.mat.shape[0], np.searchsorted(keys, s.keys)] = s.mat
            r += s.mat.shape[0]
        return SparseSide(keys, mat)

    def match(self, left: SparseSide, store: SparseStore, rows: I64 | None) -> BoolMatrix:
        """k×n: cosine(left[p], row) ≥ ε, via one gather + ``np.add.reduceat``."""
        keys, weights = store.keys.view(), store.weights.view()
        if left.keys.size == 0:
            dots = np.zeros((left.mat.shape[0], len(store.ptr)))
        else:
            pos = np.minimum(np.searchsorted(left.keys, keys), left.keys.size - 1)
            hit = left.keys[pos] == keys
            contrib = left.mat[:, pos] * np.where(hit, weights, 0.0)
            dots = np.add.reduceat(contrib, store.ptr.view(), axis=1)
        if rows is not None:
            dots = dots[:, rows]
        return np.asarray(dots >= self.epsilon - COSINE_TOLERANCE)


Predicate = DensePredicate | CosinePredicate


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
    raise ConfigError(f"join.predicate: unknown predicate {kind!r}")
