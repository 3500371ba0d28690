"""Exact solvers of the Optimal Window Harvesting Problem (GrubJoin §IV-C).

    argmax O({z_{i,j}})  s.t.  C({z_{i,j}}) ≤ z·C(1),  z_{i,j}·n_{r_{i,j}} ∈ {0..n}

``exhaustive`` enumerates every configuration (Π_i (n+1)^{m−1} of them; the paper's
brute force), vectorized in chunks. ``optimal`` returns the same optimum much faster:
C and O are sums over directions, so it enumerates each direction on its own, keeps the
Pareto front of (cost, output) per direction and merges the fronts pairwise — exact,
since a dominated per-direction setting can never be part of a unique optimum.
``pareto_dp`` (ours; used online by :func:`pipeline.operators.shedding.grubjoin.greedy.configure`)
gets
each direction's front by a DP over its positions instead of enumerating its grid and
matches the last direction by binary search — sub-millisecond at m = 3, n = 10.
"""

from __future__ import annotations

import numpy as np

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, IntArray, ModelArrays

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
    fixed = arr.fixed_cost()
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
    if f_out.shape[0] == 0:  # even scanning nothing exceeds z·C(1): nothing is feasible
        return np.zeros((m, m - 1), dtype=np.int64), 0.0
    k = int(np.argmax(f_out))
    counts = np.stack([grids[i][f_pick[k, i]] for i in range(m)])
    return counts.astype(np.int64), float(f_out[k])


def _check(z: float) -> None:
    if not 0.0 < z <= 1.0:
        raise ConfigError(f"z: throttle fraction must be in (0, 1], got {z}")


# --------------------------------------------------------------------- Pareto DP
#: front size above which a merged front is thinned to a (1 + ε) output grid
_THIN_ABOVE = 2048
#: ε of the thinning: O(result) ≥ O(optimum) / (1 + ε)^(m − 2)
_THIN_EPS = 1e-4


def _front_sorted(cost: FloatArray, out: FloatArray) -> IntArray:
    """Pareto front (cost ↑, output strictly ↑), returned in ascending cost order."""
    order = np.lexsort((-out, cost))
    if order.shape[0] == 0:
        return order
    o = out[order]
    run_max = np.maximum.accumulate(o)
    keep = np.empty(o.shape[0], dtype=bool)
    keep[0] = True
    keep[1:] = o[1:] > run_max[:-1] * (1.0 + 1e-12) + 1e-300
    return order[keep]


def direction_front(arr: ModelArrays, i: int, thin_eps: float = 0.0,
                    thin_above: int = _THIN_ABOVE) -> tuple[FloatArray, FloatArray, IntArray]:
    """Exact (λ_i C_i, λ_i N_{i,m}) Pareto front of direction i and its count rows.

    Ours (not in the paper): C_i and N_{i,m} nest from the last position backwards,
    ``c_j = z_j S_j + P_j a_j c_{j+1}``, ``o_j = P_j a_j o_{j+1}`` (a_j = σ_j S_j), and
    for a fixed k_j this map is increasing in (c_{j+1}, o_{j+1}); so the front of the
    suffix j.. is the front of {k_j} × front(j+1..) — a dynamic programme over the
    m − 1 positions, instead of enumerating Π (n + 1) rows. Positions scan ≥ 1 window;
    the all-zero row (direction off, cost 0, output 0) is prepended.

    The suffix DP needs the cost to scale with the partial results; the indexed model's
    per-window term does not (costmodel docstring), so for ``arr.indexed`` the front is
    taken over the enumerated grid (:func:`_grid_front`; exact, each row is one point).
    """
    if arr.indexed:
        return _grid_front(arr, i)
    mm = arr.nmax.shape[1]
    c = np.zeros(1)
    o = np.ones(1)
    rows = np.zeros((1, 0), dtype=np.int64)
    for j in range(mm - 1, -1, -1):
        n = int(arr.nmax[i, j])
        k = np.arange(1, n + 1)
        s = float(arr.seg[i, j])
        pa = arr.ytab[i, j, 1 : n + 1] * (arr.sel[i, j] * s)
        zc = k * (s / n)
        nc = (zc[:, None] + pa[:, None] * c[None, :]).ravel()
        no = (pa[:, None] * o[None, :]).ravel()
        keep = _front_sorted(nc, no)
        if thin_eps > 0 and keep.shape[0] > thin_above:
            keep = keep[_thin(nc[keep], no[keep], thin_eps)]
        ki, si = np.divmod(keep, c.shape[0])
        rows = np.concatenate([k[ki][:, None], rows[si]], axis=1)
        c, o = nc[keep], no[keep]
    lam = float(arr.lam[i])
    c = np.concatenate(([0.0], lam * (c + arr.probe_cost)))  # every DP row probes
    o = np.concatenate(([0.0], lam * o))
    rows = np.concatenate([np.zeros((1, mm), dtype=np.int64), rows], axis=0)
    keep = _front_sorted(c, o)
    return c[keep], o[keep], rows[keep]


