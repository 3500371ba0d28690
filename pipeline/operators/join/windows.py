"""One stream's sliding window stored as basic windows of b ms (GrubJoin §1.2).

Basic window ``k`` holds the tuples with ts in [k·b, (k+1)·b) as NumPy columns (ts, seq
and the predicate's feature store). Expiry drops whole basic windows, and only once
*every* tuple in it is older than the oldest ts any future probe may need
(``max_ts < ⋈T − W``, Ji et al. Alg. 2), so exactness never depends on b. Probes filter
partially covered basic windows by ts.

Beyond the paper (ours, opt-in via ``JoinConfig.index``): each basic window keeps a
sorted index of its first feature column (:mod:`pipeline.operators.join.basicwindow`).
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.basicwindow import BasicWindow, Rows, Store
from pipeline.operators.join.growable import GrowableArray
from pipeline.operators.join.predicates import DenseStore, Predicate
from pipeline.operators.join.sparse import SparseStore

__all__ = ["StreamWindow", "logical_spans", "row_count"]

class StreamWindow:
    """The basic windows of one stream, ordered by id (= ts // b).

    Ours: the window also keeps a *merged* copy of all its rows (:meth:`merged_in_range`)
    so a probe compares against the whole window in one NumPy call instead of one per
    basic window (the per-call overhead dominated at b = w/10; dense and sparse stores).
    Its rows are in basic-window order, as the per-basic-window scan visits them, so
    results come out in the same order. Inserts into the newest basic window append to
    it; an expiry or a late tuple drops it and it is rebuilt on the next probe.
    """

    __slots__ = ("_merged", "_persisted", "b", "bids", "bws", "predicate", "total",
                 "window_ms")

    def __init__(self, window_ms: int, b: int, predicate: Predicate) -> None:
        self.window_ms = window_ms
        self.b = b
        self.predicate = predicate
        self.bids: list[int] = []
        self.bws: dict[int, BasicWindow] = {}
        self._merged: BasicWindow | None = None
        self.total = 0  # tuples held, kept by insert/expire/restore
        #: ids of the basic windows whose pieces were taken (:meth:`changes`)
        self._persisted: set[int] = set()

    def insert(self, ts: int, seq: int, enc: Any) -> None:
        """Add a tuple to its basic window (created on demand, also for late tuples)."""
        bid = ts // self.b
        bw = self.bws.get(bid)
        if bw is None:
            bw = BasicWindow(bid, self.predicate.new_store())
            self.bws[bid] = bw
            if not self.bids or bid > self.bids[-1]:
                self.bids.append(bid)
            else:
                bisect.insort(self.bids, bid)
        row = bw.add(ts, seq, enc)
        self.total += 1
        if self._merged is not None:
            if bid == self.bids[-1] and row == len(bw) - 1:
                self._merged.add(ts, seq, enc)  # keeps the merged rows in window order
            else:  # a late tuple not at the end of the newest basic window
                self._merged = None

    def insert_many(self, ts: NDArray[np.int64], seq: NDArray[np.int64],
                    feats: NDArray[np.float64]) -> None:
        """:meth:`insert` for several tuples in order (dense stores; the run path):
        one extend per basic window they land in. The merged copy keeps up only if
        every tuple lands at the end of the newest basic window, as with :meth:`insert`."""
        if ts.shape[0] == 0:
            return
        newest = self.bws[self.bids[-1]].max_ts if self.bids else np.iinfo(np.int64).min
        appended = bool(ts[0] >= newest) and bool((ts[1:] >= ts[:-1]).all())
        bids = ts // self.b
        cut = np.flatnonzero(bids[1:] != bids[:-1]) + 1
        if appended or cut.shape[0] == 0:
            groups = np.split(np.arange(ts.shape[0]), cut)
        else:
            order = np.argsort(bids, kind="stable")
            sb = bids[order]
            groups = np.split(order, np.flatnonzero(sb[1:] != sb[:-1]) + 1)
        for rows in groups:
            bid = int(bids[rows[0]])
            bw = self.bws.get(bid)
            if bw is None:
                bw = BasicWindow(bid, self.predicate.new_store())
                self.bws[bid] = bw
                if not self.bids or bid > self.bids[-1]:
                    self.bids.append(bid)
                else:
                    bisect.insort(self.bids, bid)
            bw.add_many(ts[rows], seq[rows], feats[rows])
        self.total += int(ts.shape[0])
        if self._merged is not None:
            if appended:
                merged = self._merged
                merged.max_ts = int(ts[-1])
                merged.min_ts = min(merged.min_ts, int(ts[0]))
                merged.ts.extend(ts)
                merged.seq.extend(seq)
                merged.feats.rows.extend(feats)  # type: ignore[union-attr]
            else:
                self._merged = None

    def merged_columns(self, d: int) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                              NDArray[np.float64]]:
        """(ts, seq, feature rows) of every stored tuple in window order — ascending ts
        for a dense store — from the merged copy (built if needed; ``d`` features)."""
        if not self.bids:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, d))
        self.merged_in_range(np.iinfo(np.int64).min)
        merged = self._merged
        assert merged is not None
        return merged.ts.view(), merged.seq.view(), merged.feats.rows.view()  # type: ignore[union-attr]

    def expire(self, lo: int) -> None:
        """Drop every basic window whose newest tuple is older than ``lo``."""
        while self.bids and self.bws[self.bids[0]].max_ts < lo:
            self.total -= len(self.bws.pop(self.bids.pop(0)))
            self._merged = None

    def remove(self, ts: int, seq: int) -> bool:
        """Evict the stored tuple (ts, seq) before it expires (memory-bounded join; the
        policies in ``pipeline/operators/memory``). False if it is not stored (e.g. its
        basic window expired already). The merged copy, if any, loses the same row."""
        bw = self.bws.get(ts // self.b)
        if bw is None:
            return False
        rows = bw.find(ts, seq)
        if rows.size == 0:
            return False
        rows = rows[:1]
        bw.drop_rows(rows)
        self.total -= 1
        if not len(bw):
            del self.bws[bw.bid]
            self.bids.remove(bw.bid)
        if self._merged is not None:
            mrows = self._merged.find(ts, seq)[:1]
            if mrows.size:
                self._merged.drop_rows(mrows)
            else:  # cannot happen while the copy is in sync; rebuild to be safe
                self._merged = None
        return True

    def expire_rows(self, lo: int) -> int:
        """Drop *every* stored tuple with ts < lo, not only whole basic windows (a
        memory-bounded window frees the space of tuples no probe can reach any more);
        returns how many were dropped."""
        before = self.total
        self.expire(lo)
        if self.bids:
            bw = self.bws[self.bids[0]]
            if bw.min_ts < lo:
                rows = np.flatnonzero(bw.ts.view() < lo)
                bw.drop_rows(rows)
                self.total -= int(rows.size)
                self._merged = None
                if not len(bw):
                    del self.bws[bw.bid]
                    self.bids.pop(0)
        return before - self.total

    def merged_in_range(self, lo: int) -> list[tuple[BasicWindow, NDArray[np.int64] | None]]:
        """Like :meth:`in_range`, as one pseudo basic window holding every row."""
        if not self.bids:
            return []
        merged = self._merged
        if merged is None:
            bws = [self.bws[bid] for bid in self.bids]
            merged = BasicWindow(-1, _merged_store(bws))
            merged.ts = GrowableArray.from_array(np.concatenate([bw.ts.view() for bw in bws]))
            merged.seq = GrowableArray.from_array(
                np.concatenate([bw.seq.view() for bw in bws]))
            merged.min_ts = min(bw.min_ts for bw in bws)
            merged.max_ts = max(bw.max_ts for bw in bws)
            # basic windows hold disjoint ts ranges in id order: the copy is in ts order
            # iff every one of them is
            merged.ordered = all(bw.ordered for bw in bws)
            self._merged = merged
        # the smallest basic-window id holds the oldest tuple (bid = ts // b)
        if self.bws[self.bids[0]].min_ts >= lo:
            return [(merged, None)]
        rows = np.flatnonzero(merged.ts.view() >= lo)
        return [(merged, rows)] if rows.size else []

    def in_range(self, lo: int) -> list[tuple[BasicWindow, NDArray[np.int64] | None]]:
        """Basic windows with tuples of ts ≥ lo, with row indices (None = all rows)."""
        first = bisect.bisect_left(self.bids, lo // self.b)
        return _parts_from(lo, [self.bws[bid] for bid in self.bids[first:]])

    def logical_parts(self, ts: int, lo: int, chosen: tuple[int, ...], n: int
                      ) -> list[tuple[BasicWindow, NDArray[np.int64] | None]]:
        """Like :meth:`in_range`, restricted to the stored basic windows that overlap the
        *logical* basic windows ``chosen`` of a probe at ``ts`` (GrubJoin §IV: logical
        window v holds ts − t in [v·b, (v+1)·b), the last one, n − 1, everything older).
        Found by id arithmetic — O(|chosen|), not O(n) — in id order; the caller still
        filters rows by their own logical window."""
        b = self.b
        bids: set[int] = set()
        first = lo // b
        for v in chosen:
            if not 0 <= v < n:
                continue
            hi_bid = (ts - v * b) // b
            lo_bid = first if v == n - 1 else (ts - (v + 1) * b + 1) // b
            bids.update(range(max(lo_bid, first), hi_bid + 1))
        return _parts_from(lo, [self.bws[bid] for bid in sorted(bids) if bid in self.bws])

    def harvested_parts(self, ts: int, lo: int, spans: tuple[tuple[int, int], ...], n: int
                        ) -> list[tuple[BasicWindow, Rows]]:
        """Like :meth:`logical_parts`, but each part's rows are exactly those in the chosen
        logical windows: ``spans`` are runs (v_first, v_last) of consecutive chosen
        logical windows, newest first (:func:`logical_spans`); run (v₁, v₂) holds
        ts − t in [v₁·b, (v₂+1)·b), or everything older than v₁·b when v₂ = n − 1. Each
        run is one ts range, found per stored basic window by binary search (rows are
        mostly in ts order). Parts come in id order, rows ascending — the order of
        :meth:`logical_parts` with its per-row filter."""
        b = self.b
        out: list[tuple[BasicWindow, Rows]] = []
        bids = self.bids
        for v1, v2 in reversed(spans):
            t_hi = ts - v1 * b
            t_lo = lo if v2 >= n - 1 else max(lo, ts - (v2 + 1) * b + 1)
            if t_lo > t_hi:
                continue
            last = t_hi // b
            for k in range(bisect.bisect_left(bids, t_lo // b), len(bids)):
                bid = bids[k]
                if bid > last:
                    break
                bw = self.bws[bid]
                rows = bw.rows_between(t_lo, t_hi)
                if row_count(bw, rows):
                    out.append((bw, rows))
        return out

    def count_from(self, lo: int) -> int:
        """Number of stored tuples with ts ≥ lo (|S_j[W_j]| for the productivity profiler
        and the quality policy's n^×, once per probe): the running total minus the older
        rows, which only basic windows with id ≤ lo // b can hold — O(1) amortized."""
        total = self.total
        bids = self.bids
        if not bids or self.bws[bids[0]].min_ts >= lo:
            return total
        last = lo // self.b
        for bid in bids:
            if bid > last:
                break
            bw = self.bws[bid]
            if bw.max_ts < lo:
                total -= len(bw)
            elif bw.min_ts < lo:
                tsv = bw.ts.view()
                total -= int(tsv.searchsorted(lo) if bw.ordered else np.count_nonzero(tsv < lo))
        return total

    def size(self) -> int:
        return self.total

    def snapshot(self) -> list[dict[str, Any]]:
        return [self.bws[bid].snapshot() for bid in self.bids]

    def restore(self, snaps: list[dict[str, Any]]) -> None:
        """Load :meth:`snapshot` pieces (ascending ids); every basic window counts as
        changed until :meth:`mark_persisted`."""
        self.bids = []
        self.bws = {}
        self._merged = None
        self.total = 0
        self._persisted = set()
        for s in snaps:
            bw = BasicWindow.from_snapshot(s, self.predicate)
            self.bids.append(bw.bid)
            self.bws[bw.bid] = bw
            self.total += len(bw)

    def changes(self) -> tuple[dict[int, dict[str, Any]], list[int]]:
        """Incremental state: the snapshot pieces of the basic windows changed since the
        previous call (inserts, late inserts, evictions; new ones included) by id, and
        the ids of the basic windows dropped since (expired or emptied). Marks every
        basic window persisted. A basic window the stream's time has passed stays
        clean unless a late tuple lands in it, so a call costs the changed rows, not
        the window's content."""
        changed: dict[int, dict[str, Any]] = {}
        for bid in self.bids:
            bw = self.bws[bid]
            if bw.dirty:
                changed[bid] = bw.snapshot()
                bw.dirty = False
        removed = sorted(b for b in self._persisted if b not in self.bws)
        self._persisted = set(self.bids)
        return changed, removed

    def mark_persisted(self) -> None:
        """Every basic window is stored as it is (restored from its pieces)."""
        for bw in self.bws.values():
            bw.dirty = False
        self._persisted = set(self.bids)




def row_count(bw: BasicWindow, rows: Rows) -> int:
    """How many rows ``rows`` names in ``bw`` (None = all of them)."""
    if rows is None:
        return len(bw)
    if isinstance(rows, slice):
        return int(rows.stop - rows.start)
    return int(rows.size)


def logical_spans(chosen: tuple[int, ...], n: int) -> tuple[tuple[int, int], ...]:
    """Runs (first, last) of consecutive logical windows in ``chosen`` (those in [0, n)),
    ascending — the ts ranges :meth:`StreamWindow.harvested_parts` scans.

    >>> logical_spans((4, 0, 1, 7, 3), 8)
    ((0, 1), (3, 4), (7, 7))
    """
    runs: list[tuple[int, int]] = []
    for v in sorted({v for v in chosen if 0 <= v < n}):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return tuple(runs)


def _merged_store(bws: list[BasicWindow]) -> Store:
    """The feature stores of ``bws`` as one, rows in basic-window order."""
    first = bws[0].feats
    if isinstance(first, SparseStore):
        return SparseStore.joined([bw.feats for bw in bws])  # type: ignore[misc]
    return DenseStore(0, GrowableArray.from_array(np.concatenate(
        [bw.feats.rows.view() for bw in bws])))  # type: ignore[union-attr]


def _parts_from(lo: int, bws: list[BasicWindow]
                ) -> list[tuple[BasicWindow, NDArray[np.int64] | None]]:
    """The (basic window, rows with ts ≥ lo) pairs of ``bws`` that hold any such row;
    rows = None when all of them do."""
    out: list[tuple[BasicWindow, NDArray[np.int64] | None]] = []
    for bw in bws:
        if bw.min_ts >= lo:
            out.append((bw, None))
        elif bw.max_ts >= lo:
            out.append((bw, np.flatnonzero(bw.ts.view() >= lo)))
    return out
