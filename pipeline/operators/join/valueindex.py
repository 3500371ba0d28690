"""One sorted value index per stream window for the run path's indexed probe (ours).

``[join] index = true`` with a band (|a − v| ≤ ε) or equi (a = v) predicate: every
stored tuple of a window, across all its basic windows (GrubJoin §1.2), as (value, ts,
seq) sorted by value, so a whole block of probes finds its candidate rows with two
``np.searchsorted`` calls — not one search per probe and basic window. Candidates are
then filtered by the probe's visibility (ts ≥ ts_i − W_l, harvested logical windows)
and re-checked with the exact predicate.

It is kept in step with the window by the run probe path
(:mod:`~pipeline.operators.join.run`): the run's inserted tuples are merged in, and the
rows of expired basic windows dropped (every row of an expired basic window is older
than the first remaining one's start, so the index holds exactly the window's rows).
Inserts go to a small sorted *tail*, merged into the main array once it outgrows a
fraction of it (amortized O(1) moves per insert).
Anything else that changes the window (the per-tuple path, a restore) marks it stale and
it is rebuilt from the basic windows on next use.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.windows import StreamWindow

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: the tail is merged into the main array once it holds this share of it (or 4096 rows)
TAIL_SHARE = 8


class _Sorted:
    """(value, ts, seq) rows sorted by value."""

    __slots__ = ("seq", "ts", "vals")

    def __init__(self, vals: F64, ts: I64, seq: I64) -> None:
        order = np.argsort(vals, kind="stable")
        self.vals, self.ts, self.seq = vals[order], ts[order], seq[order]

    def __len__(self) -> int:
        return int(self.vals.shape[0])


class ValueIndex:
    """The sorted (value, ts, seq) rows of one stream window (module docstring)."""

    __slots__ = ("main", "min_ts", "tail")

    def __init__(self, vals: F64, ts: I64, seq: I64) -> None:
        self.main = _Sorted(vals, ts, seq)
        self.tail = _Sorted(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.min_ts = int(ts.min()) if ts.shape[0] else np.iinfo(np.int64).max

    @classmethod
    def of(cls, window: StreamWindow) -> ValueIndex:
        """The index of every row the window holds now (first feature column)."""
        bws = [window.bws[bid] for bid in window.bids]
        if not bws:
            return cls(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        vals = np.concatenate([bw.feats.rows.view()[:, 0] for bw in bws])  # type: ignore[union-attr]
        ts = np.concatenate([bw.ts.view() for bw in bws])
        seq = np.concatenate([bw.seq.view() for bw in bws])
        return cls(vals, ts, seq)

    def __len__(self) -> int:
        return len(self.main) + len(self.tail)

    def add(self, vals: F64, ts: I64, seq: I64) -> None:
        """Index newly inserted rows."""
        if vals.shape[0] == 0:
            return
        self.min_ts = min(self.min_ts, int(ts.min()))
        t = self.tail
        self.tail = _Sorted(np.concatenate([t.vals, vals]), np.concatenate([t.ts, ts]),
                            np.concatenate([t.seq, seq]))
        if len(self.tail) > max(4096, len(self.main) // TAIL_SHARE):
            m, t = self.main, self.tail
            self.main = _Sorted(np.concatenate([m.vals, t.vals]), np.concatenate([m.ts, t.ts]),
                                np.concatenate([m.seq, t.seq]))
            self.tail = _Sorted(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def expire(self, lo: int) -> None:
        """Drop every row with ts < lo (the start of the window's oldest basic window)."""
        if self.min_ts >= lo:
            return
        for part in (self.main, self.tail):
            keep = part.ts >= lo
            if not keep.all():
                part.vals, part.ts, part.seq = part.vals[keep], part.ts[keep], part.seq[keep]
        self.min_ts = min((int(p.ts.min()) for p in (self.main, self.tail) if len(p)),
                          default=np.iinfo(np.int64).max)

    def candidates(self, lo: F64, hi: F64) -> tuple[I64, F64, I64, I64]:
        """Every (probe, row) with row value in [lo[p], hi[p]]: the probe index and the
        row's value, ts and seq (both parts, probe-major within each)."""
        probes: list[I64] = []
        vals: list[F64] = []
        tss: list[I64] = []
        seqs: list[I64] = []
        for part in (self.main, self.tail):
            if not len(part):
                continue
            a = part.vals.searchsorted(lo, "left")
            c = part.vals.searchsorted(hi, "right")
            cnt = c - a
            tot = int(cnt.sum())
            if not tot:
                continue
            rows = np.repeat(a - np.cumsum(cnt) + cnt, cnt) + np.arange(tot)
            probes.append(np.repeat(np.arange(lo.shape[0]), cnt))
            vals.append(part.vals[rows])
            tss.append(part.ts[rows])
            seqs.append(part.seq[rows])
        if not probes:
            none = np.zeros(0, np.int64)
            return none, np.zeros(0), none, none
        return (np.concatenate(probes), np.concatenate(vals), np.concatenate(tss),
                np.concatenate(seqs))
