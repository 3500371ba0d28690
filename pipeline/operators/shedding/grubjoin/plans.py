"""Window harvesting plans (GrubJoin §IV-D, §V): what each direction scans, built from
the step's :class:`~pipeline.operators.shedding.costmodel.HarvestModel`
(:func:`~pipeline.operators.shedding.costmodel.build_model`, on the
:mod:`~pipeline.operators.shedding.online_stats`).

* :func:`yield_order` (ours) orders each direction's positions by the matches their
  harvested windows are expected to add.
* :func:`harvest_plans` turns a configuration (counts k_{i,j}) and the window rankings
  s^v_{i,j} into one :class:`ProbePlan` per direction: position j scans the k_{i,j}
  best-ranked logical basic windows of W_{r_{i,j}}.
* :func:`shred_plan` is window shredding (§V-B): full join except that the first
  window of the order is scanned on ⌈z·n⌉ logical basic windows spread evenly over it
  (random offset), with per-basic-window feedback.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.shedding.costmodel import (
    FloatArray,
    HarvestModel,
    IntArray,
    window_ranking,
)


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
    per-window selectivity estimator of
    :class:`~pipeline.operators.shedding.online_stats.OnlineStats` (ours)."""
    order = plan.order or ()
    wins = plan.windows or (None,) * len(order)
    return tuple(1.0 if w is None else len(w) / n_windows[l]
                 for l, w in zip(order, wins, strict=True))
