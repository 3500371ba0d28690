"""What a GrubJoin configuration costs when only a share of its tuples probe (ours; the
shedder is :class:`~pipeline.operators.shedding.grubjoin.shedder.GrubJoinShedder`).

When no configuration fits z·C(1) — one logical basic window per position is already
too much — the best direction scans one window per position on a random share of its
tuples (:func:`cheapest_productive`, :func:`probe_share`) instead of the input queue
dropping tuples. :func:`shared_cost` prices such a configuration under a cost model
(GrubJoin §IV-C), :func:`budget_share` gives the share of the budget it uses (the
throttle's anti-windup) and :func:`by_partner` re-keys its counts by partner stream so a
later model can re-price it.
"""

from __future__ import annotations

import numpy as np

from pipeline.operators.shedding.costmodel import HarvestModel

#: smallest probe share of the fallback configuration (:func:`probe_share`)
MIN_SHARE = 0.01


def cheapest_productive(model: HarvestModel) -> np.ndarray:
    """Ours: when no configuration fits z·C(1) (one logical basic window per position is
    already too much), scan one window per position in the direction with the best O/C
    — on a random share of that direction's tuples only (:func:`probe_share`), instead
    of producing nothing or letting the input queue drop tuples (which also empties the
    windows: the output loses a factor kept^m, not kept)."""
    arr = model.arrays()
    ones = np.ones(model.m - 1, dtype=np.int64)
    best, best_ratio = 0, -1.0
    for i in range(model.m):
        cost, out = arr.row_terms(i, ones)
        ratio = float(out) / float(cost) if cost > 0 else 0.0
        if ratio > best_ratio:
            best, best_ratio = i, ratio
    counts = np.zeros((model.m, model.m - 1), dtype=np.int64)
    counts[best] = 1
    return counts


def probe_share(model: HarvestModel, counts: np.ndarray, z: float) -> float:
    """Ours: the share q of the configured tuples that probe so that the expected cost
    fixed + q·(C(counts) − fixed) fits z·C(1) (1 when it fits already); the other
    tuples are only inserted into their window (probe sampling, not tuple dropping)."""
    fixed = model.fixed_cost()
    cost = float(model.evaluate(counts)[0]) - fixed
    budget = z * model.full_cost() - fixed
    if cost <= 0.0 or budget >= cost:
        return 1.0
    return float(max(MIN_SHARE, budget / cost))


def shared_cost(model: HarvestModel, counts: np.ndarray, share: float) -> float:
    """Ours: modelled cost of ``counts`` (by position) when only a ``share`` of the
    configured tuples probe: fixed + share·(C(counts) − fixed)."""
    fixed = model.fixed_cost()
    return fixed + share * (float(model.evaluate(counts)[0]) - fixed)


def budget_share(model: HarvestModel, counts: np.ndarray, share: float,
                 z_model: float) -> float:
    """Ours (anti-windup): the share of the budget z_model·C(1) that ``counts``
    (probing on a ``share`` of their tuples) is modelled to use, in [0, 1]."""
    budget = z_model * model.full_cost()
    if budget <= 0.0:
        return 1.0
    return float(min(1.0, max(0.0, shared_cost(model, counts, share) / budget)))


def by_partner(model: HarvestModel, counts: np.ndarray) -> np.ndarray:
    """Counts by (direction, position) → by (direction, partner stream)."""
    held = np.zeros((model.m, model.m), dtype=np.int64)
    held[np.arange(model.m)[:, None], np.asarray(model.orders)] = counts
    return held
