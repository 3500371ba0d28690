"""OPT-offline: the most results any eviction policy can get from a recorded input
(Das, Gehrke, Riedewald §4.1: MAX-subset of a 2-way sliding-window join as min-cost flow).

The input is a sequence of *steps*; the tuples of one step all probe the memory (and
join each other, the paper's "top path": every algorithm gets those, so they are a
constant), then compete for admission. ``steps=None`` makes every arrival its own step:
the engine's model (one tuple at a time, §6.1 "asynchronous arrivals"), the one the
online policies in this package run in. The paper's Fig. 3 example has one R and one S
tuple per step (``steps`` = the time).

Flow graph (ours: the paper's, with its zero-cost stretches contracted). Memory slots
are units of flow; each pool (one per stream for ``fixed`` allocation, one for
``variable``) has a *timeline* of nodes T_k, one per step at which something happens to
it, with source → T_first and T_last → sink (supply = demand = the pool's budget B) and
T_k → T_k' (capacity B, cost 0: idle slots). A tuple x with c later partners y_1..y_c
(in its lifetime: ts_y − ts_x ≤ W_x, predicate true) gets one node x and

* T_{step x} → x (capacity 1): x is admitted at its arrival and takes a slot;
* x → T_{step y_j} for j = 1..c (capacity 1, cost −(counted results among (x, y_1) …
  (x, y_j))): x stays stored through y_j's probe and is evicted right after it, its slot
  going back to the pool before that step's admissions (so y_j itself may take it).

One unit enters x, so one eviction point is chosen. Keeping a tuple only up to a partner's
probe loses nothing: evicting it later than right after its last useful probe only keeps
a slot busy, and the paper's per-step replacement arcs are recovered by the idle
timeline. So the min-cost flow has the paper's optimum, on (tuples + results) arcs and
paths of length two instead of (tuples × window) nodes. Capacities and costs are
integral, so an integral optimum exists (the paper's Thm. 4). With fixed allocation the
pools share nothing, so each is solved on its own.
Only 2-way joins: with m ≥ 3 a result needs several tuples stored at once, which no flow
models (the static version is already NP-hard, Das et al. Thm. 3).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError
from pipeline.operators.join.predicates import DensePredicate, Predicate

I64 = NDArray[np.int64]


@dataclass(frozen=True)
class OptResult:
    """``results``: the optimum (counted results, same-step pairs included); ``exact``:
    the unbounded join's counted results; graph size and solve time."""

    results: int
    exact: int
    same_step: int
    nodes: int
    arcs: int
    build_seconds: float
    solve_seconds: float


@dataclass(frozen=True)
class Matches:
    """The 2-way join's pairs of a recorded input: ``first`` arrived at an earlier step
    than ``second``; ``same`` are pairs within one step (counted where ``counted``)."""

    first: I64
    second: I64
    same_step_counted: int


def find_matches(streams: I64, tss: I64, encs: NDArray[np.float64], steps: I64,
                 windows_ms: Sequence[int], predicate: Predicate,
                 count_from_step: int = 0) -> Matches:
    """Every joining pair (x before y, other stream, ts_y − ts_x ≤ W_x), vectorized per x."""
    if not isinstance(predicate, DensePredicate) or predicate.kind == "custom":
        raise ConfigError("opt: only equi, band and distance joins (dense predicates)")
    n = streams.shape[0]
    firsts: list[I64] = []
    seconds: list[I64] = []
    same = 0
    ends = np.searchsorted(tss, tss + np.asarray(windows_ms, np.int64)[streams], side="right")
    for x in range(n):
        lo = x + 1
        hi = int(ends[x])
        if hi <= lo:
            continue
        cand = np.arange(lo, hi)
        cand = cand[streams[cand] != streams[x]]
        if cand.size == 0:
            continue
        hit = cand[predicate.match_values(encs[x : x + 1], encs[cand])[0]]
        if hit.size == 0:
            continue
        same_mask = steps[hit] == steps[x]
        if same_mask.any():
            same += int(np.count_nonzero(steps[hit[same_mask]] >= count_from_step))
            hit = hit[~same_mask]
        firsts.append(np.full(hit.size, x, np.int64))
        seconds.append(hit)
    return Matches(_cat(firsts), _cat(seconds), same)


