"""One harvest fraction for every direction: selective processing without join direction
adaptation (Gedik, Wu, Yu, Liu, CIKM §2.1–2.2; ``[shedding] join_direction = false``).

The paper's rate adaptation (its Alg. 1) keeps one fraction parameter r and every new
tuple is compared with r·|W| tuples of the opposite window — the newest part of it, or
(with time-correlation adaptation, its Alg. 3) the basic windows of highest o_{i,j}
first. Join direction adaptation (its Alg. 4) is what lets the fractions r_1, r_2 of
the two directions differ; GrubJoin's optimal harvest (§IV-C) generalizes it, so the
GrubJoin shedder with this solver in place of :func:`~pipeline.operators.shedding.
grubjoin.admission.choose` is the paper's "rate" (``learn = false``) and "rate + time"
(``learn = true``) configuration.

:func:`same_fraction` is the largest r whose configuration, k_{i,j} = ⌈r·n_{r_{i,j}}⌉
logical basic windows at every position of every direction (at least one), fits the
budget in the cost model (GrubJoin Eqs. (1)–(4)); when even one window per position
does not fit, every tuple probes one window with the probability q that fits (the
paper's "appropriate fraction" of a basic window, as a probe share).
"""

from __future__ import annotations

import numpy as np

from pipeline.operators.shedding.costmodel import HarvestModel, IntArray
from pipeline.operators.shedding.grubjoin.share import MIN_SHARE

__all__ = ["counts_at", "same_fraction"]


def counts_at(model: HarvestModel, r: float) -> IntArray:
    """k_{i,j} = ⌈r·n_{r_{i,j}}⌉ clipped to [1, n]: the windows the fraction r scans.

    >>> m = HarvestModel.build(np.ones(2), np.full(2, 8.0), np.full((2, 2), 0.1),
    ...                        [[np.full(8, 1 / 8)], [np.full(4, 1 / 4)]])
    >>> counts_at(m, 0.5).tolist()   # W_2 has 8 basic windows, W_1 has 4
    [[4], [2]]
    """
    nmax = model.max_counts()
    k = np.ceil(r * nmax - 1e-9).astype(np.int64)
    return np.clip(k, 1, nmax)


def same_fraction(model: HarvestModel, budget: float) -> tuple[IntArray, float]:
    """(counts, probe share) of the largest common fraction r that fits ``budget`` (the
    model's cost units per second); r ranges over every k/n of the windows' sizes."""
    nmax = model.max_counts()
    grid = sorted({k / int(n) for n in np.unique(nmax) for k in range(1, int(n) + 1)})
    cands = np.stack([counts_at(model, r) for r in grid])
    cost, _ = model.evaluate(cands)
    fits = np.flatnonzero(cost <= budget)
    if fits.size:
        return cands[int(fits[-1])], 1.0
    fixed = model.fixed_cost()
    var = float(cost[0]) - fixed
    share = (budget - fixed) / var if var > 0 else 1.0
    return cands[0], float(min(1.0, max(MIN_SHARE, share)))
