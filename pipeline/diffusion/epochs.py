"""The routing epoch log of adaptive ATR (Gu et al., "Adaptive Load Diffusion for Multiway
Windowed Stream Joins", §2.2–2.6; ARCHITECTURE §6).

An *epoch* is a master stream M and a list of master segments [b_j, b_{j+1}) with a route
key each; segments may differ in length (the T hill climb, §2.6) and each key is chosen
when its segment is placed (least loaded, Eq. 1). A master switch (§2.5) starts a new
epoch at a segment boundary. Epoch e owns the results whose *largest* member timestamp
t_max lies in [start_e, start_{e+1}); among those, the segment holding the result's M_e
member decides the key. Every member of such a result lies in [t_max − W_i, t_max]
(the window condition, ARCHITECTURE §4), so epoch e's segments cover
[start_e − W_M, end_e): one extra *lead-in* segment before ``start_e``.

Routing under the log: a tuple of stream i at τ goes, for every epoch e with
start_e − W_i ≤ τ < end_e, to the key of its own segment if i = M_e, else to the keys
of the segments [a, b) of e that meet [τ − W_M, τ + W_i] (a slave joins masters
m with m − W_i ≤ τ ≤ m + W_M, the paper's S_i[t − W_i, t + T + W_M]).
:meth:`EpochLog.owner` is a function of the result, so each result is emitted by one
instance only (it owns it) and reaches it (every member was routed there).

This replaces the paper's marked copies (s\\*, s#, transition windows [t_s, t_s + W_N])
by the t_max rule: the instances that join a result they do not own (only in the
W_max after a switch) drop it by :meth:`EpochLog.owner`, the same guard static ATR has.

>>> log = EpochLog(windows=(10, 10))
>>> log.open_epoch(start=0, master=0, lead_in_key=0)
>>> log.append(end=100, key=1)
>>> log.append(end=200, key=0)
>>> log.keys_of(0, 50), log.keys_of(1, 95), log.keys_of(1, 50)
([1], [0, 1], [1])
>>> log.owner((120, 115))
0
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError

IntArray = npt.NDArray[np.int64]
#: open end of the last epoch
OPEN = 1 << 62


@dataclass
class Epoch:
    """One master stream's run of segments: ``bounds[j] .. bounds[j + 1]`` on ``keys[j]``
    (``bounds[0] = start − W_M``, the lead-in segment)."""

    start: int
    master: int
    bounds: list[int] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    end: int = OPEN


class EpochLog:
    """The epochs, oldest first; :meth:`keys_of` routes and :meth:`owner` owns."""

    def __init__(self, windows: Sequence[int]) -> None:
        if len(windows) < 2 or any(int(w) <= 0 for w in windows):
            raise ConfigError(f"join.windows_ms: need >= 2 windows > 0, got {list(windows)}")
        self.windows = tuple(int(w) for w in windows)
        self.epochs: list[Epoch] = []

    # -- building -----------------------------------------------------------------------
    @property
    def horizon(self) -> int | None:
        """The end of the last placed segment (None before the first epoch)."""
        return self.epochs[-1].bounds[-1] if self.epochs else None

    def open_epoch(self, start: int, master: int, lead_in_key: int) -> None:
        """Start an epoch at ``start`` (the current horizon, if any) with master
        ``master``; its lead-in segment [start − W_M, start) goes to ``lead_in_key``."""
        if not 0 <= master < len(self.windows):
            raise ConfigError(f"job.master_stream: index {master} out of range")
        if self.epochs:
            last = self.epochs[-1]
            if start != last.bounds[-1]:
                raise ConfigError(f"epoch start {start} is not the horizon {last.bounds[-1]}")
            last.end = start
        self.epochs.append(Epoch(start, master, [start - self.windows[master], start],
                                 [lead_in_key]))

    def append(self, end: int, key: int) -> None:
        """Place the next segment of the current epoch, [horizon, end), on ``key``."""
        ep = self.epochs[-1]
        if end <= ep.bounds[-1]:
            raise ConfigError(f"job.segment_ms: segment end {end} <= start {ep.bounds[-1]}")
        ep.bounds.append(end)
        ep.keys.append(key)

    # -- routing ------------------------------------------------------------------------
    def _covering(self, stream: int, ts: int) -> list[Epoch]:
        w = self.windows[stream]
        out = []
        for ep in reversed(self.epochs):
            if ep.end <= ts:
                break
            if ep.start - w <= ts:
                out.append(ep)
        return out

    def keys_of(self, stream: int, ts: int) -> list[int]:
        """The route keys (sorted, distinct) a tuple of ``stream`` at ``ts`` goes to."""
        keys: set[int] = set()
        for ep in self._covering(stream, ts):
            b = ep.bounds
            if ts + self.windows[stream] >= b[-1] and ep.end > b[-1]:
                raise ConfigError(f"routing: stream time {ts} is beyond the placed "
                                  f"segments (horizon {b[-1]})")
            if stream == ep.master:
                lo = hi = bisect.bisect_right(b, ts) - 1
            else:
                lo = max(bisect.bisect_right(b, ts - self.windows[ep.master]) - 1, 0)
                hi = min(bisect.bisect_right(b, ts + self.windows[stream]) - 1, len(ep.keys) - 1)
            keys.update(ep.keys[lo:hi + 1])
        return sorted(keys)

    def route_batch(self, streams: IntArray, ts: IntArray) -> tuple[IntArray, IntArray]:
        """``(row, key)`` pairs of a batch, rows ascending and each row's keys distinct and
        ascending: :meth:`keys_of` row by row."""
        rows: list[int] = []
        keys: list[int] = []
        for r, (s, t) in enumerate(zip(streams.tolist(), ts.tolist(), strict=True)):
            for k in self.keys_of(s, t):
                rows.append(r)
                keys.append(k)
        return np.asarray(rows, dtype=np.int64), np.asarray(keys, dtype=np.int64)

    def owner(self, member_ts: Sequence[int]) -> int:
        """The route key that emits a result with these member timestamps (stream order):
        the epoch of the largest, the segment of that epoch's master member."""
        t_max = max(int(t) for t in member_ts)
        starts = [ep.start for ep in self.epochs]
        e = bisect.bisect_right(starts, t_max) - 1
        if e < 0:
            raise ConfigError(f"routing: result at {t_max} precedes the first epoch")
        ep = self.epochs[e]
        j = bisect.bisect_right(ep.bounds, int(member_ts[ep.master])) - 1
        return ep.keys[min(max(j, 0), len(ep.keys) - 1)]

    def owners(self, member_ts: npt.ArrayLike) -> IntArray:
        """:meth:`owner` of each row of an (n, m) array of member timestamps."""
        arr = np.asarray(member_ts, dtype=np.int64)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        t_max = arr.max(axis=1)
        starts = np.asarray([ep.start for ep in self.epochs], dtype=np.int64)
        e_idx = np.searchsorted(starts, t_max, side="right") - 1
        out = np.empty(len(arr), dtype=np.int64)
        for e in np.unique(e_idx).tolist():
            ep = self.epochs[max(e, 0)]
            sel = e_idx == e
            j = np.searchsorted(np.asarray(ep.bounds), arr[sel, ep.master], side="right") - 1
            out[sel] = np.asarray(ep.keys)[np.clip(j, 0, len(ep.keys) - 1)]
        return out

    # -- checkpoint -----------------------------------------------------------------------
    def prune(self, before: int) -> None:
        """Forget what no tuple at or after stream time ``before`` can be routed by (or a
        result of such a tuple owned by): epochs ending more than W_max before it, and
        the segments of the others ending that far before it."""
        limit = before - 2 * max(self.windows)
        self.epochs = [ep for ep in self.epochs if ep.end > limit]
        for ep in self.epochs:
            cut = max(bisect.bisect_right(ep.bounds, limit) - 1, 0)
            del ep.bounds[:cut], ep.keys[:cut]

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (``harvest-route-epochs.json`` beside the route keys)."""
        return {"windows": list(self.windows), "epochs": [
            {"start": ep.start, "master": ep.master, "bounds": list(ep.bounds),
             "keys": list(ep.keys), "end": ep.end} for ep in self.epochs]}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> EpochLog:
        """Inverse of :meth:`snapshot`."""
        log = cls(snap["windows"])
        log.epochs = [Epoch(int(e["start"]), int(e["master"]), [int(b) for b in e["bounds"]],
                            [int(k) for k in e["keys"]], int(e["end"]))
                      for e in snap["epochs"]]
        return log
