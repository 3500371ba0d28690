"""Exact solvers of the Optimal Window Harvesting Problem (GrubJoin §IV-C).

    argmax O({z_{i,j}})  s.t.  C({z_{i,j}}) ≤ z·C(1),  z_{i,j}·n_{r_{i,j}} ∈ {0..n}

``exhaustive`` enumerates every configuration (Π_i (n+1)^{m−1} of them; the paper's
brute force), vectorized in chunks. ``optimal`` returns the same optimum much faster:
C and O are sums over directions, so it enumerates each direction on its own, keeps the
Pareto front of (cost, output) per direction and merges the fronts pairwise — exact,
since a dominated per-direction setting can never be part of a unique optimum.
"""

from __future__ import annotations

import numpy as np

from pipeline.errors import ConfigError
from pipeline.operators.costmodel import FloatArray, HarvestModel, IntArray

#: relative slack of the feasibility test C ≤ z·C(1) (float rounding only)
_REL = 1e-9
_CHUNK = 200_000


def _direction_grid(nmax_row: IntArray) -> IntArray:
    """All count rows of one direction: (Π (n+1), m−1)."""
    axes = [np.arange(int(n) + 1) for n in nmax_row]
    return np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=-1)


def exhaustive(model: HarvestModel, z: float) -> tuple[IntArray, float]:
    """Full enumeration (the paper's brute force): (best counts, best O)."""
    _check(z)
    arr = model.arrays()
    m = model.m
    budget = z * model.full_cost() * (1.0 + _REL)
    grids = [_direction_grid(arr.nmax[i]) for i in range(m)]
    sizes = [g.shape[0] for g in grids]
    total = int(np.prod(sizes))
    best_o = -1.0
    best = np.zeros((m, m - 1), dtype=np.int64)
    for start in range(0, total, _CHUNK):
        flat = np.arange(start, min(total, start + _CHUNK))
        idx = np.unravel_index(flat, sizes)
        counts = np.stack([grids[i][idx[i]] for i in range(m)], axis=1)
        cost, out = arr.evaluate(counts)
        out = np.where(cost <= budget, out, -1.0)
        k = int(np.argmax(out))
        if out[k] > best_o:
            best_o = float(out[k])
            best = counts[k].copy()
    return best, best_o


def _pareto(cost: FloatArray, out: FloatArray) -> IntArray:
    """Indices of the (cost ↑, output strictly ↑) Pareto front."""
    order = np.lexsort((-out, cost))
    run_max = np.maximum.accumulate(out[order])
    prev = np.concatenate(([-np.inf], run_max[:-1]))
    return order[out[order] > prev + 1e-15]


def optimal(model: HarvestModel, z: float) -> tuple[IntArray, float]:
    """Exact optimum via per-direction Pareto fronts: (best counts, best O)."""
    _check(z)
    arr = model.arrays()
    m = model.m
    budget = z * model.full_cost() * (1.0 + _REL)
    fixed = float(arr.lam.sum()) * arr.tuple_cost
    # merged front: cost, output, and per-front-member the chosen row index per direction
    f_cost = np.array([fixed])
    f_out = np.array([0.0])
    f_pick = np.zeros((1, 0), dtype=np.int64)
    grids = []
    for i in range(m):
        grid = _direction_grid(arr.nmax[i])
        grids.append(grid)
        c, o = arr.row_terms(i, grid)
        keep = _pareto(c, o)
        c, o = c[keep], o[keep]
        tot_c = (f_cost[:, None] + c[None, :]).ravel()
        tot_o = (f_out[:, None] + o[None, :]).ravel()
        picks = np.concatenate(
            [np.repeat(f_pick, keep.shape[0], axis=0),
             np.tile(keep, f_cost.shape[0])[:, None]], axis=1)
        ok = tot_c <= budget
        tot_c, tot_o, picks = tot_c[ok], tot_o[ok], picks[ok]
        front = _pareto(tot_c, tot_o)
        f_cost, f_out, f_pick = tot_c[front], tot_o[front], picks[front]
    k = int(np.argmax(f_out))
    counts = np.stack([grids[i][f_pick[k, i]] for i in range(m)])
    return counts.astype(np.int64), float(f_out[k])


def _check(z: float) -> None:
    if not 0.0 < z <= 1.0:
        raise ConfigError(f"z: throttle fraction must be in (0, 1], got {z}")
