"""The shedders' online statistics (GrubJoin §IV-C inputs): λ_i and the selectivities.

:class:`OnlineStats` measures λ_i (tuples pushed per second of stream time over the
last Δ) and the per-comparison selectivity of every (direction, partner) pair from the
probe feedback (matches found at a position / tuples compared there), aged by the same
factor as the lag histograms. The paper does not say how selectivities are estimated
[Not stated]; this is the direct estimator. GrubJoin and the random-drop baselines build
their cost model on it (:func:`~pipeline.operators.shedding.costmodel.build_model`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback
from pipeline.operators.shedding.costmodel import FloatArray

#: selectivity assumed for a pair never measured yet (only matters before feedback)
DEFAULT_SELECTIVITY = 1e-3

__all__ = ["DEFAULT_SELECTIVITY", "OnlineStats"]


class OnlineStats:
    """Per-Δ arrival counts and aged selectivity sums per (direction, partner).

    ``first`` sums come from the first position of a probe's order (σ of the pair),
    ``deep`` sums from later positions (the share of partial results a window extends,
    which depends on the time correlations of all members so far).

    ``per_window`` (ours, for indexed joins): ``fb.scanned`` then counts index cost
    units, not tuple comparisons, so the denominator is instead the partial results
    entering a position times the fraction of its window scanned (given by the caller,
    :meth:`observe_probe`); the estimate is σ·S_l, matches per partial per full window,
    and :meth:`selectivity` divides it by the caller's S_l.
    """

    def __init__(self, m: int, decay: float = 0.5, per_window: bool = False) -> None:
        self.m = m
        self.decay = decay
        self.per_window = per_window
        self.arrivals = np.zeros(m, dtype=np.int64)
        self.sums = np.zeros((4, m, m), dtype=np.float64)  # first/deep × matches/compared

    def observe_arrival(self, stream: int) -> None:
        self.arrivals[stream] += 1

    def observe_probe(self, fb: ProbeFeedback,
                      fractions: tuple[float, ...] | None = None) -> None:
        """Matches at position j = partials entering j+1 (or the results at the end).

        ``fractions``: share of each position's window the probe scanned (per-window
        mode only; default: all full)."""
        entering = list(fb.partials)
        for j, l in enumerate(fb.order):
            if j >= len(entering) or fb.scanned[j] <= 0:
                break
            found = entering[j + 1] if j + 1 < len(entering) else (
                fb.results if j == len(fb.order) - 1 else 0)
            base = 0 if j == 0 else 2
            self.sums[base, fb.direction, l] += found
            if self.per_window:
                frac = 1.0 if fractions is None else fractions[j]
                self.sums[base + 1, fb.direction, l] += entering[j] * frac
            else:
                self.sums[base + 1, fb.direction, l] += fb.scanned[j]

    def rates(self, interval_ms: int) -> FloatArray:
        """λ_i over the last interval, tuples per second; resets the counts."""
        lam = self.arrivals.astype(np.float64) * 1000.0 / interval_ms
        self.arrivals[:] = 0
        return lam

    def _estimate(self, base: int) -> FloatArray:
        compared = self.sums[base + 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(compared > 0, self.sums[base] / compared, np.nan)

    def selectivity(self, window_tuples: FloatArray | None = None
                    ) -> tuple[FloatArray, FloatArray]:
        """(first-position σ, later-position σ); gaps filled from the reverse direction,
        then from the other kind, then :data:`DEFAULT_SELECTIVITY`. In per-window mode
        the estimates are divided by ``window_tuples`` (S_l, per partner column)."""
        first, deep = self._estimate(0), self._estimate(2)
        if self.per_window:
            if window_tuples is None:
                raise OperatorStateError("per-window selectivity needs the window sizes")
            size = np.maximum(np.asarray(window_tuples, dtype=np.float64), 1.0)[None, :]
            first, deep = first / size, deep / size
        first = np.where(np.isnan(first), first.T, first)
        deep = np.where(np.isnan(deep), deep.T, deep)
        first, deep = np.where(np.isnan(first), deep, first), np.where(np.isnan(deep), first, deep)
        out = []
        for sel in (first, deep):
            sel = np.where(np.isnan(sel), DEFAULT_SELECTIVITY, sel)
            np.fill_diagonal(sel, 0.0)
            out.append(sel)
        return out[0], out[1]

    def age(self) -> None:
        self.sums *= self.decay

    def snapshot(self) -> dict[str, Any]:
        return {"arrivals": self.arrivals.copy(), "sums": self.sums.copy()}

    @classmethod
    def from_snapshot(cls, m: int, decay: float, snap: dict[str, Any],
                      per_window: bool = False) -> OnlineStats:
        obj = cls(m, decay, per_window)
        try:
            obj.arrivals[:] = np.asarray(snap["arrivals"], dtype=np.int64)
            obj.sums[:] = np.asarray(snap["sums"], dtype=np.float64)
        except (KeyError, ValueError) as exc:
            raise OperatorStateError(f"harvest stats: bad snapshot: {exc!r}") from exc
        return obj
