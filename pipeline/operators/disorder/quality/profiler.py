"""Tuple-Productivity Profiler of Ji et al. (ICDE, §IV-B): the maps M^× and M^⋈.

The join reports, for every tuple it receives, the tuple's *raw* delay (annotated by its
K-slack), whether it arrived in order, and — for an in-order tuple — its cross-join
count n^×(e) = Π_{j≠i} |S_j[W_j]| and its actual number of results n^⋈(e).
An out-of-order tuple is not probed; its n^× and n^⋈ are estimated as the maximum
n^× and n^⋈ over the in-order tuples of the same adaptation interval (the paper's
conservative choice, ``late_estimate="max"``; ``"mean"`` uses their averages instead —
our option, see :class:`ProductivityProfiler`). When an interval has no in-order tuple
the previous interval's estimates are used. Both maps are keyed by the coarse-grained
delay (bin width g) and cover the last adaptation interval:

    M^×[d] = Σ_{delay(e)=d} n^×(e),     M^⋈[d] = Σ_{delay(e)=d} n^⋈(e).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.config import DEFAULT_LATE_ESTIMATE, LateEstimate
from pipeline.operators.disorder.quality.delay_stats import delay_bin

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ProductivityMaps:
    """M^× and M^⋈ of one adaptation interval, indexed by delay bin (same length).

    ``tuples``: how many tuples reached the join in the interval (0 = no evidence).
    """

    cross: FloatArray
    join: FloatArray
    tuples: int = 0

    @property
    def n_true(self) -> float:
        """N^⋈_true(L) estimate: Σ_{d=0}^{MaxD^M} M^⋈[d] (Ji et al. §IV-C)."""
        return float(self.join.sum())

    @classmethod
    def empty(cls) -> ProductivityMaps:
        """Maps of an interval in which nothing reached the join."""
        return cls(np.zeros(1, dtype=np.float64), np.zeros(1, dtype=np.float64))


def _add(acc: dict[int, float], key: int, value: float) -> None:
    acc[key] = acc.get(key, 0.0) + value


def _add_in_order(acc: dict[int, float], bins: npt.NDArray[np.int64],
                  values: FloatArray) -> None:
    """:func:`_add` of every (bin, value) in order: ``np.bincount`` sums its weights in
    input order, and each bin's running value goes first."""
    keys = np.unique(bins).tolist()
    start = np.array([acc.get(d, 0.0) for d in keys], dtype=np.float64)
    size = int(bins.max()) + 1
    sums = np.bincount(np.concatenate([np.asarray(keys, np.int64), bins]),
                       weights=np.concatenate([start, values]), minlength=size)
    for d in keys:
        acc[d] = float(sums[d])


