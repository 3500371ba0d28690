"""Greedy harvest-fraction configuration (GrubJoin §IV-D, Fig. 6 GREEDYPICK).

Forward greedy starts from all z_{i,j} = 0 and repeatedly takes the feasible one-window
increment with the best metric — BO (O), BOpC (O/C) or BDOpDC (ΔO/ΔC, the recommended
one) — freezing increments that became infeasible. An uninitialized direction gets a
single candidate that sets every z_{i,j} = 1/n. Greedy reverse starts from all ones and
removes the least valuable window until C({z}) ≤ z·C(1); greedy double-sided uses the
forward form when z ≤ 0.5^{(m−1)/2} and the reverse form otherwise (§VI-A, Fig. 10).

Because C and O are sums over directions, a candidate's ΔC and ΔO depend only on its own
direction; they are cached and only the direction changed by the last step is
re-evaluated (its m−1 candidates, in scalar Python).

:func:`configure` is what GrubJoin runs online: the exact Pareto-DP optimum
(:func:`pipeline.operators.shedding.grubjoin.bruteforce.pareto_dp`) when m ≤ 3, else greedy
double-sided —
a deviation from the paper, documented there.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, IntArray
from pipeline.operators.shedding.grubjoin.bruteforce import pareto_dp

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


class _Rows:
    """Scalar per-direction evaluation for the greedy loops.

    The greedy evaluates only m − 1 candidates of one direction per step; at that size
    NumPy's per-call overhead dominates, so the tables are unpacked into Python lists
    and a row is evaluated with plain float arithmetic (same formulas as
    :meth:`ModelArrays.row_terms`).
    """

    def __init__(self, model: HarvestModel) -> None:
        arr = model.arrays()
        self.arr = arr
        m = model.m
        self.lam = [float(v) for v in arr.lam]
        self.nmax = arr.nmax.tolist()
        #: pa[i][j][k] = P_{i,j}(k)·σ_{i,j}·S_{i,j};  zs[i][j][k] = (k/n)·S_{i,j}
        self.pa = [[(arr.ytab[i, j] * (arr.sel[i, j] * arr.seg[i, j])).tolist()
                    for j in range(m - 1)] for i in range(m)]
        self.zs = [[(np.arange(arr.ytab.shape[2]) * (arr.seg[i, j] / arr.nmax[i, j])).tolist()
                    for j in range(m - 1)] for i in range(m)]
        self.fixed = arr.fixed_cost()
        self.probe_cost = arr.probe_cost
        self.indexed = arr.indexed
        self.pq: list[list[list[float]]] = []
        if arr.indexed:  # indexed cost (ours, costmodel docstring)
            kk = np.arange(arr.ytab.shape[2])
            pair = arr.sel if arr.pair is None else arr.pair
            q = pair * arr.seg
            #: zs[i][j][k] = [k > 0]·(c_w + q_j) (times ρ_j); pq[i][j][k] = [k > 0]·P_j(k)·q_j
            self.zs = [[np.where(kk > 0, arr.window_cost + q[i, j], 0.0).tolist()
                        for j in range(m - 1)] for i in range(m)]
            self.pq = [[np.where(kk > 0, arr.ytab[i, j] * q[i, j], 0.0).tolist()
                        for j in range(m - 1)] for i in range(m)]

    def terms(self, i: int, row: list[int]) -> tuple[float, float]:
        """(λ_i C_i, λ_i N_{i,m}) of one count row of direction i."""
        pa, zs = self.pa[i], self.zs[i]
        c = 0.0
        n = 1.0
        if self.indexed:
            pq = self.pq[i]
            for j, k in enumerate(row):
                c += (zs[j][k] if j == 0 else zs[j][k] * -math.expm1(-n)) + n * pq[j][k]
                n *= pa[j][k]
        else:
            for j, k in enumerate(row):
                c += zs[j][k] * n
                n *= pa[j][k]
        lam = self.lam[i]
        if self.probe_cost and any(row):
            c += self.probe_cost
        return lam * c, lam * n

    def full_cost(self) -> float:
        return self.fixed + sum(self.terms(i, row)[0] for i, row in enumerate(self.nmax))


def _score(heuristic: Heuristic, c_new: float, o_new: float, d_c: float, d_o: float) -> float:
    """EVAL of Fig. 6 for one feasible candidate (scalar form of :func:`_metric`)."""
    if heuristic == "bo":
        return o_new
    if heuristic == "bopc":
        return o_new / c_new if c_new > _EPS else 0.0
    if d_c > _EPS:
        return d_o / d_c
    return float("inf") if d_o > _EPS else 0.0


def greedy_forward(model: HarvestModel, z: float, heuristic: Heuristic = "bdopdc") -> IntArray:
    """GREEDYPICK (GrubJoin Fig. 6): counts k_{i,j} maximizing O s.t. C ≤ z·C(1)."""
    _check(z, heuristic)
    ev = _Rows(model)
    m = model.m
    mm = m - 1
    nmax = ev.nmax
    budget = z * ev.full_cost() * (1.0 + _REL)
    counts = [[0] * mm for _ in range(m)]
    frozen = [[False] * mm for _ in range(m)]
    init = [False] * m
    dir_c = [0.0] * m
    dir_o = [0.0] * m
    # cached candidate deltas: per (i, j) for initialized directions, per i otherwise
    d_c = [[0.0] * mm for _ in range(m)]
    d_o = [[0.0] * mm for _ in range(m)]
    i_c = [0.0] * m
    i_o = [0.0] * m
    for i in range(m):
        i_c[i], i_o[i] = ev.terms(i, [1] * mm)
    c_tot = ev.fixed
    o_tot = 0.0
    while True:
        best, bi, bj = _best_increment(heuristic, counts, frozen, init, nmax, (d_c, d_o),
                                       (c_tot, o_tot), budget)
        ubest, ub = -1.0, -1
        for i in range(m):
            if init[i] or c_tot + i_c[i] > budget:
                continue
            sc = _score(heuristic, c_tot + i_c[i], o_tot + i_o[i], i_c[i], i_o[i])
            if sc > ubest:
                ubest, ub = sc, i
        if best <= 0.0 and ubest <= 0.0:
            break
        if ubest > best:
            bi = ub
            init[bi] = True
            counts[bi] = [1] * mm
            dir_c[bi], dir_o[bi] = i_c[bi], i_o[bi]
        else:
            counts[bi][bj] += 1
            dir_c[bi] += d_c[bi][bj]
            dir_o[bi] += d_o[bi][bj]
        for j in range(mm):
            cand = list(counts[bi])
            cand[j] = min(cand[j] + 1, nmax[bi][j])
            cc, co = ev.terms(bi, cand)
            d_c[bi][j] = cc - dir_c[bi]
            d_o[bi][j] = co - dir_o[bi]
        c_tot = ev.fixed + sum(dir_c)
        o_tot = sum(dir_o)
    return np.array(counts, dtype=np.int64).reshape(m, mm)


def _best_increment(heuristic: Heuristic, counts: list[list[int]], frozen: list[list[bool]],
                    init: list[bool], nmax: list[list[int]],
                    deltas: tuple[list[list[float]], list[list[float]]],
                    totals: tuple[float, float], budget: float) -> tuple[float, int, int]:
    """GREEDYPICK's best single-window increment (score, i, j) of the initialized
    directions (score −1: none); an increment that no longer fits ``budget`` is frozen
    for good (``frozen`` is updated)."""
    d_c, d_o = deltas
    c_tot, o_tot = totals
    best, bi, bj = -1.0, -1, -1
    for i in range(len(counts)):
        if not init[i]:
            continue
        fr, ci, dci, doi, ni = frozen[i], counts[i], d_c[i], d_o[i], nmax[i]
        for j in range(len(ci)):
            if fr[j] or ci[j] >= ni[j]:
                continue
            if c_tot + dci[j] > budget:
                fr[j] = True  # infeasible → frozen for good
                continue
            sc = _score(heuristic, c_tot + dci[j], o_tot + doi[j], dci[j], doi[j])
            if sc > best:
                best, bi, bj = sc, i, j
    return best, bi, bj


def greedy_reverse(model: HarvestModel, z: float, heuristic: Heuristic = "bdopdc") -> IntArray:
    """Greedy reverse (GrubJoin §VI-A): from all z_{i,j} = 1, drop one window at a time.

    The removed window is the one losing the least output per unit of cost saved
    (BDOpDC), or leaving the largest O (BO) or O/C (BOpC). A direction whose fraction
    reaches 0 produces nothing, so all of its fractions are zeroed together.
    """
    _check(z, heuristic)
    ev = _Rows(model)
    m = model.m
    mm = m - 1
    budget = z * ev.full_cost() * (1.0 + _REL)
    counts = [list(r) for r in ev.nmax]
    dir_c = [0.0] * m
    dir_o = [0.0] * m
    d_c = [[0.0] * mm for _ in range(m)]  # cost saved by removing one window at (i, j)
    d_o = [[0.0] * mm for _ in range(m)]  # output lost

    def refresh(i: int) -> None:
        dir_c[i], dir_o[i] = ev.terms(i, counts[i])
        for j in range(mm):
            cand = list(counts[i])
            cand[j] -= 1
            if min(cand) <= 0:
                cand = [0] * mm
            cc, co = ev.terms(i, cand)
            d_c[i][j] = dir_c[i] - cc
            d_o[i][j] = dir_o[i] - co

    for i in range(m):
        refresh(i)
    inf = float("inf")
    while ev.fixed + sum(dir_c) > budget:
        c_tot = ev.fixed + sum(dir_c)
        o_tot = sum(dir_o)
        best, bi, bj = -inf, -1, -1
        for i in range(m):
            for j in range(mm):
                dc, do = d_c[i][j], d_o[i][j]
                if counts[i][j] <= 0 or dc <= _EPS:
                    continue
                if heuristic == "bo":
                    sc = o_tot - do
                elif heuristic == "bopc":
                    sc = (o_tot - do) / max(c_tot - dc, _EPS)
                else:
                    sc = -do / dc
                if sc > best:
                    best, bi, bj = sc, i, j
        if bi < 0:
            break
        counts[bi][bj] -= 1
        if counts[bi][bj] == 0:
            counts[bi] = [0] * mm
        refresh(bi)
    return np.array(counts, dtype=np.int64).reshape(m, mm)


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



#: largest per-direction grid Π_j n_{r_{i,j}} for which :func:`configure` runs the exact
#: Pareto DP (with m ≤ 3: n ≤ 20 qualifies; at m ≥ 4 the cross-direction merges of fronts
#: of hundreds of points take tens of ms, so the greedy is used)
EXACT_MAX_GRID = 400
EXACT_MAX_M = 3


Solver = Literal["auto", "greedy", "exact"]


def configure(model: HarvestModel, z: float, heuristic: Heuristic = "bdopdc",
              solver: Solver = "auto") -> IntArray:
    """The harvest fractions GrubJoin installs at each adaptation step (``solver``:
    ``[shedding] solver``; ``auto`` is described below, ``greedy`` always runs the
    paper's greedy double-sided, ``exact`` always the Pareto DP — m ≤ 3 only).

    Deviation from the paper (ours): the paper always runs greedy double-sided, whose
    one-window-at-a-time steps cannot reach optima that split the budget across
    directions (φ down to ≈0.8 on single m = 3 instances at small z). When every
    direction's grid is small (m ≤ ``EXACT_MAX_M`` and ≤ ``EXACT_MAX_GRID`` rows, i.e.
    m = 3 with n ≤ 20, or m = 2) we solve
    the problem exactly with :func:`pareto_dp` (per-direction Pareto DP + knapsack
    merge; sub-millisecond at m = 3, n = 10). Larger instances use the paper's greedy
    double-sided with ``heuristic``. z = 1 installs the full join, as greedy does (the
    DP would otherwise leave out windows the model credits with no output, e.g. while
    selectivities are still unknown).
    """
    _check(z, heuristic)
    if solver not in ("auto", "greedy", "exact"):
        raise ConfigError(f"shedding.solver: expected auto|greedy|exact, got {solver!r}")
    if solver == "exact" and model.m > EXACT_MAX_M:
        raise ConfigError(f"shedding.solver: 'exact' solves m <= {EXACT_MAX_M} streams, "
                          f"got {model.m}; use 'auto' or 'greedy'")
    if z >= 1.0:  # the full join (like greedy reverse; the DP would drop zero-output work)
        return model.max_counts().astype(np.int64)
    if solver == "greedy":
        return greedy_double_sided(model, z, heuristic)
    grid = np.prod(model.max_counts(), axis=1)
    if solver == "exact" or (model.m <= EXACT_MAX_M and int(grid.max()) <= EXACT_MAX_GRID):
        counts, _ = pareto_dp(model, z)
        return counts
    return greedy_double_sided(model, z, heuristic)
