"""What a run's probes see of one stream, and which of it (ours; Ji et al. Alg. 2
visibility, GrubJoin §IV logical basic windows): :class:`Side` (stored rows, the run's
own rows, the sorted value index), the probing tuples of a group with their harvest
tables (:class:`Probes`), and the ts ranges and row counts a block of probes needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.basicwindow import BasicWindow
from pipeline.operators.join.valueindex import ValueIndex
from pipeline.operators.join.windows import StreamWindow

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B8 = NDArray[np.bool_]


class Side:
    """What one stream offers a run's probes: its stored rows and the rows of the run
    inserted into it (``q_*``, ascending run position). The stored rows are read as the
    window's merged copy (``ts``/``seq``/``feats``, ts-ascending; built only when a scan
    asks for it — the unindexed path), counted per stored basic window (``bws``), or
    searched in the window's sorted value index (``vindex``, the indexed path, with the
    run's rows by value in ``q_sorted``)."""

    __slots__ = ("_cols", "_d", "_window", "bws", "q_feats", "q_pos", "q_seq", "q_sorted",
                 "q_ts", "vindex")

    def __init__(self, bws: tuple[BasicWindow, ...], q_pos: I64, q_ts: I64, q_seq: I64,
                 q_feats: F64, *, window: StreamWindow | None = None,
                 vindex: ValueIndex | None = None, q_sorted: I64 | None = None) -> None:
        self.bws = bws
        self.q_pos, self.q_ts, self.q_seq, self.q_feats = q_pos, q_ts, q_seq, q_feats
        self.vindex, self.q_sorted = vindex, q_sorted
        self._window = window
        self._d = int(q_feats.shape[1])
        self._cols: tuple[I64, I64, F64] | None = None

    def _columns(self) -> tuple[I64, I64, F64]:
        if self._cols is None:
            if self._window is None:
                none = np.zeros(0, np.int64)
                self._cols = (none, none, np.zeros((0, self._d)))
            else:
                self._cols = self._window.merged_columns(self._d)
        return self._cols

    @property
    def merged(self) -> bool:
        """Whether the merged copy has been read (then counting uses it too)."""
        return self._cols is not None and self._window is not None

    @property
    def ts(self) -> I64:
        return self._columns()[0]

    @property
    def seq(self) -> I64:
        return self._columns()[1]

    @property
    def feats(self) -> F64:
        return self._columns()[2]


@dataclass(slots=True)
class Probes:
    """The probing tuples of one group (ascending run position, so ascending ts) and,
    per position of the order, their chosen-logical-window tables (P × n_l; None = the
    whole window for every probe)."""

    pos: I64
    ts: I64
    seq: I64
    feats: F64
    sels: list[B8 | None]


@dataclass(frozen=True, slots=True)
class Geometry:
    """Window W_l (ms), basic window b (ms) and n_l logical basic windows of a position."""

    window: int
    b: int
    n: int


def logical(ts_p: I64, ts_r: I64, geo: Geometry) -> I64:
    """Logical basic window min((ts_p − ts_r) // b, n − 1) of row ts_r for probe ts_p."""
    return np.minimum((ts_p - ts_r) // geo.b, geo.n - 1)


def union_ranges(ts: I64, lo: I64, sel: B8 | None, geo: Geometry) -> list[tuple[int, int]]:
    """Disjoint ascending ts ranges [a, b] holding every row some probe of a block may
    see: [min lo, max ts] without a selection, else the union over the chosen logical
    windows v of [min ts − (v+1)·b + 1, max ts − v·b] (v = n − 1 reaches down to lo)."""
    t_min, t_max, lo_min = int(ts[0]), int(ts[-1]), int(lo.min())
    if sel is None:
        return [(lo_min, t_max)]
    chosen = np.flatnonzero(sel.any(axis=0)).tolist()
    b, n = geo.b, geo.n
    spans = []
    for v in chosen:
        a = lo_min if v >= n - 1 else max(lo_min, t_min - (v + 1) * b + 1)
        spans.append((a, t_max - v * b))
    spans.sort()
    out: list[tuple[int, int]] = []
    for a, c in spans:
        if a > c:
            continue
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], c))
        else:
            out.append((a, c))
    return out


#: probes per block of the dense count of a run's out-of-order rows
_BLOCK = 1024


def run_rows_seen(side: Side, pos: I64, lo: I64) -> I64:
    """Per probe at run position ``pos``, the run's rows of this stream before
    it (``q_pos < pos``) with ts ≥ ``lo`` (Ji et al. Alg. 2: what the probe sees of the
    run). The rows whose ts is a running maximum form a ts-sorted subsequence, counted by
    binary search; only the out-of-order rest is compared probe by row."""
    n = pos.shape[0]
    q_pos, q_ts = side.q_pos, side.q_ts
    if n == 0 or q_pos.shape[0] == 0:
        return np.zeros(n, np.int64)
    before = q_pos.searchsorted(pos, "left")
    top = np.maximum.accumulate(q_ts)
    ordered = q_ts >= top
    o_idx = np.flatnonzero(ordered)
    old = np.minimum(q_ts[o_idx].searchsorted(lo, "left"), o_idx.searchsorted(before, "left"))
    seen = np.asarray(before - old, np.int64)
    s_idx = np.flatnonzero(~ordered)
    if s_idx.shape[0]:
        s_ts = q_ts[s_idx]
        for a in range(0, n, _BLOCK):
            c = min(n, a + _BLOCK)
            gone = (s_idx[None, :] < before[a:c, None]) & (s_ts[None, :] < lo[a:c, None])
            seen[a:c] -= gone.sum(axis=1)
    return seen


def visible_stored(side: Side, lo: I64) -> I64:
    """Per probe, stored rows with ts ≥ lo (its whole window): a binary search on the
    merged copy, or per stored basic window on the indexed path."""
    if side.merged or not side.bws:
        return np.asarray(side.ts.shape[0] - side.ts.searchsorted(lo, "left"), np.int64)
    out = np.zeros(lo.shape[0], np.int64)
    lo_min, lo_max = int(lo.min()), int(lo.max())
    for bw in side.bws:
        if bw.max_ts < lo_min:
            continue
        if bw.min_ts >= lo_max:
            out += len(bw)
            continue
        tsv = bw.ts.view()
        if not bw.ordered:
            tsv = np.sort(tsv)
        out += len(bw) - tsv.searchsorted(lo, "left")
    return out


def stored_counts(ts_sorted: I64, ts: I64, lo: I64, sel: B8 | None, geo: Geometry) -> I64:
    """Per probe, stored rows it sees (ts ≥ lo, in its chosen logical windows): binary
    searches on the ts-sorted store — edges ts − v·b (v < n) and lo − 1."""
    if sel is None:
        return np.asarray(ts_sorted.shape[0] - ts_sorted.searchsorted(lo, "left"), np.int64)
    edges = ts[:, None] - np.arange(geo.n, dtype=np.int64)[None, :] * geo.b
    edges = np.concatenate([edges, (lo - 1)[:, None]], axis=1)
    right = ts_sorted.searchsorted(edges.ravel(), "right").reshape(edges.shape)
    per_window = right[:, :-1] - right[:, 1:]
    return np.asarray((per_window * sel).sum(axis=1), np.int64)
