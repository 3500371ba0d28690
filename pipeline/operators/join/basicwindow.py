"""One basic window of a stream window (GrubJoin §1.2): the NumPy columns (ts, seq, the
predicate's feature store) of the tuples with ts in [k·b, (k+1)·b), kept in ts order for
dense stores. :mod:`pipeline.operators.join.windows` holds a stream's basic windows.

Beyond the paper (ours, opt-in via ``JoinConfig.index``): each basic window keeps a
sorted index of its first feature column (:meth:`BasicWindow.range_rows`), so a band
(|a − v| ≤ ε) or equi (a = v) probe finds its candidate rows with ``np.searchsorted``
instead of comparing every row. The index covers a prefix of the rows and is rebuilt
when the unsorted tail grows past a quarter of it (amortized O(log n) per insert); the
tail is scanned linearly. Candidates are a superset (the range is widened by a few
ulps) and the caller re-checks them with the exact predicate, so results are exact.
A sparse store (``overlap``) keeps an inverted index instead, rebuilt by the same rule
(:meth:`BasicWindow.overlaps`; Gedik et al., CIKM §4: one index per basic window, its
posting lists time-sorted), which gives the exact overlaps themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.growable import GrowableArray
from pipeline.operators.join.predicates import DenseStore, Predicate
from pipeline.operators.join.sparse import InvertedIndex, SparseSide, SparseStore, tail_dots

Store = DenseStore | SparseStore
#: rows of a basic window: None = all, a slice (contiguous) or ascending row indices
Rows = NDArray[np.int64] | slice | None
_NO_ROWS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)


class BasicWindow:
    """Columns of the tuples of one basic window (min/max ts tracked). A dense store keeps
    its rows in ts order (late tuples are inserted in place); a sparse one appends them
    and is ``ordered`` only until the first late tuple."""

    __slots__ = ("_inv", "_ix_n", "_ix_rows", "_ix_vals", "bid", "dirty", "feats", "max_ts",
                 "min_ts", "ordered", "seq", "ts")

    def __init__(self, bid: int, feats: Store) -> None:
        self.bid = bid
        self.ts = GrowableArray((), np.int64)
        self.seq = GrowableArray((), np.int64)
        self.feats = feats
        self.min_ts = np.iinfo(np.int64).max
        self.max_ts = np.iinfo(np.int64).min
        #: rows were appended in ts order (in-order tuples are; a late one clears it)
        self.ordered = True
        #: changed since its last piece was taken (:meth:`StreamWindow.changes`): every
        #: method that changes the rows sets it
        self.dirty = True
        self._ix_n = 0  # rows covered by the sorted index
        self._ix_vals: NDArray[np.float64] = np.zeros(0)
        self._ix_rows: NDArray[np.int64] = np.zeros(0, np.int64)
        self._inv: InvertedIndex | None = None  # sparse stores: the inverted index

    def misses(self, lo: float, hi: float) -> bool:
        """True iff the index covers every row and no value can lie in [lo, hi] (a
        pure-Python test, so basic windows out of the value range cost no NumPy call)."""
        n = self._ix_n
        return n == len(self.ts) and (n == 0 or hi < self._ix_vals[0] or lo > self._ix_vals[-1])

    def range_rows(self, lo: float, hi: float, sealed: bool = False) -> NDArray[np.int64]:
        """Ascending row indices whose first feature column lies in [lo, hi] (dense
        stores only; a superset is fine — the caller re-checks the predicate).
        ``sealed``: no longer the newest basic window, so any tail is indexed now."""
        col = self.feats.rows.view()[:, 0]  # type: ignore[union-attr]
        n = col.shape[0]
        self.value_index(sealed)
        a, b = self._ix_vals.searchsorted((lo, np.nextafter(hi, np.inf))).tolist()
        hits = self._ix_rows[a:b]
        if n > self._ix_n:
            tail = col[self._ix_n :]
            extra = np.flatnonzero((tail >= lo) & (tail <= hi)) + self._ix_n
            hits = np.concatenate([hits, extra])
        return np.sort(hits) if hits.shape[0] > 1 else hits.copy()

    def value_index(self, sealed: bool = False
                    ) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
        """(sorted first-feature values, their rows, rows covered): the sorted index of a
        dense store, rebuilt when the unindexed tail outgrows a quarter of it (or at
        once when ``sealed``); rows past the covered ones are not in it yet."""
        n = len(self.ts)
        tail_n = n - self._ix_n
        if tail_n > 0 and (sealed or tail_n > max(32, self._ix_n // 4)):
            col = self.feats.rows.view()[:, 0]  # type: ignore[union-attr]
            order = np.argsort(col, kind="stable")
            self._ix_vals = col[order]
            self._ix_rows = order.astype(np.int64)
            self._ix_n = n
        return self._ix_vals, self._ix_rows, self._ix_n

    def overlaps(self, left: SparseSide, sealed: bool = False) -> tuple[NDArray[np.float64], int]:
        """(inner product of the probing row with every row, postings read): the
        inverted index over a prefix of the rows (sparse stores; rebuilt like the
        sorted index, when the unindexed tail outgrows a quarter of it or at once when
        ``sealed``), the tail scanned (one read per tail row)."""
        store = self.feats
        assert isinstance(store, SparseStore)
        n = len(self.ts)
        tail_n = n - self._ix_n
        if tail_n > 0 and (sealed or tail_n > max(32, self._ix_n // 4)):
            self._inv = InvertedIndex.of(store)
            self._ix_n = n
        if self._ix_n == 0 or self._inv is None:
            return tail_dots(left, store, 0)[0], n
        head, read = self._inv.dots(left)
        if n == self._ix_n:
            return head, read
        return np.concatenate([head, tail_dots(left, store, self._ix_n)[0]]), read + n - self._ix_n

    def __len__(self) -> int:
        return len(self.ts)

    def add_many(self, ts: NDArray[np.int64], seq: NDArray[np.int64],
                 feats: NDArray[np.float64]) -> bool:
        """:meth:`add` for several tuples (dense stores), in order; True iff every one
        was appended at the end (none late), which costs one extend per column. Late
        ones are each put after the equal ts :meth:`add` finds: the rows end up stably
        sorted by ts, which one stable sort of old + new rows gives at once."""
        self.dirty = True
        self.min_ts = min(self.min_ts, int(ts.min()))
        in_order = bool(ts[0] >= self.max_ts) and bool((ts[1:] >= ts[:-1]).all())
        self.max_ts = max(self.max_ts, int(ts.max()))
        self.ts.extend(ts)
        self.seq.extend(seq)
        self.feats.rows.extend(feats)  # type: ignore[union-attr]
        if in_order:
            return True
        if not self.ordered:  # rows were not in ts order before (a restored snapshot)
            return False
        order = np.argsort(self.ts.view(), kind="stable")
        for col in (self.ts, self.seq, self.feats.rows):  # type: ignore[union-attr]
            col.view()[:] = col.view()[order]
        self._ix_n = 0  # row ids moved: the value index is rebuilt on demand
        return False

    def add(self, ts: int, seq: int, enc: Any) -> int:
        """Store a tuple; returns its row. In-order tuples are appended; a late one
        (ts < max_ts) is put at its ts position in a dense store (after equal ts), so
        the rows stay in ts order and :meth:`rows_between` stays a binary search (a
        sparse store appends it and the basic window is no longer ``ordered``)."""
        self.dirty = True
        if ts < self.min_ts:
            self.min_ts = ts
        if ts >= self.max_ts:
            self.max_ts = ts
        elif self.ordered and isinstance(self.feats, DenseStore):
            row = int(self.ts.view().searchsorted(ts, side="right"))
            self.ts.insert(row, ts)
            self.seq.insert(row, seq)
            self.feats.rows.insert(row, enc)
            self._ix_n = 0  # row ids moved: the value index is rebuilt on demand
            return row
        else:
            self.ordered = False
        self.ts.append(ts)
        self.seq.append(seq)
        self.feats.append(enc)
        return len(self.ts) - 1

    def drop_rows(self, rows: NDArray[np.int64]) -> None:
        """Remove rows ``rows`` (ascending, distinct; memory-bounded windows evict single
        tuples). The others keep their order; the value index is rebuilt on demand."""
        self.dirty = True
        gone = self.ts.view()[rows]
        inside = bool(((gone > self.min_ts) & (gone < self.max_ts)).all())
        self.ts.delete(rows)
        self.seq.delete(rows)
        self.feats.delete(rows)
        self._ix_n = 0
        if inside:
            return  # the oldest and newest rows stay: min/max unchanged
        if len(self.ts):
            tsv = self.ts.view()
            self.min_ts = int(tsv.min())
            self.max_ts = int(tsv.max())
        else:
            self.min_ts = np.iinfo(np.int64).max
            self.max_ts = np.iinfo(np.int64).min

    def find(self, ts: int, seq: int) -> NDArray[np.int64]:
        """Rows holding the tuple (ts, seq) — one, or none if it is not stored here (a
        binary search over ts while the rows are in ts order)."""
        tsv = self.ts.view()
        if self.ordered:
            a, b = tsv.searchsorted((ts, ts + 1)).tolist()
            hit = np.flatnonzero(self.seq.view()[a:b] == seq) + a
            if hit.size:
                return hit
        return np.flatnonzero((self.seq.view() == seq) & (tsv == ts))

    def rows_between(self, t_lo: int, t_hi: int) -> Rows:
        """Ascending rows with t_lo ≤ ts ≤ t_hi (None = every row): a slice found by
        binary search while the rows are in ts order, else one vectorized filter."""
        if self.min_ts >= t_lo and self.max_ts <= t_hi:
            return None
        if self.max_ts < t_lo or self.min_ts > t_hi:
            return _NO_ROWS
        tsv = self.ts.view()
        if self.ordered:
            a, c = tsv.searchsorted((t_lo, t_hi + 1)).tolist()
            return slice(a, c)
        return np.flatnonzero((tsv >= t_lo) & (tsv <= t_hi))

    def snapshot(self) -> dict[str, Any]:
        return {
            "bid": self.bid,
            "ts": self.ts.view().copy(),
            "seq": self.seq.view().copy(),
            "feats": self.feats.snapshot(),
        }

    @staticmethod
    def from_snapshot(snap: dict[str, Any], predicate: Predicate) -> BasicWindow:
        bw = BasicWindow(int(snap["bid"]), predicate.store_from_snapshot(snap["feats"]))
        bw.ts = GrowableArray.from_array(np.asarray(snap["ts"], np.int64))
        bw.seq = GrowableArray.from_array(np.asarray(snap["seq"], np.int64))
        if len(bw.ts):
            tsv = bw.ts.view()
            bw.min_ts = int(tsv.min())
            bw.max_ts = int(tsv.max())
            bw.ordered = bool((tsv[1:] >= tsv[:-1]).all())
        return bw
