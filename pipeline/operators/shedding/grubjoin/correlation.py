"""Learning time correlations from window shredding (GrubJoin §V-B, Eqs. (1)–(4)).

Stream 0 (the paper's S_1) is the reference. ℒ_i is an equi-width histogram of the lag
A_{i,0} = T(t^{(i)}) − T(t^{(0)}) over [−w_i, w_0] with buckets of b ms, fed by the
per-logical-basic-window match counts of shredded probes (:class:`ProbeFeedback`):

* a probe of direction i whose order contains stream 0: a result with the stream-0
  member in logical basic window k has A_{i,0} ∈ [k·b, (k+1)·b)  → positive side of ℒ_i;
* a probe of direction 0: a result whose stream-l member is in window k has
  A_{l,0} ∈ (−(k+1)·b, −k·b]                                       → negative side of ℒ_l.

(Results whose newest member is a third stream add nothing to ℒ_l: the join reports
per-position marginals, not the joint lags. This under-counts, it does not shift peaks.)

Scores p^k_{i,j} (logical basic window k of W_l, l = r_{i,j}, lag A_{i,l} ∈ b·[k−1, k]):

* i = 0:        Eq. (2)  p^k = ℒ_l(b·[−k, −k+1])
* l = 0:        p^k = ℒ_i(b·[k−1, k])                     (A_{0,0} ≡ 0)
* otherwise:    Eq. (4)  p^k = Σ_v ℒ_l[v]·ℒ_i(b·[k−1, k] + mid_v)   (A_{i,0} ⊥ A_{l,0})

Aging (the paper gives none): every adaptation step multiplies all counts by ``decay``
(default 0.5, i.e. a half-life of one Δ), so a lag that changes mid-stream dominates the
histogram again within about two adaptation periods.

Shrinkage (ours, ``shrink``; the wall-clock job turns it on). The paper assumes the lags
are stable; where they are not (players of two teams meet at any lag, and where they meet
moves from one Δ to the next), a histogram learned over the last Δs is confident about
windows that the next Δ does not favour, and a harvest of "the best windows" finds less
than a uniform one would. Each ℒ_i is therefore used as

    ℒ̃_i = (1 − λ_i)·ℒ_i + λ_i·U_i          (U_i uniform over ℒ_i's buckets),

with λ_i chosen by how well the histogram predicted the Δ that followed it: with p the
normalized histogram the Δ's decisions used and q the normalized counts the Δ observed,
the λ minimizing ‖(1 − λ)·p + λ·U − q‖² is ⟨q − p, U − p⟩ / ‖U − p‖². Numerator and
denominator are summed over Δs (aged by :data:`SHRINK_DECAY`) and λ_i is their ratio,
clipped to [0, 1]. q's sampling noise has zero mean, so a stable histogram keeps λ near 0;
a histogram whose peaks move gets λ near 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback
from pipeline.operators.shedding.costmodel import FloatArray

#: aging per adaptation step of the shrinkage's sums (module docstring): slower than the
#: histograms', since one Δ's λ is noisy
SHRINK_DECAY = 0.8


@dataclass(frozen=True)
class CorrelationConfig:
    """Window sizes in basic windows (n_i = ⌈w_i/b⌉), b in ms, and the aging factor."""

    n_windows: tuple[int, ...]
    basic_window_ms: int
    decay: float = 0.5
    #: shrink each histogram toward uniform by its measured predictive power (ours)
    shrink: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.decay <= 1.0:
            raise ConfigError(f"decay: must be in (0, 1], got {self.decay}")
        if self.basic_window_ms <= 0 or any(n <= 0 for n in self.n_windows):
            raise ConfigError(
                f"basic_window_ms/n_windows: must be > 0, got "
                f"{self.basic_window_ms}/{self.n_windows}"
            )


def interval_mass(hist: FloatArray, edges: FloatArray, lo: FloatArray,
                  hi: FloatArray) -> FloatArray:
    """ℒ(I) for intervals [lo, hi]: the normalized mass in I, uniform within a bucket."""
    total = float(hist.sum())
    if total <= 0.0:
        return np.zeros(np.broadcast(lo, hi).shape)
    cdf = np.concatenate(([0.0], np.cumsum(hist) / total))
    return np.interp(hi, edges, cdf) - np.interp(lo, edges, cdf)


class LagHistograms:
    """The m reference histograms ℒ_i and the scores of Eqs. (1)–(4)."""

    def __init__(self, config: CorrelationConfig) -> None:
        self.config = config
        n = config.n_windows
        self.counts = [np.zeros(n[i] + n[0], dtype=np.float64) for i in range(len(n))]
        #: shrinkage: this Δ's counts, and per ℒ_i the aged sums ⟨q − p, U − p⟩, ‖U − p‖²
        self.fresh = [np.zeros_like(c) for c in self.counts]
        self.shrink_sums = np.zeros((len(n), 2), dtype=np.float64)
        #: bucket of logical basic window k: of W_l for a probe of direction 0 (ℒ_l's
        #: negative side, n_l − 1 − k), of W_0 for a probe of direction i (ℒ_i's positive
        #: side, n_i + k)
        self._negative = [n[l] - 1 - np.arange(n[l], dtype=np.int64) for l in range(len(n))]
        self._positive = [n[i] + np.arange(n[0], dtype=np.int64) for i in range(len(n))]

    def edges(self, i: int) -> FloatArray:
        """Bucket edges of ℒ_i in basic-window units: −n_i .. n_0."""
        n = self.config.n_windows
        return np.arange(-n[i], n[0] + 1, dtype=np.float64)

    def observe(self, fb: ProbeFeedback) -> None:
        """Add one shredded probe's per-basic-window match counts."""
        self.observe_many((fb,))

    def observe_many(self, feedbacks: Sequence[ProbeFeedback]) -> None:
        """Add the per-basic-window match counts of shredded probes, in order: a probe of
        direction 0 adds to ℒ_l's negative side (A_{l,0} ∈ (−(k+1)b, −kb]), one of
        direction i to ℒ_i's positive side through its stream-0 matches. The buckets are
        gathered per histogram and added unbuffered in that order (``np.add.at``), so the
        sums are those of one :meth:`observe` after another to the bit."""
        n = self.config.n_windows
        n0 = n[0]
        at: list[list[NDArray[np.int64]]] = [[] for _ in n]
        add: list[list[NDArray[Any]]] = [[] for _ in n]
        for fb in feedbacks:
            i = fb.direction
            for l, matches in zip(fb.order, fb.matches, strict=True):
                if i == 0:
                    k = min(len(matches), n[l])
                    at[l].append(self._negative[l][:k])
                    add[l].append(np.asarray(matches[:k]))
                elif l == 0:
                    k = min(len(matches), n0)
                    at[i].append(self._positive[i][:k])
                    add[i].append(np.asarray(matches[:k]))
        for h, parts in enumerate(at):
            if not parts:
                continue
            where = np.concatenate(parts)
            cnt = np.concatenate(add[h]).astype(np.float64)
            np.add.at(self.counts[h], where, cnt)
            np.add.at(self.fresh[h], where, cnt)

    def age(self) -> None:
        """Exponential forgetting, applied once per adaptation step (with ``shrink``,
        after scoring the Δ's histograms against what it observed)."""
        if self.config.shrink:
            self._score_prediction()
        for c, f in zip(self.counts, self.fresh, strict=True):
            c *= self.config.decay
            f[:] = 0.0

    def _score_prediction(self) -> None:
        """Add this Δ's ⟨q − p, U − p⟩ and ‖U − p‖² per ℒ_i (module docstring)."""
        self.shrink_sums *= SHRINK_DECAY
        for i, (c, f) in enumerate(zip(self.counts, self.fresh, strict=True)):
            prev = c - f
            n_prev, n_now = float(prev.sum()), float(f.sum())
            if n_prev <= 0.0 or n_now <= 0.0:
                continue
            p, q = prev / n_prev, f / n_now
            d = 1.0 / c.shape[0] - p
            self.shrink_sums[i] += (float(np.dot(q - p, d)), float(np.dot(d, d)))

    def shrinkage(self, i: int) -> float:
        """λ_i ∈ [0, 1] (0 without ``shrink`` or before any Δ was scored)."""
        num, den = (float(v) for v in self.shrink_sums[i])
        if not self.config.shrink or den <= 0.0:
            return 0.0
        return float(min(1.0, max(0.0, num / den)))

    def _dist(self, i: int) -> FloatArray:
        """ℒ̃_i: ℒ_i normalized and shrunk toward uniform by λ_i (zero if empty)."""
        c = self.counts[i]
        total = float(c.sum())
        if total <= 0.0:
            return c
        lam = self.shrinkage(i)
        return (1.0 - lam) * (c / total) + lam / c.shape[0]

    def learned(self, i: int) -> bool:
        return i == 0 or float(self.counts[i].sum()) > 0.0

    def scores(self, i: int, l: int) -> FloatArray:
        """p^k_{i,·} for the n_l logical basic windows of W_l probed by S_i tuples.

        Returns a flat vector when the histograms involved are still empty, and zeros
        when they are learned but put no mass in W_l's age range: S_i tuples then find
        no partner there (e.g. S_l lags S_i, so the partners arrive later).
        """
        n = self.config.n_windows
        k = np.arange(n[l], dtype=np.float64)
        flat = np.full(n[l], 1.0 / n[l])
        if i == 0:
            if not self.learned(l):
                return flat
            p = interval_mass(self._dist(l), self.edges(l), -(k + 1), -k)  # Eq. (2)
        elif l == 0:
            if not self.learned(i):
                return flat
            p = interval_mass(self._dist(i), self.edges(i), k, k + 1)
        else:
            if not (self.learned(i) and self.learned(l)):
                return flat
            weight = self._dist(l)
            el = self.edges(l)
            mids = (el[:-1] + el[1:]) / 2.0
            lo = k[:, None] + mids[None, :]
            p = interval_mass(self._dist(i), self.edges(i), lo, lo + 1.0) @ weight  # Eq. (4)
        return p

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = {"counts": [c.copy() for c in self.counts]}
        if self.config.shrink:
            snap["fresh"] = [f.copy() for f in self.fresh]
            snap["shrink_sums"] = self.shrink_sums.copy()
        return snap

    @classmethod
    def from_snapshot(cls, config: CorrelationConfig, snap: dict[str, Any]) -> LagHistograms:
        obj = cls(config)
        counts = snap.get("counts")
        if not isinstance(counts, list) or len(counts) != len(obj.counts):
            raise OperatorStateError(f"lag histograms: bad snapshot counts {counts!r}")
        for mine, theirs in zip(obj.counts, counts, strict=True):
            arr = np.asarray(theirs, dtype=np.float64)
            if arr.shape != mine.shape:
                raise OperatorStateError(
                    f"lag histograms: snapshot shape {arr.shape} != {mine.shape}"
                )
            mine[:] = arr
        if "fresh" in snap:
            for mine, theirs in zip(obj.fresh, snap["fresh"], strict=True):
                mine[:] = np.asarray(theirs, dtype=np.float64)
            obj.shrink_sums[:] = np.asarray(snap["shrink_sums"], dtype=np.float64)
        return obj