def _cat(parts: list[I64]) -> I64:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def opt_offline(
    streams: Sequence[int] | I64,
    tss: Sequence[int] | I64,
    encs: Sequence[Any] | NDArray[np.float64],
    windows_ms: Sequence[int],
    predicate: Predicate,
    max_tuples: int,
    allocation: str = "fixed",
    steps: Sequence[int] | I64 | None = None,
    count_from_step: int = 0,
) -> OptResult:
    """The most counted results any eviction policy can produce under memory M.

    ``streams``/``tss``/``encs`` (``predicate.encode`` rows): the arrivals in order (ts
    non-decreasing); results are counted when their later member's step is ≥
    ``count_from_step`` (the warm-up of Das et al. §5.2 is not counted).
    """
    t0 = time.perf_counter()
    s = np.asarray(streams, np.int64)
    t = np.asarray(tss, np.int64)
    if len(windows_ms) != 2 or (s.size and (s.min() < 0 or s.max() > 1)):
        raise ConfigError("opt: the flow formulation is for 2-way joins (streams 0 and 1)")
    if s.size and (np.diff(t) < 0).any():
        raise ConfigError("opt: arrivals must be in ts order")
    st = np.arange(s.size, dtype=np.int64) if steps is None else np.asarray(steps, np.int64)
    if st.size and (np.diff(st) < 0).any():
        raise ConfigError("opt: steps must not decrease")
    e = np.asarray(encs, np.float64).reshape(s.size, -1)
    if allocation == "variable":
        budgets = [max_tuples]
        pool_of = np.zeros(s.size, np.int64)
    elif allocation == "fixed":
        budgets = [max_tuples // 2, max_tuples // 2]
        pool_of = s
    else:
        raise ConfigError(f"opt: allocation must be 'fixed' or 'variable', got {allocation!r}")
    mt = find_matches(s, t, e, st, windows_ms, predicate, count_from_step)
    exact = int(np.count_nonzero(st[mt.second] >= count_from_step)) + mt.same_step_counted
    graphs = _flow_graph(mt, st, pool_of, budgets, count_from_step)
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    best = sum(_solve(*g) for g in graphs)
    solve = time.perf_counter() - t1
    return OptResult(best + mt.same_step_counted, exact, mt.same_step_counted,
                     sum(g[0] for g in graphs), sum(int(g[1].size) for g in graphs),
                     build, solve)


def _flow_graph(mt: Matches, steps: I64, pool_of: I64, budgets: list[int],
                count_from_step: int) -> list[tuple[int, I64, I64, I64, I64, int]]:
    """One graph per pool: (nodes, tails, heads, capacities, costs, budget); node 0 is
    the source, 1 the sink."""
    order = np.lexsort((steps[mt.second], mt.first))  # by tuple, then partner step
    x = mt.first[order]
    y_step = steps[mt.second[order]]
    counted = (y_step >= count_from_step).astype(np.int64)
    tuples, first_at, counts = np.unique(x, return_index=True, return_counts=True)
    # results gained if x is evicted right after its j-th partner: a running count per x
    run = np.cumsum(counted)
    gain = run - np.repeat(run[first_at] - counted[first_at], counts)
    graphs = []
    for p, b in enumerate(budgets):
        mine_t = pool_of[tuples] == p
        mine_r = np.repeat(mine_t, counts)
        t_steps = np.unique(np.concatenate(([0], steps[tuples[mine_t]], y_step[mine_r])))
        n_t = t_steps.size
        k = int(mine_t.sum())
        x_node = 2 + n_t + np.arange(k, dtype=np.int64)  # the pool's tuples, in order
        owner = np.repeat(x_node, counts[mine_t])
        tl = np.arange(2, 2 + n_t, dtype=np.int64)
        tails = np.concatenate(([0], tl[-1:], tl[:-1],
                                2 + np.searchsorted(t_steps, steps[tuples[mine_t]]), owner))
        heads = np.concatenate(([tl[0]], [1], tl[1:], x_node,
                                2 + np.searchsorted(t_steps, y_step[mine_r])))
        caps = np.concatenate((np.full(n_t + 1, b, np.int64), np.ones(k + owner.size, np.int64)))
        costs = np.concatenate((np.zeros(n_t + 1 + k, np.int64), -gain[mine_r]))
        graphs.append((2 + n_t + k, tails.astype(np.int64), heads.astype(np.int64), caps,
                       costs, b))
    return graphs


def _solve(n_nodes: int, tails: I64, heads: I64, caps: I64, costs: I64, budget: int) -> int:
    """−(min cost) with OR-Tools' SimpleMinCostFlow (source 0 → sink 1, ``budget`` units)."""
    from ortools.graph.python import min_cost_flow

    mcf = min_cost_flow.SimpleMinCostFlow()
    mcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
    mcf.set_nodes_supplies(np.array([0, 1], np.int64), np.array([budget, -budget], np.int64))
    status = mcf.solve()
    if status != mcf.OPTIMAL:
        raise RuntimeError(f"opt: min-cost flow did not solve (status {status}, "
                           f"{n_nodes} nodes)")
    return -int(mcf.optimal_cost())
