"""Admission and harvesting decided together (ours; issue 28; extends GrubJoin §IV-C).

The paper's Optimal Window Harvesting Problem keeps every tuple and picks the harvest
fractions {z_{i,j}} that maximize O({z}) subject to C({z}) ≤ z·C(1) (§IV-C, Eqs. (1)–(4)
of the digest's §1.6–1.7). When even one logical basic window per position does not fit
— the fixed per-tuple cost Σλ_i·c_t and the per-probe cost c_p alone exceed the budget —
it has no feasible configuration, and what it then does decides whether the operator
produces anything: dropping arrivals at a queue empties the windows too.

We add admitted fractions a_i ∈ (0, 1] (tuples of S_i kept at random before the join)
to the decision. Admitting a_i of S_i scales its rate and its window:

    λ'_i = a_i·λ_i,   S'_l = a_l·λ_l·w_l,

and the paper's model is otherwise unchanged, so with the same harvest counts

    N'_{i,j} = Π_{k<j} P_{i,k}·σ_{i,r_{i,k}}·a_{r_{i,k}}·S_{i,k}            (partial results)
    C(a, {z}) = Σ_i a_i·λ_i·(c_t + [k_{i,·}>0]·(c_p + C'_i)),  C'_i = Σ_j z_{i,j}·S'_{i,j}·N'_{i,j}
    O(a, {z}) = Σ_i a_i·λ_i·N'_{i,m}     = (Π_l a_l)·O({z})  for uniform-in-i harvests,

i.e. a result needs all m members, so the output falls with the product of the admitted
fractions, while the fixed cost falls only linearly and the scan cost as a_i·a_l·….
The joint problem is

    max_{a, {z}, q}  q·O(a, {z})   s.t.  c_t·Σ a_i λ_i + q·(C(a, {z}) − c_t·Σ a_i λ_i) ≤ B,

with B = z·C(1) the throttle's budget in the model's units (C(1) at full admission) and q
the probe share of :func:`~pipeline.operators.shedding.grubjoin.share.probe_share`.

Where the paper's problem has a solution at a = 1 we keep it (GrubJoin as published:
every tuple admitted; on the small grids of the tests, trading a few percent of the
tuples for one more window per position models more output but makes the throttle
cycle) — unless the full join at its largest feasible a, tail drop's point, models more
than :data:`ADMIT_MARGIN` × its output (:func:`_or_dropping`). That happens where the
per-tuple cost c_t is a large share of the budget and the windows are about equally
productive: with uniform lags, scanning a share f of the windows at a = 1 yields f of
the output at cost c_t·Σλ + f·X, the full join at a yields a² of it at cost
a·c_t·Σλ + a²·X (X the full scan cost), and at equal cost a² > f as soon as
c_t·Σλ·(1 − a) > 0. c_t is ``tuple_cost`` as configured, or on the wall clock with
``learn_tuple_cost`` fitted from the timed runs
(:mod:`~pipeline.operators.shedding.wall_fit`). Otherwise — the collapse
regime — we solve the joint problem with one admitted fraction a for every stream
(uniform random admission):
for each a of a geometric grid (:data:`LEVELS`, from 1 down) the paper's problem on the
scaled model at the budget B (``configure``, exact for m ≤ 3; with nothing feasible, the
cheapest productive harvest and those at 2·z_a, 4·z_a, …) gives candidate harvests; each
is then evaluated at every a of a fine grid with the largest q that fits there,
q(a) = min(1, (B − c_t·Σa·λ_i) / (C(a) − c_t·Σa·λ_i)), and the (harvest, a, q) of most
modelled output q·O(a) wins. The full join (all z_{i,j} = 1, q = 1) at its
largest feasible a — what random or tail drop in front of the full join achieves — is
always a candidate, so the choice is never worse than dropping tuples in the model (up
to :data:`ADMIT_MARGIN` where full admission with harvesting is within it): when
the per-tuple cost dominates the output-optimal point is the full join at a < 1 (it
behaves like tail drop), when probing dominates it is a = 1 with harvesting (the paper).
Per-stream fractions a_i are returned for the admission step; they are equal here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, IntArray
from pipeline.operators.shedding.grubjoin.calibration import HARVEST, kind_of
from pipeline.operators.shedding.grubjoin.greedy import Heuristic, Solver, configure
from pipeline.operators.shedding.grubjoin.share import MIN_SHARE, cheapest_productive, probe_share

__all__ = ["ADMIT_MARGIN", "GRID", "LEVELS", "Joint", "choose", "joint_cost", "joint_output",
           "scaled"]

#: the admitted fractions tried, from 1 down (geometric, ratio ≈ 0.75)
LEVELS = tuple(float(v) for v in np.round(0.75 ** np.arange(17), 4))
#: most count rows of one direction tried by the probe-share fallback (_sampled_rows)
MAX_ROWS = 4096
#: a choice that drops tuples (a < 1) must model this much more output than the best one
#: admitting everything: near-equal choices otherwise alternate between Δs (the model's
#: outputs are estimates), and every switch disturbs the throttle's measurements
ADMIT_MARGIN = 1.1
#: the admitted fractions each candidate harvest is evaluated at (geometric, 1 down to
#: the smallest level; ratio ≈ 0.94)
GRID = tuple(float(v) for v in np.geomspace(1.0, LEVELS[-1], 64))


@dataclass(frozen=True)
class Joint:
    """One choice: ``admit`` per stream, harvest ``counts`` (by position), probe share
    ``share``; the modelled cost and output per second."""

    admit: FloatArray
    counts: IntArray
    share: float
    cost: float
    output: float


def scaled(model: HarvestModel, admit: float | FloatArray) -> HarvestModel:
    """The model with a_i of every stream admitted: λ'_i = a_i·λ_i, S'_l = a_l·S_l."""
    a = np.broadcast_to(np.asarray(admit, dtype=np.float64), (model.m,))
    return dataclasses.replace(
        model,
        rates=tuple(float(v) for v in np.asarray(model.rates) * a),
        window_tuples=tuple(float(v) for v in np.asarray(model.window_tuples) * a))


def joint_cost(model: HarvestModel, admit: float, counts: IntArray, share: float) -> float:
    """C at admission ``admit`` with probe share ``share`` (module docstring)."""
    m = scaled(model, admit)
    fixed = m.fixed_cost()
    return fixed + share * (float(m.evaluate(counts)[0]) - fixed)


def joint_output(model: HarvestModel, admit: float, counts: IntArray, share: float) -> float:
    """q·O at admission ``admit`` (module docstring)."""
    return share * float(scaled(model, admit).evaluate(counts)[1])


def _best_admission(model: HarvestModel, counts: IntArray, budget: float
                    ) -> tuple[float, float]:
    """(a, q) maximizing q·O(a) for ``counts`` with q(a) the largest probe share that fits
    the budget at admission a (:func:`_fit_share`), over :data:`GRID`; (0, 0) if none.
    All of the grid at once: the scaled models differ only in λ' = a·λ and S' = a·S."""
    arr = model.arrays()
    grid = np.asarray(GRID)
    lam = grid[:, None] * arr.lam[None, :]
    at_grid = dataclasses.replace(arr, lam=lam, seg=grid[:, None, None] * arr.seg[None])
    cost, out = at_grid.direction_terms(counts)
    fixed = lam.sum(axis=-1) * arr.tuple_cost
    var, output = cost.sum(axis=-1), out.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(var > 0.0, np.minimum(1.0, (budget - fixed) / var), 1.0)
    q = np.where(fixed > budget, 0.0, q)
    got = np.where(q >= MIN_SHARE, q * output, -np.inf)
    k = int(np.argmax(got))
    if not np.isfinite(got[k]):
        return 0.0, 0.0
    return float(grid[k]), float(q[k])


def _fit_share(model: HarvestModel, a: float, counts: IntArray, budget: float) -> float:
    """The largest probe share q ≤ 1 with which ``counts`` fit the budget at admission
    ``a`` (0 when the fixed cost alone does not)."""
    m_a = scaled(model, a)
    fixed = m_a.fixed_cost()
    var = float(m_a.evaluate(counts)[0]) - fixed
    if fixed > budget:
        return 0.0
    if var <= 0.0:
        return 1.0
    return float(min(1.0, (budget - fixed) / var))


def _sampled_rows(m_a: HarvestModel, budget: float) -> list[IntArray]:
    """Per direction i (ours, the probe-share fallback): of the configurations that probe
    in direction i only, the one whose output at the probe share fitting the budget,
    q·λ_i·N_{i,m} with q = min(1, (B − fixed) / λ_i·C_i), is largest — every row of
    counts is tried when there are at most :data:`MAX_ROWS` (else none)."""
    arr = m_a.arrays()
    fixed = m_a.fixed_cost()
    nmax = m_a.max_counts()
    out = []
    for i in range(m_a.m):
        sizes = [int(v) + 1 for v in nmax[i]]
        if int(np.prod(sizes)) > MAX_ROWS or budget <= fixed:
            continue
        rows = np.stack(np.meshgrid(*[np.arange(k) for k in sizes], indexing="ij"),
                        axis=-1).reshape(-1, m_a.m - 1)
        rows = rows[(rows > 0).all(axis=1)]
        if rows.shape[0] == 0:
            continue
        cost, got = arr.row_terms(i, rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(cost > 0, np.minimum(1.0, (budget - fixed) / cost), 1.0)
        best = rows[int(np.argmax(q * got))]
        counts = np.zeros((m_a.m, m_a.m - 1), dtype=np.int64)
        counts[i] = best
        out.append(counts)
    return out


def _at_level(model: HarvestModel, a: float, budget: float, heuristic: Heuristic,
              solver: Solver) -> list[tuple[IntArray, float]]:
    """Candidates for the scaled model at the budget: the paper's harvest at z_a = B /
    C_a(1) when one fits; else (ours, the probe-share fallback) the cheapest productive
    harvest and those at 2·z_a, 4·z_a, … up to the full join, each probing on the share
    q that fits the budget — more windows per probing tuple can amortize the per-probe
    cost c_p better than probing more tuples on fewer windows."""
    m_a = scaled(model, a)
    full = m_a.full_cost()
    if full <= 0.0:
        return [(m_a.max_counts(), 1.0)]
    z_a = min(1.0, budget / full)
    counts = configure(m_a, z_a, heuristic, solver)
    if counts.any():
        return [(counts, 1.0)]
    out: list[tuple[IntArray, float]] = []
    seen: set[bytes] = set()
    for counts in _sampled_rows(m_a, budget):
        share = _fit_share(model, a, counts, budget)
        if share >= MIN_SHARE:
            seen.add(counts.tobytes())
            out.append((counts, share))
    counts = cheapest_productive(m_a)
    while True:
        key = counts.tobytes()
        share = _fit_share(model, a, counts, budget)
        if share <= 0.0:
            return out  # the fixed cost alone exceeds the budget at this a
        if key not in seen and share >= MIN_SHARE:
            seen.add(key)
            out.append((counts, share))
        if z_a >= 1.0:
            return out
        z_a = min(1.0, 2.0 * z_a)
        counts = configure(m_a, z_a, heuristic, solver)
        if not counts.any():
            counts = cheapest_productive(m_a)


def _exhaustive(model: HarvestModel, budget: float) -> Joint | None:
    """Every configuration × every admission of :data:`GRID` when there are at most
    :data:`MAX_ROWS` configurations (small m and few basic windows): the exact optimum of
    q·O(a) on that grid, with q the probe share that fits (ours; None when too many)."""
    nmax = model.max_counts()
    if int(np.prod(nmax.astype(np.float64) + 1.0)) > MAX_ROWS:
        return None
    axes = [np.arange(int(k) + 1) for k in nmax.ravel()]
    counts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(
        (-1, *nmax.shape)).astype(np.int64)
    best: Joint | None = None
    for a in GRID:
        m_a = scaled(model, float(a))
        fixed = m_a.fixed_cost()
        if fixed > budget:
            continue
        cost, out = m_a.evaluate(counts)
        var = cost - fixed
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.clip(np.where(var > 0, (budget - fixed) / var, 1.0), 0.0, 1.0)
        got = np.where(q >= MIN_SHARE, q * out, -1.0)
        k = int(np.argmax(got))
        if got[k] > 0 and (best is None or got[k] > best.output):
            best = Joint(np.full(model.m, float(a)), counts[k], float(q[k]),
                         joint_cost(model, float(a), counts[k], float(q[k])),
                         joint_output(model, float(a), counts[k], float(q[k])))
    return best


def _score(model: HarvestModel, joint: Joint, weight: float) -> float:
    """The modelled output a choice is ranked by: a harvest's (some z_{i,j} < 1) scaled
    by the calibration ``weight`` (calibration.py), a full scan's as is."""
    harvested = kind_of(joint.counts, model.max_counts()) == HARVEST
    return joint.output * (weight if harvested else 1.0)


