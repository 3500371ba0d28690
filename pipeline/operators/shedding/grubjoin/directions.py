"""Continuous per-direction fractions r_1, r_2: selective processing's rate adaptation
and join direction adaptation as the paper states them (Gedik, Wu, Yu, Liu, CIKM §2.1
Alg. 1, §2.3 Alg. 4; ``[shedding] partial_window = true``, two-way joins).

The paper keeps one fraction parameter r (rate adaptation) and compares each new tuple
of S_ī with r_i·|W_i| tuples of W_i: the basic windows of highest o_{i,j} in full, then
"an appropriate fraction" of the next one (Alg. 3). Without join direction adaptation
r_1 = r_2 = r. With it (Alg. 4) the window whose o_i — the expected output of comparing
a new tuple with one of its tuples — is higher gets the budget first,

    r_hi = min(1, r·(w_1 + w_2)/w_hi),   r_lo from  Σ_i r_i·λ_ī·|W_i| = r·Σ_i λ_ī·|W_i|,

so r_lo = 0 until r_hi = 1.

Here direction i scans x_i = r_i·n_i basic windows of its partner: the ⌊x_i⌋ best-ranked
in full and, on a random share x_i − ⌊x_i⌋ of its tuples, the next-ranked one too (ours:
the join scans whole basic windows, so the "appropriate fraction" of a basic window is
scanned in expectation). Costs and outputs are the GrubJoin model's (Eqs. (1)–(4); for
m = 2 the directions are independent), and with the random extra window a direction's
expected cost and output are linear between whole windows, C_i(x) and O_i(x). The
paper's constraint on comparisons is then Σ_i C_i(x_i) ≤ B − Σ_i λ_i·c_t (B the budget),
and o_i = O_i(n_i)/C_i(n_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, IntArray

__all__ = ["Fractions", "expected_terms", "paper_fractions", "rate_fraction"]

#: bisection steps for r (2^-40 of the window: far below one comparison)
_STEPS = 40


@dataclass(frozen=True)
class Fractions:
    """Direction i scans ``counts[i, 0]`` best-ranked windows, plus the next one on a
    share ``extra[i]`` of its tuples; ``r`` is rate adaptation's common fraction, and
    ``cost``/``output`` the model's expected C and O of the choice."""

    counts: IntArray
    extra: FloatArray
    r: float
    cost: float
    output: float


def _tables(model: HarvestModel) -> tuple[list[FloatArray], list[FloatArray]]:
    """Per direction, (λ_i·C_i(k), λ_i·O_i(k)) for k = 0..n whole windows."""
    arr = model.arrays()
    nmax = model.max_counts()
    costs, outs = [], []
    for i in range(model.m):
        rows = np.arange(int(nmax[i, 0]) + 1, dtype=np.int64)[:, None]
        c, o = arr.row_terms(i, rows)
        costs.append(np.asarray(c, dtype=np.float64))
        outs.append(np.asarray(o, dtype=np.float64))
    return costs, outs


def expected_terms(model: HarvestModel, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per direction, the expected (cost, output) of scanning x_i windows: whole
    windows ⌊x_i⌋ and the next one with probability x_i − ⌊x_i⌋ (linear interpolation).

    >>> m = HarvestModel.build(np.ones(2), np.full(2, 4.0), np.full((2, 2), 0.5),
    ...                        [[np.array([4.0, 2.0, 1.0, 1.0])], [np.full(4, 1.0)]])
    >>> c, o = expected_terms(m, np.array([1.5, 4.0]))
    >>> c.round(3).tolist(), o.round(3).tolist()   # 4 tuples, 1 per window; σ·S = 2
    ([1.5, 4.0], [1.25, 2.0])
    """
    costs, outs = _tables(model)
    c = np.array([np.interp(x[i], np.arange(costs[i].shape[0]), costs[i])
                  for i in range(model.m)])
    o = np.array([np.interp(x[i], np.arange(outs[i].shape[0]), outs[i])
                  for i in range(model.m)])
    return c, o


def rate_fraction(model: HarvestModel, budget: float) -> float:
    """Rate adaptation's r (Alg. 1, in the model's units): the largest r ∈ [0, 1] with
    Σ_i λ_i·c_t + Σ_i C_i(r·n_i) ≤ ``budget`` (bisection; C_i is non-decreasing)."""
    n = model.max_counts()[:, 0].astype(np.float64)
    spare = budget - model.fixed_cost()

    def cost(r: float) -> float:
        return float(expected_terms(model, r * n)[0].sum())

    if cost(1.0) <= spare:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cost(mid) <= spare else (lo, mid)
    return lo


def _fill(costs: FloatArray, spend: float) -> float:
    """The largest x ∈ [0, n] whose interpolated cost is at most ``spend``."""
    if spend >= costs[-1]:
        return float(costs.shape[0] - 1)
    k = int(np.searchsorted(costs, spend, side="right")) - 1  # costs[k] <= spend
    k = max(0, min(k, costs.shape[0] - 2))
    step = costs[k + 1] - costs[k]
    part = (spend - costs[k]) / step if step > 0 else 1.0
    return float(k + min(1.0, max(0.0, part)))


def paper_fractions(model: HarvestModel, budget: float, join_direction: bool,
                    min_windows: float = 0.0) -> Fractions:
    """The windows each direction scans under ``budget`` (module docstring): r·n_i for
    both directions, or with ``join_direction`` Alg. 4 — all of the comparisons of r to
    the direction of higher o_i first, the rest to the other. ``min_windows``: the
    smallest x_i of a direction that probes at all (its share of one window)."""
    if model.m != 2:
        raise ConfigError(f"shedding.partial_window: the paper's fractions are for two-way "
                          f"joins, got m = {model.m}")
    n = model.max_counts()[:, 0].astype(np.float64)
    r = rate_fraction(model, budget)
    x = r * n
    if join_direction:
        costs, outs = _tables(model)
        value = [outs[i][-1] / costs[i][-1] if costs[i][-1] > 0 else 0.0 for i in range(2)]
        hi = 0 if value[0] >= value[1] else 1
        spend = float(expected_terms(model, x)[0].sum())
        x = np.zeros(2)
        x[hi] = _fill(costs[hi], spend)
        x[1 - hi] = _fill(costs[1 - hi], spend - float(np.interp(
            x[hi], np.arange(costs[hi].shape[0]), costs[hi])))
    x = np.where((x > 0) & (x < min_windows), min_windows, x)
    whole = np.floor(x + 1e-9)
    counts = whole.astype(np.int64)[:, None]
    extra = np.where(whole < n, x - whole, 0.0).clip(0.0, 1.0)
    c, o = expected_terms(model, x)
    return Fractions(counts, extra, r, float(c.sum()) + model.fixed_cost(), float(o.sum()))
