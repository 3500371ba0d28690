"""Sparse key → weight vectors, the feature form of the set-valued predicates (``cosine``,
``overlap``; ARCHITECTURE §4): one row per tuple, a basic window's rows in CSR form, and
the one vectorized kernel both predicates use — every left row's inner product with every
stored row (Gedik et al., CIKM §1: the inner-product join of weighted sets; an overlap
join of plain sets is the inner product of 0/1 vectors).

A key is a stable 63-bit integer (:func:`keyword_key` of the keyword or item text), so a
vector means the same in every process and a snapshot can be restored anywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.growable import GrowableArray

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

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
    """One key → weight vector: sorted keys and their weights."""

    keys: I64
    weights: F64


def _frozen(arr: NDArray[Any]) -> NDArray[Any]:
    arr.flags.writeable = False
    return arr


#: the row of an empty vector: one zero-weight key 0, so every stored row has an entry
EMPTY_ROW = SparseRow(_frozen(np.zeros(1, np.int64)), _frozen(np.zeros(1)))


def sparse_row(merged: Mapping[int, float]) -> SparseRow:
    """The row of a key → weight dict (:data:`EMPTY_ROW` when it is empty)."""
    if not merged:
        return EMPTY_ROW
    keys = np.array(sorted(merged), dtype=np.int64)
    return SparseRow(keys, np.array([merged[k] for k in keys.tolist()], dtype=np.float64))


@dataclass(frozen=True, slots=True)
class SparseSide:
    """k vectors as a dense k×u matrix over their own sorted key union."""

    keys: I64
    mat: F64


class SparseStore:
    """The vectors of one basic window in CSR form (keys, weights, row pointers).

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

    @staticmethod
    def joined(stores: Sequence[SparseStore]) -> SparseStore:
        """One store holding the rows of ``stores`` one after another."""
        ptrs, at = [], 0
        for st in stores:
            ptrs.append(st.ptr.view() + at)
            at += len(st.keys)
        return SparseStore(
            GrowableArray.from_array(np.concatenate([st.keys.view() for st in stores])),
            GrowableArray.from_array(np.concatenate([st.weights.view() for st in stores])),
            GrowableArray.from_array(np.concatenate(ptrs).astype(np.int64)))

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


def side_of(rows: Sequence[SparseRow]) -> SparseSide:
    """The dense k×u side of some rows."""
    if not rows:
        return SparseSide(np.zeros(0, np.int64), np.zeros((0, 0)))
    keys = np.unique(np.concatenate([r.keys for r in rows]))
    mat = np.zeros((len(rows), len(keys)))
    for p, r in enumerate(rows):
        mat[p, np.searchsorted(keys, r.keys)] = r.weights
    return SparseSide(keys, mat)


def gather_side(store: SparseStore, rows: I64) -> SparseSide:
    """The dense side of rows ``rows`` of a store (one gather, no Python loop)."""
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


def take_side(side: SparseSide, idx: I64) -> SparseSide:
    """Rows ``idx`` of a side (repeats allowed)."""
    return SparseSide(side.keys, side.mat[idx])


def concat_sides(sides: Sequence[SparseSide]) -> SparseSide:
    """The sides' rows one after another, over the union of their keys."""
    keys = np.unique(np.concatenate([s.keys for s in sides]))
    mat = np.zeros((sum(s.mat.shape[0] for s in sides), len(keys)))
    r = 0
    for s in sides:
        mat[r : r + s.mat.shape[0], np.searchsorted(keys, s.keys)] = s.mat
        r += s.mat.shape[0]
    return SparseSide(keys, mat)


def dots(left: SparseSide, store: SparseStore, rows: I64 | None) -> F64:
    """k×n inner products of the left rows with the store's rows ``rows`` (None = all):
    one gather of the left weights at every stored key, then ``np.add.reduceat`` over
    the row pointers."""
    keys, weights = store.keys.view(), store.weights.view()
    if left.keys.size == 0:
        out = np.zeros((left.mat.shape[0], len(store.ptr)))
    else:
        pos = np.minimum(np.searchsorted(left.keys, keys), left.keys.size - 1)
        hit = left.keys[pos] == keys
        contrib = left.mat[:, pos] * np.where(hit, weights, 0.0)
        out = np.add.reduceat(contrib, store.ptr.view(), axis=1)
    return out if rows is None else out[:, rows]


def tail_dots(left: SparseSide, store: SparseStore, first: int) -> F64:
    """:func:`dots` of the left rows with the store's rows ``first``.. only."""
    ptr = store.ptr.view()[first:]
    if ptr.shape[0] == 0:
        return np.zeros((left.mat.shape[0], 0))
    at = int(ptr[0])
    tail = SparseStore(GrowableArray.from_array(store.keys.view()[at:]),
                       GrowableArray.from_array(store.weights.view()[at:]),
                       GrowableArray.from_array(ptr - at))
    return dots(left, tail, None)


@dataclass(frozen=True, slots=True)
class InvertedIndex:
    """The rows of a store by key (Gedik et al., CIKM §4: the inverted index of a basic
    window): key ``keys[k]``'s postings are ``rows[starts[k]:starts[k + 1]]`` with their
    weights, ascending — the rows' arrival order, so the lists are *time-sorted*."""

    keys: I64
    starts: I64
    rows: I64
    weights: F64
    n: int

    @staticmethod
    def of(store: SparseStore) -> InvertedIndex:
        """The index of every row of ``store`` (one stable sort of its entries by key)."""
        keys, weights = store.keys.view(), store.weights.view()
        ptr = store.ptr.view()
        lengths = np.diff(np.append(ptr, keys.shape[0]))
        rows = np.repeat(np.arange(ptr.shape[0], dtype=np.int64), lengths)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        distinct, starts = np.unique(sorted_keys, return_index=True)
        return InvertedIndex(distinct, np.append(starts, sorted_keys.shape[0]).astype(np.int64),
                             rows[order], weights[order], int(ptr.shape[0]))

    def dots(self, row: SparseSide) -> tuple[F64, int]:
        """(inner product of the one left row with each of the n indexed rows, postings
        read): the left keys' posting lists merged by one ``np.bincount``."""
        if self.keys.shape[0] == 0 or row.keys.shape[0] == 0:
            return np.zeros(self.n), 0
        pos = np.minimum(np.searchsorted(self.keys, row.keys), self.keys.shape[0] - 1)
        found = self.keys[pos] == row.keys
        lo, hi = self.starts[pos[found]], self.starts[pos[found] + 1]
        lengths = hi - lo
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(self.n), 0
        idx = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        w = np.repeat(row.mat[0, found], lengths) * self.weights[idx]
        return np.bincount(self.rows[idx], w, minlength=self.n).astype(np.float64), total