def _or_dropping(model: HarvestModel, budget: float, paper: Joint, margin: float,
                 weight: float = 1.0) -> Joint:
    """The paper's harvest at full admission, or the full join at the admitted fraction
    and probe share of most modelled output that fit the budget (tail drop's point, or
    full windows on a share of the probes) when that models more than ``margin`` × its
    output (the per-tuple or per-probe cost dominates), harvests weighted by ``weight``."""
    full_counts = model.max_counts()
    a, share = _best_admission(model, full_counts, budget)
    if share <= 0.0:
        return paper
    out = joint_output(model, a, full_counts, share)
    if out <= margin * _score(model, paper, weight):
        return paper
    return Joint(np.full(model.m, a), full_counts, share,
                 joint_cost(model, a, full_counts, share), out)


def choose(model: HarvestModel, budget: float, heuristic: Heuristic = "bdopdc",
           solver: Solver = "auto", levels: tuple[float, ...] = LEVELS,
           margin: float = ADMIT_MARGIN, harvest_weight: float = 1.0) -> Joint:
    """The paper's harvest at full admission when one fits ``budget``; else the admitted
    fraction and harvest of most modelled output within it (module docstring), where a
    choice with a < 1 must beat the best full-admission one by ``margin``. Harvests are
    ranked by their modelled output × ``harvest_weight`` (realized over modelled results
    of harvests relative to full scans, :mod:`~pipeline.operators.shedding.grubjoin.
    calibration`; 1 = the model as is). With nothing feasible even at the smallest
    level: that level's cheapest productive configuration at the smallest probe share."""
    full = model.full_cost()
    if full > 0.0:  # the paper's harvest fits at full admission: GrubJoin as published
        counts = configure(model, min(1.0, budget / full), heuristic, solver)
        if counts.any():
            paper = Joint(np.ones(model.m), counts, 1.0, joint_cost(model, 1.0, counts, 1.0),
                          joint_output(model, 1.0, counts, 1.0))
            return _or_dropping(model, budget, paper, margin, harvest_weight)
    best: Joint | None = None
    full_counts = model.max_counts()
    cands: list[tuple[IntArray, float, float]] = []
    for a in levels:
        cands += [(c, q, a) for c, q in _at_level(model, a, budget, heuristic, solver)]
        if joint_cost(model, a, full_counts, 1.0) <= budget:
            cands.append((full_counts, 1.0, a))
            break  # the full join fits: a lower a only loses output
    else:  # the full join at its best (a, q), probe share below 1 included: tail drop's
        cands.append((full_counts, 1.0, levels[-1]))  # point, whatever the levels found
    tried: set[bytes] = set()
    best_score = -1.0
    for counts, _, _ in cands:
        key = counts.tobytes()
        if key in tried:  # the same harvest found at several levels: a_max is the same
            continue
        tried.add(key)
        a_max, share = _best_admission(model, counts, budget)
        if share <= 0.0:
            continue
        got = Joint(np.full(model.m, a_max), counts, share,
                    joint_cost(model, a_max, counts, share),
                    joint_output(model, a_max, counts, share))
        score = _score(model, got, harvest_weight)
        # full admission wins unless dropping gains > the margin
        penalty = margin if best is not None and best.admit[0] >= 1.0 and a_max < 1.0 else 1.0
        if best is None or score / penalty > best_score:
            best, best_score = got, score
    exact = _exhaustive(model, budget)
    if exact is not None and (best is None or _score(model, exact, harvest_weight) / (
            margin if best.admit[0] >= 1.0 > exact.admit[0] else 1.0) > best_score):
        best = exact
    if best is None:
        a = levels[-1]
        m_a = scaled(model, a)
        counts = cheapest_productive(m_a)
        share = probe_share(m_a, counts, 0.0)
        best = Joint(np.full(model.m, a), counts, share, joint_cost(model, a, counts, share),
                     joint_output(model, a, counts, share))
    return best