class ProductivityProfiler:
    """Accumulates (delay, n^×, n^⋈) reports over one adaptation interval.

    ``late_estimate``: how an out-of-order tuple's productivity is estimated — "max"
    (Ji et al. §IV-B: the maximum over the interval's in-order tuples) or "mean" (their
    average). "mean" is the unbiased estimate when delay and productivity are
    independent; "max" makes every late tuple as productive as the best in-order one,
    which overestimates N_true (docs/NOTES.md). With "mean", Eq. 6 still sees DPcorr *among in-order
    tuples* (their raw delays go up to K + K^sync), only the late tuples' unobservable
    correlation is assumed away; the policy's conservative window model and margin on Γ'
    (:mod:`~pipeline.operators.disorder.quality.policy`) cover the recall guarantee instead.
    Standing alone the profiler is Ji et al.'s ("max"); the quality policy always passes
    the configured estimate (default :data:`~pipeline.operators.config.DEFAULT_LATE_ESTIMATE`).
    """

    def __init__(self, granularity_ms: int,
                 late_estimate: LateEstimate = DEFAULT_LATE_ESTIMATE) -> None:
        if late_estimate not in ("max", "mean"):
            raise ConfigError(
                f"disorder.late_estimate: expected 'max' or 'mean', got {late_estimate!r}"
            )
        self.granularity_ms = granularity_ms
        self.late_estimate = late_estimate
        self._cross: dict[int, float] = {}
        self._join: dict[int, float] = {}
        self._late: dict[int, int] = {}
        self._max_cross = 0.0
        self._max_join = 0.0
        self._sum_cross = 0.0
        self._sum_join = 0.0
        self._n_in_order = 0
        self._prev_est_cross = 0.0
        self._prev_est_join = 0.0
        self.last = ProductivityMaps.empty()

    def record(self, delay_ms: int, in_order: bool, n_cross: float, n_join: float) -> None:
        """One tuple reached the join (n_cross, n_join are ignored for late tuples)."""
        d = delay_bin(delay_ms, self.granularity_ms)
        if in_order:
            _add(self._cross, d, float(n_cross))
            _add(self._join, d, float(n_join))
            self._max_cross = max(self._max_cross, float(n_cross))
            self._max_join = max(self._max_join, float(n_join))
            self._sum_cross += float(n_cross)
            self._sum_join += float(n_join)
            self._n_in_order += 1
        else:
            self._late[d] = self._late.get(d, 0) + 1

    def record_many(self, delays: npt.NDArray[np.int64], in_order: npt.NDArray[np.bool_],
                    n_cross: npt.NDArray[np.int64], n_join: npt.NDArray[np.int64]) -> None:
        """:meth:`record` for each tuple of a run, in order (every sum is taken in the
        same order, so the maps are bit-for-bit the same)."""
        g = self.granularity_ms
        bins = np.where(delays > 0, -(-delays // g), 0)
        ins = np.flatnonzero(in_order)
        if ins.shape[0]:
            cross = n_cross[ins].astype(np.float64)
            join = n_join[ins].astype(np.float64)
            for acc, vals in ((self._cross, cross), (self._join, join)):
                _add_in_order(acc, bins[ins], vals)
            self._max_cross = max(self._max_cross, float(cross.max()))
            self._max_join = max(self._max_join, float(join.max()))
            self._sum_cross = float(np.cumsum(np.concatenate(([self._sum_cross], cross)))[-1])
            self._sum_join = float(np.cumsum(np.concatenate(([self._sum_join], join)))[-1])
            self._n_in_order += int(ins.shape[0])
        late = bins[~in_order]
        if late.shape[0]:
            counts = np.bincount(late)
            for d in np.flatnonzero(counts).tolist():
                self._late[d] = self._late.get(d, 0) + int(counts[d])

    def roll(self) -> ProductivityMaps:
        """Close the interval: fill in late tuples' estimates, publish and reset the maps."""
        n = self._n_in_order
        if n == 0:
            est_cross, est_join = self._prev_est_cross, self._prev_est_join
        elif self.late_estimate == "max":
            est_cross, est_join = self._max_cross, self._max_join
        else:
            est_cross, est_join = self._sum_cross / n, self._sum_join / n
        tuples = n + sum(self._late.values())
        for d, count in self._late.items():
            _add(self._cross, d, count * est_cross)
            _add(self._join, d, count * est_join)
        keys = set(self._cross) | set(self._join)
        size = max(keys) + 1 if keys else 1
        cross = np.zeros(size, dtype=np.float64)
        join = np.zeros(size, dtype=np.float64)
        for d, v in self._cross.items():
            cross[d] = v
        for d, v in self._join.items():
            join[d] = v
        self.last = ProductivityMaps(cross, join, tuples)
        self._prev_est_cross, self._prev_est_join = est_cross, est_join
        self._cross, self._join, self._late = {}, {}, {}
        self._max_cross = self._max_join = self._sum_cross = self._sum_join = 0.0
        self._n_in_order = 0
        return self.last

    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state."""
        return {
            "cross": dict(self._cross),
            "join": dict(self._join),
            "late": dict(self._late),
            "max": [self._max_cross, self._max_join],
            "sum": [self._sum_cross, self._sum_join],
            "n_in_order": self._n_in_order,
            "prev_est": [self._prev_est_cross, self._prev_est_join],
            "last": [self.last.cross.tolist(), self.last.join.tolist(), self.last.tuples],
        }

    @classmethod
    def from_snapshot(
        cls, granularity_ms: int, snap: dict[str, Any],
        late_estimate: LateEstimate = DEFAULT_LATE_ESTIMATE
    ) -> ProductivityProfiler:
        """Rebuild from :meth:`snapshot` output."""
        prof = cls(granularity_ms, late_estimate)
        try:
            prof._cross = {int(k): float(v) for k, v in snap["cross"].items()}
            prof._join = {int(k): float(v) for k, v in snap["join"].items()}
            prof._late = {int(k): int(v) for k, v in snap["late"].items()}
            prof._max_cross, prof._max_join = (float(x) for x in snap["max"])
            prof._sum_cross, prof._sum_join = (float(x) for x in snap["sum"])
            prof._n_in_order = int(snap["n_in_order"])
            prof._prev_est_cross, prof._prev_est_join = (float(x) for x in snap["prev_est"])
            cross, join, tuples = snap["last"]
            prof.last = ProductivityMaps(
                np.asarray(cross, dtype=np.float64),
                np.asarray(join, dtype=np.float64),
                int(tuples),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OperatorStateError(f"profiler snapshot: bad or missing field: {exc}") from exc
        return prof
