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

from pipeline.core.errors import OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.shedding.costmodel import (
    FloatArray,
    HarvestModel,
    IntArray,
    join_orders,
    window_ranking,
)

#: selectivity assumed for a pair never measured yet (only matters before feedback)
DEFAULT_SELECTIVITY = 1e-3
#: a direction's join order changes only for a first selectivity below this × the old one
ORDER_MARGIN = 0.7


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


def stable_orders(selectivity: FloatArray, previous: IntArray | None,
                  margin: float = ORDER_MARGIN) -> IntArray:
    """Low-selectivity-first orders (MJoin; GrubJoin §V) on each direction's own σ_{i,l},
    with hysteresis (ours): a direction keeps its previous order unless the new order's
    first selectivity is below ``margin`` × the previous first one, so estimation
    noise between near-equal selectivities does not flip plans every Δ."""
    orders = join_orders(selectivity)
    if previous is None:
        return orders
    for i in range(orders.shape[0]):
        if selectivity[i, orders[i, 0]] >= margin * selectivity[i, previous[i, 0]]:
            orders[i] = previous[i]
    return orders


def build_model(
    rates: FloatArray,
    windows_ms: tuple[int, ...],
    selectivity: tuple[FloatArray, FloatArray],
    score_fn: Callable[[int, int], FloatArray],
    tuple_cost: float,
    previous_orders: IntArray | None = None,
    indexed: bool = False,
    window_cost: float = 1.0,
    probe_cost: float = 0.0,
) -> tuple[HarvestModel, list[list[FloatArray]]]:
    """The §IV-C model for this step and the raw scores p^k_{i,j} (for the rankings).

    S_l = λ_l·w_l; ``selectivity`` = (first-position σ, later-position σ) from
    :meth:`OnlineStats.selectivity`; orders from :func:`stable_orders` on the first;
    ``indexed``/``window_cost``: the indexed cost model; ``probe_cost``: c_p per probing
    tuple (both ours, see costmodel).
    """
    m = len(windows_ms)
    first, deep = selectivity
    raw = {(i, l): score_fn(i, l) for i in range(m) for l in range(m) if l != i}
    dead = [pair for pair, p in raw.items() if not float(np.sum(p)) > 0.0]
    if dead:
        # learned lags with no mass in W_l's age range: no partners for S_i there, so
        # σ_{i,l} = 0 (not the reverse direction's estimate that fills an unmeasured pair)
        first, deep = np.array(first, dtype=np.float64), np.array(deep, dtype=np.float64)
        for i, l in dead:
            first[i, l] = deep[i, l] = 0.0
    orders = stable_orders(first, previous_orders)
    scores = [[raw[(i, int(orders[i, j]))] for j in range(m - 1)] for i in range(m)]
    seg = rates * np.asarray(windows_ms, dtype=np.float64) / 1000.0
    model = HarvestModel.build(rates, seg, first, scores, orders, tuple_cost, deep,
                               indexed=indexed, window_cost=window_cost,
                               probe_cost=probe_cost)
    return model, scores


def yield_order(model: HarvestModel, counts: IntArray) -> IntArray:
    """Ours: per direction, the positions sorted by the matches their *harvested* windows
    are expected to add, a_j = P_{i,j}(k_{i,j})·σ_{i,r_{i,j}}·S_{i,j} (pair σ, ascending;
    stable). Low-selectivity-first on whole windows (MJoin) ignores that a position
    scanning few, well-ranked windows may find many more (or fewer) partners than
    another; with the windows fixed, O does not depend on the order and C is smallest
    when the partial results grow as late as possible. Returns a permutation of
    positions per direction (m × (m−1))."""
    arr = model.arrays()
    sel = np.asarray(model.selectivity, dtype=np.float64)
    orders = np.asarray(model.orders, dtype=np.int64)
    m = model.m
    perm = np.empty((m, m - 1), dtype=np.int64)
    for i in range(m):
        k = np.asarray(counts[i], dtype=np.int64)
        a = arr.ytab[i, np.arange(m - 1), k] * sel[i, orders[i]] * arr.seg[i]
        perm[i] = np.argsort(a, kind="stable")
    return perm


def harvest_plans(model: HarvestModel, counts: IntArray,
                  scores: list[list[FloatArray]],
                  perm: IntArray | None = None) -> tuple[ProbePlan, ...]:
    """One ProbePlan per direction: the k_{i,j} top-ranked logical basic windows, the
    positions executed in the order ``perm`` (default: the model's order)."""
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
        pos = range(model.m - 1) if perm is None else [int(v) for v in perm[i]]
        plans.append(ProbePlan(order=tuple(model.orders[i][j] for j in pos),
                               windows=tuple(wins[j] for j in pos)))
    return tuple(plans)


def shred_plan(direction: int, n_windows: tuple[int, ...], z: float,
               rng: np.random.Generator) -> ProbePlan:
    """Window shredding (GrubJoin §V-B): ⌈z·n⌉ evenly spread windows first, rest full.

    The order is a random permutation of the other streams (ours), so every pair is
    seen at the first position and its selectivity is measured without conditioning.
    """
    others = [j for j in range(len(n_windows)) if j != direction]
    order = tuple(int(v) for v in rng.permutation(others))
    n_first = n_windows[order[0]]
    count = min(n_first, max(1, math.ceil(z * n_first)))
    offset = int(rng.integers(n_first))
    first = tuple(sorted({(offset + (v * n_first) // count) % n_first for v in range(count)}))
    windows: tuple[tuple[int, ...] | None, ...] = (
        (None if count == n_first else first),) + (None,) * (len(order) - 1)
    return ProbePlan(order=order, windows=windows, feedback=True)


def scanned_fractions(plan: ProbePlan, n_windows: tuple[int, ...]) -> tuple[float, ...]:
    """Share of each position's window a plan scans (None = all of it); for the
    per-window selectivity estimator of :class:`OnlineStats` (ours)."""
    order = plan.order or ()
    wins = plan.windows or (None,) * len(order)
    return tuple(1.0 if w is None else len(w) / n_windows[l]
                 for l, w in zip(order, wins, strict=True))