#: largest direction grid :func:`_grid_front` enumerates (configure stays far below it)
GRID_MAX_ROWS = 1_000_000


def _grid_front(arr: ModelArrays, i: int) -> tuple[FloatArray, FloatArray, IntArray]:
    """Pareto front of direction i over its whole count grid (rows that scan ≥ 1 window
    at every position, plus the all-zero row), ascending cost."""
    size = int(np.prod(arr.nmax[i] + 1))
    if size > GRID_MAX_ROWS:
        raise ConfigError(f"direction grid of {size} rows is too large to enumerate "
                          f"(max {GRID_MAX_ROWS}); use the greedy")
    grid = _direction_grid(arr.nmax[i])
    grid = grid[(grid > 0).all(axis=1) | (grid == 0).all(axis=1)]
    c, o = arr.row_terms(i, grid)
    keep = _front_sorted(c, o)
    return c[keep], o[keep], grid[keep]


def _thin(cost: FloatArray, out: FloatArray, eps: float) -> IntArray:
    """Keep, per output band [(1+ε)^b, (1+ε)^{b+1}), the cheapest point (fronts only)."""
    pos = out > 0
    band = np.full(out.shape[0], -1, dtype=np.int64)
    band[pos] = np.floor(np.log(out[pos]) / np.log1p(eps)).astype(np.int64)
    # front is sorted by cost with output increasing: the first of each band is cheapest
    first = np.concatenate(([True], band[1:] != band[:-1]))
    return np.flatnonzero(first)


def pareto_dp(model: HarvestModel, z: float, thin_eps: float = _THIN_EPS,
              thin_above: int = _THIN_ABOVE) -> tuple[IntArray, float]:
    """Optimal harvest fractions via per-direction Pareto DPs and a knapsack merge.

    Ours (the paper uses the GREEDYPICK heuristic because its brute force is
    O(n^{m²})): C and O are sums over directions, so the optimum picks one point of
    each direction's (cost, output) Pareto front (:func:`direction_front`) with the
    summed cost within z·C(1). Fronts are merged pairwise (sums, budget filter, Pareto
    prune); the last direction is matched by binary search (its front is sorted by
    cost with increasing output). Exact unless a merged front exceeds
    ``_THIN_ABOVE`` points — then it is thinned to one point per (1 + ε) output band,
    which costs at most a factor (1 + ε) of output per merge (and never feasibility).
    Returns (counts, O).
    """
    _check(z)
    arr = model.arrays()
    m = model.m
    fixed = arr.fixed_cost()
    fronts = [direction_front(arr, i, thin_eps, thin_above) for i in range(m)]
    full = float(arr.evaluate(arr.nmax)[0])  # C(1), fixed per-tuple cost included
    budget = z * full * (1.0 + _REL) - fixed
    if budget < 0.0:  # even scanning nothing exceeds z·C(1): nothing is feasible
        return np.zeros((m, m - 1), dtype=np.int64), 0.0
    f_cost = np.zeros(1)
    f_out = np.zeros(1)
    f_pick = np.zeros((1, 0), dtype=np.int64)
    for i in range(m - 1):
        c, o, _ = fronts[i]
        nb = int(np.searchsorted(c, budget, side="right"))
        c, o = c[:nb], o[:nb]
        tot_c = (f_cost[:, None] + c[None, :]).ravel()
        tot_o = (f_out[:, None] + o[None, :]).ravel()
        ok = np.flatnonzero(tot_c <= budget)
        front = ok[_front_sorted(tot_c[ok], tot_o[ok])]
        a, b = np.divmod(front, c.shape[0])
        f_cost, f_out = tot_c[front], tot_o[front]
        f_pick = np.concatenate([f_pick[a], b[:, None]], axis=1)
        if f_cost.shape[0] > thin_above and thin_eps > 0:
            t = _thin(f_cost, f_out, thin_eps)
            f_cost, f_out, f_pick = f_cost[t], f_out[t], f_pick[t]
    c, o, _ = fronts[m - 1]
    last = np.searchsorted(c, budget - f_cost, side="right") - 1
    valid = last >= 0
    tot = np.where(valid, f_out + o[np.maximum(last, 0)], -1.0)
    k = int(np.argmax(tot))
    picks = [*f_pick[k].tolist(), int(last[k])]
    counts = np.stack([fronts[i][2][picks[i]] for i in range(m)])
    return counts.astype(np.int64), float(tot[k])
