"""Greedy harvest-fraction configuration (GrubJoin §IV-D, Fig. 6 GREEDYPICK).

Forward greedy starts from all z_{i,j} = 0 and repeatedly takes the feasible one-window
increment with the best metric — BO (O), BOpC (O/C) or BDOpDC (ΔO/ΔC, the recommended
one) — freezing increments that became infeasible. An uninitialized direction gets a
single candidate that sets every z_{i,j} = 1/n. Greedy reverse starts from all ones and
removes the least valuable window until C({z}) ≤ z·C(1); greedy double-sided uses the
forward form when z ≤ 0.5^{(m−1)/2} and the reverse form otherwise (§VI-A, Fig. 10).

Because C and O are sums over directions, a candidate's ΔC and ΔO depend only on its own
direction; they are cached and only the direction changed by the last step is
re-evaluated (one vectorized NumPy call over its m−1 candidates).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from pipeline.errors import ConfigError
from pipeline.operators.costmodel import FloatArray, HarvestModel, IntArray

Heuristic = Literal["bdopdc", "bo", "bopc"]
_EPS = 1e-9
#: relative slack of the feasibility test C ≤ z·C(1) (float rounding only)
_REL = 1e-9


def _metric(heuristic: Heuristic, c_new: FloatArray, o_new: FloatArray,
            d_c: FloatArray, d_o: FloatArray) -> FloatArray:
    """EVAL of Fig. 6 for feasible candidates (the caller masks infeasible ones)."""
    if heuristic == "bo":
        return o_new
    if heuristic == "bopc":
        return np.where(c_new > _EPS, o_new / np.maximum(c_new, _EPS), 0.0)
    ratio = d_o / np.maximum(d_c, _EPS)
    return np.where(d_c > _EPS, ratio, np.where(d_o > _EPS, np.inf, 0.0))


def greedy_forward(model: HarvestModel, z: float, heuristic: Heuristic = "bdopdc") -> IntArray:
    """GREEDYPICK (GrubJoin Fig. 6): counts k_{i,j} maximizing O s.t. C ≤ z·C(1)."""
    _check(z, heuristic)
    arr = model.arrays()
    m = model.m
    nmax = arr.nmax
    budget = z * model.full_cost() * (1.0 + _REL)
    counts = np.zeros((m, m - 1), dtype=np.int64)
    frozen = np.zeros((m, m - 1), dtype=bool)
    init = np.zeros(m, dtype=bool)
    fixed = float(arr.lam.sum()) * arr.tuple_cost
    dir_c = np.zeros(m)
    dir_o = np.zeros(m)
    # cached candidate deltas: per (i, j) for initialized directions, per i otherwise
    d_c = np.zeros((m, m - 1))
    d_o = np.zeros((m, m - 1))
    i_c = np.zeros(m)
    i_o = np.zeros(m)
    for i in range(m):
        i_c[i], i_o[i] = arr.row_terms(i, np.ones(m - 1, dtype=np.int64))
    eye = np.eye(m - 1, dtype=np.int64)
    while True:
        c_tot = fixed + dir_c.sum()
        o_tot = dir_o.sum()
        open_ = init[:, None] & ~frozen & (counts < nmax)
        feas = c_tot + d_c <= budget
        frozen |= open_ & ~feas
        ok = open_ & feas
        score = np.where(ok, _metric(heuristic, c_tot + d_c, o_tot + d_o, d_c, d_o), -1.0)
        u_ok = ~init & (c_tot + i_c <= budget)
        u_score = np.where(u_ok, _metric(heuristic, c_tot + i_c, o_tot + i_o, i_c, i_o), -1.0)
        best = int(np.argmax(score))
        bi, bj = divmod(best, m - 1)
        ub = int(np.argmax(u_score))
        if score[bi, bj] <= 0.0 and u_score[ub] <= 0.0:
            break
        if u_score[ub] > score[bi, bj]:
            bi = ub
            init[bi] = True
            counts[bi] = 1
            dir_c[bi], dir_o[bi] = i_c[bi], i_o[bi]
        else:
            counts[bi, bj] += 1
            dir_c[bi] += d_c[bi, bj]
            dir_o[bi] += d_o[bi, bj]
        cand = np.minimum(counts[bi] + eye, nmax[bi])
        cc, co = arr.row_terms(bi, cand)
        d_c[bi] = cc - dir_c[bi]
        d_o[bi] = co - dir_o[bi]
    return counts


def greedy_reverse(model: HarvestModel, z: float, heuristic: Heuristic = "bdopdc") -> IntArray:
    """Greedy reverse (GrubJoin §VI-A): from all z_{i,j} = 1, drop one window at a time.

    The removed window is the one losing the least output per unit of cost saved
    (BDOpDC), or leaving the largest O (BO) or O/C (BOpC). A direction whose fraction
    reaches 0 produces nothing, so all of its fractions are zeroed together.
    """
    _check(z, heuristic)
    arr = model.arrays()
    m = model.m
    nmax = arr.nmax
    budget = z * model.full_cost() * (1.0 + _REL)
    fixed = float(arr.lam.sum()) * arr.tuple_cost
    counts = nmax.copy()
    dir_c = np.zeros(m)
    dir_o = np.zeros(m)
    d_c = np.zeros((m, m - 1))
    d_o = np.zeros((m, m - 1))
    eye = np.eye(m - 1, dtype=np.int64)

    def refresh(i: int) -> None:
        dir_c[i], dir_o[i] = arr.row_terms(i, counts[i])
        cand = counts[i] - eye
        cand[(cand <= 0).any(axis=1)] = 0
        cand = np.maximum(cand, 0)
        cc, co = arr.row_terms(i, cand)
        d_c[i] = dir_c[i] - cc  # cost saved
        d_o[i] = dir_o[i] - co  # output lost

    for i in range(m):
        refresh(i)
    while fixed + dir_c.sum() > budget:
        live = counts > 0
        if not live.any():
            break
        c_new = fixed + dir_c.sum() - d_c
        o_new = dir_o.sum() - d_o
        if heuristic == "bo":
            score = o_new
        elif heuristic == "bopc":
            score = o_new / np.maximum(c_new, _EPS)
        else:
            score = -d_o / np.maximum(d_c, _EPS)
        score = np.where(live & (d_c > _EPS), score, -np.inf)
        best = int(np.argmax(score))
        bi, bj = divmod(best, m - 1)
        if not np.isfinite(score[bi, bj]):
            break
        counts[bi, bj] -= 1
        if counts[bi, bj] == 0:
            counts[bi] = 0
        refresh(bi)
    return counts


def greedy_double_sided(model: HarvestModel, z: float,
                        heuristic: Heuristic = "bdopdc") -> IntArray:
    """Greedy double-sided (GrubJoin §VI-A): forward iff z ≤ 0.5^{(m−1)/2}, else reverse."""
    if z <= 0.5 ** ((model.m - 1) / 2):
        return greedy_forward(model, z, heuristic)
    return greedy_reverse(model, z, heuristic)


def _check(z: float, heuristic: str) -> None:
    if not 0.0 < z <= 1.0:
        raise ConfigError(f"z: throttle fraction must be in (0, 1], got {z}")
    if heuristic not in ("bdopdc", "bo", "bopc"):
        raise ConfigError(f"heuristic: expected bdopdc|bo|bopc, got {heuristic!r}")

