"""The statistics unit of the memory-bounded join (Das et al. §2.3, Fig. 1; PROB §4.2.1).

Per stream, how much recent input lies *near* a join key: ``mass(l, keys)`` = C_l(v),
the number of stream-l tuples of the last ``stats_window_ms`` of event time (0 = all input
so far) that would join a tuple with key v. The policies only need the *relative* order of
these numbers (Das et al. §4.2.1), so they are kept as plain counts in one sorted key
table per stream (``np.searchsorted`` lookups, vectorized over all residents at once):

* ``equi``: the exact count of value v (the paper's p_S(v), up to the stream's total);
* ``band`` (|a − v| ≤ ε): an equi-width histogram with buckets of ε, uniform within a
  bucket; v's interval [v − ε, v + ε] covers (1 − f) of bucket k − 1, bucket k and f of
  bucket k + 1 (v/ε = k + f), so C(v) = (1 − f)·c[k−1] + c[k] + f·c[k+1];
* ``distance`` (Euclidean ≤ ε on (x, y)): a grid of ε×ε cells; the disk of radius ε
  around v is integrated with a fixed 19-point rule (density c/ε² at each point), so
  C(v) = (π/19)·Σ_j c[cell(v + ε·o_j)];
* ``cosine`` (keyword vectors, cos ≥ ε): per keyword the summed unit-normalized weight
  W(k) of recent tuples; C(x) = Σ_k x_k·W(k) = Σ_y x·y, the summed similarity of x with
  the recent tuples. The probability that a partner crosses ε would need the joint
  distribution of partner vectors; the expected similarity is linear, costs one keyword
  table, and ranks a tuple whose heavy keywords are frequent on the other stream first;
* ``custom``: no value model — every key gets the stream's total (PROB then degenerates
  to its tie-break: first to expire, then oldest).

No wall clock: the horizon moves with the largest ts observed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import OperatorStateError
from pipeline.operators.join.predicates import Predicate, SparsePredicate
from pipeline.operators.join.sparse import SparseRow

F64 = NDArray[np.float64]
#: quadrature points in the unit disk (centre, 6 at r = 0.45, 12 at r = 0.85): equal weights
_DISK = np.concatenate([
    np.zeros((1, 2)),
    0.45 * np.stack([np.cos(np.arange(6) * np.pi / 3), np.sin(np.arange(6) * np.pi / 3)], 1),
    0.85 * np.stack([np.cos((np.arange(12) + 0.5) * np.pi / 6),
                     np.sin((np.arange(12) + 0.5) * np.pi / 6)], 1),
])
_CELL_SHIFT = np.int64(1 << 32)
_CELL_BIAS = np.int64(1 << 31)


class KeyTable:
    """Sorted keys with a weight each (counts); lookups are vectorized."""

    __slots__ = ("cnt", "keys")

    def __init__(self, dtype: Any) -> None:
        self.keys: NDArray[Any] = np.zeros(0, dtype=dtype)
        self.cnt: F64 = np.zeros(0)

    def add(self, keys: NDArray[Any], weights: F64) -> None:
        """cnt[key] += weight for distinct ``keys`` (new keys are inserted in order)."""
        n = self.keys.shape[0]
        if keys.shape[0] == 1:  # one tuple's key: a binary search, no array temporaries
            key = keys[0]
            i = int(self.keys.searchsorted(key))
            if i < n and self.keys[i] == key:
                self.cnt[i] += weights[0]
                return
        pos = np.searchsorted(self.keys, keys)
        found = pos < n
        found[found] = self.keys[pos[found]] == keys[found]
        if not found.all():
            old_keys, old_cnt = self.keys, self.cnt
            self.keys = np.union1d(old_keys, keys[~found]).astype(old_keys.dtype)
            self.cnt = np.zeros(self.keys.shape[0])
            self.cnt[np.searchsorted(self.keys, old_keys)] = old_cnt
            pos = np.searchsorted(self.keys, keys)
        self.cnt[pos] += weights

    def lookup(self, keys: NDArray[Any]) -> F64:
        """cnt of each key (0 for an unknown one)."""
        n = self.keys.shape[0]
        if n == 0:
            return np.zeros(keys.shape)
        pos = np.minimum(np.searchsorted(self.keys, keys), n - 1)
        return np.where(self.keys[pos] == keys, self.cnt[pos], 0.0)

    def compact(self) -> None:
        """Forget keys whose count fell to 0 (windowed statistics)."""
        live = self.cnt > 1e-9
        if not live.all():
            self.keys = self.keys[live]
            self.cnt = self.cnt[live]


class ValueStats:
    """Per-stream key tables over the recent input (``window_ms``; 0 = everything)."""

    def __init__(self, predicate: Predicate, m: int, window_ms: int = 0) -> None:
        self.kind = str(getattr(predicate, "kind", "custom"))
        self.epsilon = float(getattr(predicate, "epsilon", 0.0))
        if self.kind == "band" and self.epsilon <= 0.0:
            self.kind = "equi"  # |a − v| ≤ 0 is an equi-join
        self.m = m
        self.window_ms = window_ms
        dtype = np.float64 if self.kind == "equi" else np.int64
        self.tables = [KeyTable(dtype) for _ in range(m)]
        self.totals = np.zeros(m)
        self.now: int | None = None
        #: (ts, stream, keys, weights) of the input still inside the horizon
        self.log: deque[tuple[int, int, NDArray[Any], F64]] = deque()
        self._dropped = 0
        #: set-valued predicates (cosine, overlap): one table entry per key of the vector
        self.sparse = isinstance(predicate, SparsePredicate)

    # ------------------------------------------------------------------ input
    def keys_of(self, enc: Any) -> tuple[NDArray[Any], F64]:
        """The table keys (and weights) one tuple adds."""
        if self.sparse:
            row: SparseRow = enc
            return row.keys, row.weights
        v = np.asarray(enc, dtype=np.float64).reshape(-1)
        if self.kind == "equi":
            return v[:1].copy(), np.ones(1)
        if self.kind == "band":
            return np.floor(v[:1] / self.epsilon).astype(np.int64), np.ones(1)
        if self.kind == "distance":
            return self._cells(v.reshape(1, 2)), np.ones(1)
        return np.zeros(1, np.int64), np.ones(1)  # custom: one shared key

    def observe(self, stream: int, ts: int, enc: Any) -> None:
        """One input tuple of ``stream`` (every tuple reaching the join)."""
        keys, weights = self.keys_of(enc)
        self.tables[stream].add(keys, weights)
        self.totals[stream] += 1.0
        if self.window_ms <= 0:
            return
        self.log.append((ts, stream, keys, weights))
        self.now = ts if self.now is None else max(self.now, ts)
        horizon = self.now - self.window_ms
        while self.log and self.log[0][0] <= horizon:
            _, s, k, w = self.log.popleft()
            self.tables[s].add(k, -w)
            self.totals[s] -= 1.0
            self._dropped += 1
        if self._dropped > 1024:
            for t in self.tables:
                t.compact()
            self._dropped = 0

    # ------------------------------------------------------------------ queries
    def mass(self, stream: int, keys: Any) -> F64:
        """C_stream(v) for each resident key (dense: n×d rows; cosine, overlap: list of
        rows)."""
        table = self.tables[stream]
        if self.sparse:
            rows: list[SparseRow] = keys
            if not rows:
                return np.zeros(0)
            lengths = np.array([r.keys.shape[0] for r in rows])
            flat = np.concatenate([r.keys for r in rows])
            w = np.concatenate([r.weights for r in rows]) * table.lookup(flat)
            return np.add.reduceat(w, np.cumsum(lengths) - lengths)
        arr = np.asarray(keys, dtype=np.float64)
        if arr.shape[0] == 0:
            return np.zeros(0)
        if self.kind == "equi":
            return table.lookup(arr[:, 0])
        if self.kind == "band":
            u = arr[:, 0] / self.epsilon
            k = np.floor(u)
            f = u - k
            k = k.astype(np.int64)
            return (1.0 - f) * table.lookup(k - 1) + table.lookup(k) + f * table.lookup(k + 1)
        if self.kind == "distance":
            pts = arr[:, None, :2] + self.epsilon * _DISK[None, :, :]
            cells = self._cells(pts.reshape(-1, 2)).reshape(arr.shape[0], _DISK.shape[0])
            return table.lookup(cells).sum(axis=1) * (np.pi / _DISK.shape[0])
        return np.full(arr.shape[0], self.totals[stream])

    def _cells(self, xy: F64) -> NDArray[np.int64]:
        k = np.floor(xy / self.epsilon).astype(np.int64)
        return k[:, 0] * _CELL_SHIFT + (k[:, 1] + _CELL_BIAS)

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict[str, Any]:
        return {
            "keys": [t.keys.copy() for t in self.tables],
            "cnt": [t.cnt.copy() for t in self.tables],
            "totals": self.totals.copy(),
            "now": self.now,
            "log": [(ts, s, k.copy(), w.copy()) for ts, s, k, w in self.log],
            "dropped": self._dropped,
        }

    def restore(self, snap: dict[str, Any]) -> None:
        try:
            if len(snap["keys"]) != self.m:
                raise OperatorStateError(
                    f"memory stats: snapshot has {len(snap['keys'])} streams, not {self.m}")
            for t, k, c in zip(self.tables, snap["keys"], snap["cnt"], strict=True):
                t.keys = np.asarray(k, dtype=t.keys.dtype)
                t.cnt = np.asarray(c, dtype=np.float64)
            self.totals = np.asarray(snap["totals"], dtype=np.float64)
            self.now = None if snap["now"] is None else int(snap["now"])
            self.log = deque((int(ts), int(s), np.asarray(k), np.asarray(w, np.float64))
                             for ts, s, k, w in snap["log"])
            self._dropped = int(snap["dropped"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"memory stats: bad snapshot: {exc!r}") from exc
