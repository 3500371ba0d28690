"""Window harvesting plans and the online statistics they are built from (GrubJoin §IV).

* :class:`OnlineStats` measures λ_i (tuples pushed per second of stream time over the
  last Δ) and the per-comparison selectivity of every (direction, partner) pair from
  the probe feedback (matches found at a position / tuples compared there), aged by the
  same factor as the lag histograms. The paper does not say how selectivities are
  estimated [Not stated]; this is the direct estimator.
* :func:`build_model` turns them, with the window scores, into a :class:`HarvestModel`
  with low-selectivity-first join orders (MJoin; GrubJoin §V).
* :func:`harvest_plans` turns a configuration (counts k_{i,j}) and the window rankings
  s^v_{i,j} into one :class:`ProbePlan` per direction: position j scans the k_{i,j}
  best-ranked logical basic windows of W_{r_{i,j}}.
* :func:`shred_plan` is window shredding (§V-B): full join except that the first
  window of the order is scanned on ⌈z·n⌉ logical basic windows spread evenly over it
  (random offset), with per-basic-window feedback.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.errors import OperatorStateError
from pipeline.operators.costmodel import (
    FloatArray,
    HarvestModel,
    IntArray,
    join_orders,
    window_ranking,
)
from pipeline.operators.hooks import ProbeFeedback, ProbePlan

#: selectivity assumed for a pair never measured yet (only matters before feedback)
DEFAULT_SELECTIVITY = 1e-3
#: a direction's join order changes only for a first selectivity below this × the old one
ORDER_MARGIN = 0.7


class OnlineStats:
    """Per-Δ arrival counts and aged selectivity sums per (direction, partner)."""

    def __init__(self, m: int, decay: float = 0.5) -> None:
        self.m = m
        self.decay = decay
        self.arrivals = np.zeros(m, dtype=np.int64)
        self.matches = np.zeros((m, m), dtype=np.float64)
        self.compared = np.zeros((m, m), dtype=np.float64)

    def observe_arrival(self, stream: int) -> None:
        self.arrivals[stream] += 1

    def observe_probe(self, fb: ProbeFeedback) -> None:
        """σ_{i,l} sums: matches at position j = partials entering j+1 (or results)."""
        entering = list(fb.partials)
        for j, l in enumerate(fb.order):
            if j >= len(entering) or fb.scanned[j] <= 0:
                break
            found = entering[j + 1] if j + 1 < len(entering) else (
                fb.results if j == len(fb.order) - 1 else 0)
            self.matches[fb.direction, l] += found
            self.compared[fb.direction, l] += fb.scanned[j]

    def rates(self, interval_ms: int) -> FloatArray:
        """λ_i over the last interval, tuples per second; resets the counts."""
        lam = self.arrivals.astype(np.float64) * 1000.0 / interval_ms
        self.arrivals[:] = 0
        return lam

    def selectivity(self) -> FloatArray:
        """σ matrix; unmeasured pairs borrow the reverse direction or the default."""
        with np.errstate(invalid="ignore", divide="ignore"):
            own = np.where(self.compared > 0, self.matches / self.compared, np.nan)
        sel = np.where(np.isnan(own), own.T, own)
        sel = np.where(np.isnan(sel), DEFAULT_SELECTIVITY, sel)
        np.fill_diagonal(sel, 0.0)
        return sel

    def age(self) -> None:
        self.matches *= self.decay
        self.compared *= self.decay

    def snapshot(self) -> dict[str, Any]:
        return {"arrivals": self.arrivals.copy(), "matches": self.matches.copy(),
                "compared": self.compared.copy()}

    @classmethod
    def from_snapshot(cls, m: int, decay: float, snap: dict[str, Any]) -> OnlineStats:
        obj = cls(m, decay)
        try:
            obj.arrivals[:] = np.asarray(snap["arrivals"], dtype=np.int64)
            obj.matches[:] = np.asarray(snap["matches"], dtype=np.float64)
            obj.compared[:] = np.asarray(snap["compared"], dtype=np.float64)
        except (KeyError, ValueError) as exc:
            raise OperatorStateError(f"harvest stats: bad snapshot: {exc!r}") from exc
        return obj


def stable_orders(selectivity: FloatArray, previous: IntArray | None,
                  margin: float = ORDER_MARGIN) -> IntArray:
    """Low-selectivity-first orders (MJoin; GrubJoin §V) on the symmetrized σ, with
    hysteresis (ours): a direction keeps its previous order unless the new order's
    first selectivity is below ``margin`` × the previous first one, so estimation
    noise between near-equal selectivities does not flip plans every Δ."""
    sym = (selectivity + selectivity.T) / 2.0
    orders = join_orders(sym)
    if previous is None:
        return orders
    for i in range(orders.shape[0]):
        if sym[i, orders[i, 0]] >= margin * sym[i, previous[i, 0]]:
            orders[i] = previous[i]
    return orders


def build_model(
    rates: FloatArray,
    windows_ms: tuple[int, ...],
    selectivity: FloatArray,
    score_fn: Callable[[int, int], FloatArray],
    tuple_cost: float,
    previous_orders: IntArray | None = None,
) -> tuple[HarvestModel, list[list[FloatArray]]]:
    """The §IV-C model for this step and the raw scores p^k_{i,j} (for the rankings).

    S_l = λ_l·w_l; orders from :func:`stable_orders`; each direction then uses its own
    measured σ_{i,l}.
    """
    m = len(windows_ms)
    orders = stable_orders(selectivity, previous_orders)
    scores = [[score_fn(i, int(orders[i, j])) for j in range(m - 1)] for i in range(m)]
    seg = rates * np.asarray(windows_ms, dtype=np.float64) / 1000.0
    model = HarvestModel.build(rates, seg, selectivity, scores, orders, tuple_cost)
    return model, scores


def harvest_plans(model: HarvestModel, counts: IntArray,
                  scores: list[list[FloatArray]]) -> tuple[ProbePlan, ...]:
    """One ProbePlan per direction: the k_{i,j} top-ranked logical basic windows."""
    nmax = model.max_counts()
    plans = []
    for i in range(model.m):
        wins: list[tuple[int, ...] | None] = []
        for j in range(model.m - 1):
            k = int(counts[i, j])
            if k >= nmax[i, j]:
                wins.append(None)
            else:
                wins.append(tuple(int(v) for v in window_ranking(scores[i][j])[:k]))
        plans.append(ProbePlan(order=model.orders[i], windows=tuple(wins)))
    return tuple(plans)


def shred_plan(order: tuple[int, ...], n_first: int, z: float,
               rng: np.random.Generator) -> ProbePlan:
    """Window shredding (GrubJoin §V-B): ⌈z·n⌉ evenly spread windows first, rest full."""
    count = min(n_first, max(1, math.ceil(z * n_first)))
    offset = int(rng.integers(n_first))
    first = tuple(sorted({(offset + (v * n_first) // count) % n_first for v in range(count)}))
    windows: tuple[tuple[int, ...] | None, ...] = (
        (None if count == n_first else first),) + (None,) * (len(order) - 1)
    return ProbePlan(order=order, windows=windows, feedback=True)
