"""Buffer-Size Manager of Ji et al. (ICDE, §IV-C and Alg. 3): Γ' (Eq. 7) and the K search.

* :class:`ResultSizeMonitor` keeps, for the last (P − L)/L adaptation intervals, the
  number of results produced and the estimated number of true results
  N^⋈_true(L) = Σ_d M^⋈[d] of each interval, giving N^⋈_prod(P−L) and N^⋈_true(P−L).
* :func:`instant_recall_target` solves Eq. 7 for Γ' and clips it to [floor, cap];
  the defaults [0, 1] are the paper's (the paper prints max{Γ', 1}; min is meant).
  The quality policy passes a narrower band around Γ (see
  :mod:`~pipeline.operators.disorder.quality.policy`, deviation 1).
* :func:`linear_search` is Alg. 3: test K = 0, g, 2g, … until K > MaxD^H or
  γ(L, K) ≥ Γ'.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError, OperatorInputError, OperatorStateError

FloatArray = npt.NDArray[np.float64]


def instant_recall_target(
    recall: float,
    n_prod_past: float,
    n_true_past: float,
    n_true_next: float,
    floor: float = 0.0,
    cap: float = 1.0,
) -> float:
    """Γ' from Eq. 7: (N_prod(P−L) + N_true(L)·Γ') / (N_true(P−L) + N_true(L)) ≥ Γ.

    Γ' = [Γ·(N_true(P−L) + N_true(L)) − N_prod(P−L)] / N_true(L), clipped to
    [floor, cap] (default [0, 1], the paper's). With no expected results in the next
    interval (N_true(L) = 0) nothing can be compensated and Γ' = Γ (clipped likewise).
    """
    if not 0.0 <= floor <= cap <= 1.0:
        raise ConfigError(f"instant recall target: need 0 <= floor <= cap <= 1, got {floor}, {cap}")
    if not 0.0 < recall <= 1.0:
        raise ConfigError(f"disorder.recall: must be in (0, 1], got {recall}")
    if n_true_next <= 0.0:
        return float(min(max(recall, floor), cap))
    target = (recall * (n_true_past + n_true_next) - n_prod_past) / n_true_next
    return float(min(max(target, floor), cap))


def linear_search(gamma: FloatArray, max_delay_ms: int, granularity_ms: int, target: float) -> int:
    """Alg. 3: smallest K in steps of g with γ(L,K) ≥ Γ', or the first K > MaxD^H.

    ``gamma[k]`` is γ(L, k·g) and must cover k = 0..⌊MaxD^H / g⌋.
    """
    need = max_delay_ms // granularity_ms + 1
    if gamma.shape[0] < need:
        raise OperatorInputError(
            f"linear_search: gamma covers {gamma.shape[0]} candidates K = k·g, but "
            f"MaxD^H = {max_delay_ms} ms at g = {granularity_ms} ms needs {need}"
        )
    # the loop "k ← k + g while k ≤ MaxD^H and γ(L,k) < Γ'", vectorized
    meets = np.flatnonzero(gamma[:need] >= target)
    return int(meets[0]) * granularity_ms if meets.size else need * granularity_ms


class ResultSizeMonitor:
    """Per-interval (produced, estimated true) result counts over the last P − L."""

    def __init__(self, period_ms: int, interval_ms: int) -> None:
        if interval_ms <= 0 or period_ms < interval_ms:
            raise ConfigError(
                f"disorder.interval_ms: need 0 < L <= P, got L={interval_ms} P={period_ms}"
            )
        self.history = (period_ms - interval_ms) // interval_ms
        self._rows: deque[tuple[float, float]] = deque(maxlen=max(self.history, 1))
        self.produced = 0  # results produced in the current interval

    def add_results(self, count: int) -> None:
        """Count results produced by the join in the current interval."""
        self.produced += int(count)

    def roll(self, n_true_interval: float, active: bool = True) -> tuple[float, float]:
        """Close an interval; return (N_prod(P−L), N_true(P−L)) including it.

        The last P − L of stream time are the (P − L)/L most recent intervals, the
        just-closed one among them; the interval about to start makes up the rest of P.

        ``active=False`` (no tuple reached the join, e.g. while the K-slack buffers fill
        after K grew) leaves the history untouched: the join's time ⋈T did not advance,
        so no result timestamps left or entered the period (deviation from a purely
        wall-interval window, which would age the evidence out while the join is idle).
        """
        if self.history > 0 and active:
            self._rows.append((float(self.produced), float(n_true_interval)))
        self.produced = 0
        return self.totals()

    def totals(self) -> tuple[float, float]:
        """(N_prod(P−L), N_true(P−L)) over the stored intervals."""
        if self.history == 0:
            return (0.0, 0.0)
        return (sum(r[0] for r in self._rows), sum(r[1] for r in self._rows))

    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state."""
        return {"rows": [list(r) for r in self._rows], "produced": self.produced}

    @classmethod
    def from_snapshot(
        cls, period_ms: int, interval_ms: int, snap: dict[str, Any]
    ) -> ResultSizeMonitor:
        """Rebuild from :meth:`snapshot` output."""
        mon = cls(period_ms, interval_ms)
        try:
            for prod, true in snap["rows"]:
                mon._rows.append((float(prod), float(true)))
            mon.produced = int(snap["produced"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"result-size monitor snapshot: bad field: {exc}") from exc
        return mon
