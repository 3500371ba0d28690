"""Inputs and single runs of `harvest bench memory` (Das, Gehrke, Riedewald §5.2).

A workload is a recorded input in arrival order. The paper's synthetic streams have one
tuple per stream per time step (value drawn i.i.d. from a Zipf distribution over a domain
of 50; ``correlated``: every stream ranks the values alike, else each stream has its own
random ranking); a step is ``STEP_MS`` of event time and the window w steps, so a probe
at step t sees the steps t − w + 1 … t, as in the paper. Within a step the streams arrive
one after the other, the engine's one-at-a-time model, which OPT-offline models too
(``pipeline.operators.memory.opt``). Results are counted from step ``2w`` on (the paper's
warm-up). The lagged workload is the GrubJoin sensors generator with stream 2 five
seconds ahead of stream 1 (``connectors.workloads``).

Every run goes through the real operator: :func:`pipeline.operators.memory.make_join` (an
``MWayJoin``, or a ``BoundedJoin`` with the policy), one ``process`` call per tuple.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from connectors.workloads import WorkloadSpec, generate_workload
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.predicates import Predicate, build_predicate
from pipeline.operators.memory import BoundedJoin, make_join
from pipeline.operators.memory.opt import opt_offline

STEP_MS = 10
DOMAIN = 50
#: a solve above this many arcs would take more than 10 minutes (measured ≤ 40 µs/arc)
MAX_OPT_ARCS = 15_000_000


@dataclass(frozen=True)
class Workload:
    """A recorded input: arrival-ordered streams, ts (ms), values (n×d), the time step of
    each arrival, the first counted step, and the join's shape."""

    name: str
    streams: NDArray[np.int64]
    tss: NDArray[np.int64]
    vals: NDArray[np.float64]
    steps: NDArray[np.int64]
    count_from_step: int
    m: int
    window_ms: int
    window_tuples: int
    predicate: str
    epsilon: float
    zipf: tuple[float, ...] | None
    #: the number of distinct values (synthetic Zipf input; None for the sensors)
    domain: int | None = None

    def join_config(self) -> JoinConfig:
        pred = self.make_predicate()
        b = max(STEP_MS, self.window_ms // 8)
        return JoinConfig(tuple(self.window_ms for _ in range(self.m)), b, pred)

    def make_predicate(self) -> Predicate:
        return build_predicate(self.predicate, attribute="value", epsilon=self.epsilon)

    @property
    def first_counted(self) -> int:
        """Index of the first arrival whose results count (its step ≥ the warm-up)."""
        return int(np.searchsorted(self.steps, self.count_from_step))


def zipf_values(n: int, z: float, rng: np.random.Generator, ranking: NDArray[np.int64]
                ) -> NDArray[np.int64]:
    """n i.i.d. values of Zipf(z) over the domain ``ranking`` (its size): rank k has weight
    k^-z, value ranking[k]."""
    d = int(ranking.shape[0])
    p = 1.0 / np.arange(1, d + 1, dtype=np.float64) ** z
    return ranking[rng.choice(d, size=n, p=p / p.sum())]


def step_workload(name: str, w: int, zipfs: tuple[float, ...], seed: int, after: int,
                  correlated: bool = True, predicate: str = "equi",
                  epsilon: float = 0.0, domain: int = DOMAIN) -> Workload:
    """The paper's synthetic input: one tuple per stream per step, 2w warm-up steps plus
    ``after`` counted ones, values 1..``domain``. ``band``: the value plus uniform noise
    in [−½, ½)."""
    rng = np.random.default_rng(seed)
    m = len(zipfs)
    steps_n = 2 * w + after
    base = np.arange(1, domain + 1)
    cols = []
    for z in zipfs:
        ranking = base if correlated else rng.permutation(base)
        v = zipf_values(steps_n, z, rng, ranking).astype(np.float64)
        if predicate == "band":
            v = v + rng.uniform(-0.5, 0.5, steps_n)
        cols.append(v)
    vals = np.stack(cols, axis=1).reshape(-1, 1)
    return Workload(name, np.tile(np.arange(m, dtype=np.int64), steps_n),
                    np.repeat(np.arange(steps_n, dtype=np.int64) * STEP_MS, m), vals,
                    np.repeat(np.arange(steps_n, dtype=np.int64), m), 2 * w, m,
                    (w - 1) * STEP_MS, w, predicate, epsilon, tuple(zipfs), domain)


def lagged_workload(duration_s: float, rate: float = 100.0, lag_s: float = 5.0,
                    window_s: float = 10.0, seed: int = 7) -> Workload:
    """Two GrubJoin sensor streams (band join, ε = 1), stream 2 ``lag_s`` ahead: a stream-2
    tuple meets its partner only at age ≈ lag_s; stream-1 tuples never after arrival."""
    spec = WorkloadSpec("sensors", streams=2, rates=(rate,), duration_s=duration_s,
                        lags_s=(0.0, lag_s), kappas=(2.0, 2.0), seed=seed)
    cols = generate_workload(spec).columns
    tss = np.asarray(cols["event_time"], np.int64)
    window_ms = int(window_s * 1000)
    return Workload("lagged", np.asarray(cols["stream"], np.int64), tss,
                    np.asarray(cols["value"], np.float64).reshape(-1, 1),
                    np.arange(tss.size, dtype=np.int64), 0, 2, window_ms,
                    int(rate * window_s), "band", 1.0, None)


def lagged_warmup(wl: Workload) -> Workload:
    """The lagged workload counting from two windows in (by arrival index)."""
    first = int(np.searchsorted(wl.tss, int(wl.tss[0]) + 2 * wl.window_ms))
    return Workload(wl.name, wl.streams, wl.tss, wl.vals, wl.steps, first, wl.m, wl.window_ms,
                    wl.window_tuples, wl.predicate, wl.epsilon, wl.zipf, wl.domain)


def run_exact(wl: Workload) -> dict[str, Any]:
    """The unbounded join: counted results and the most tuples it must hold at once."""
    cfg = wl.join_config()
    join = make_join(cfg)
    first = wl.first_counted
    results = 0
    holds = 0
    t0 = time.process_time()
    for k in range(wl.streams.size):
        out = join.process(int(wl.streams[k]), int(wl.tss[k]), k, wl.vals[k])
        if k >= first:
            results += out.count
        if k % 7 == 0 or k == wl.streams.size - 1:
            lo = join.join_time
            holds = max(holds, sum(win.count_from(lo - cfg.windows[j])
                                   for j, win in enumerate(join.windows)))
    return {"results": results, "holds": holds, "seconds": time.process_time() - t0}


def run_online(wl: Workload, mode: str, budget: int, allocation: str = "fixed",
               seed: int = 0, known: bool = False) -> dict[str, Any]:
    """One policy under memory ``budget``: counted results, the admission step's CPU time
    per tuple (µs), and (variable pools) each stream's mean share of the stored tuples.

    ``known``: the paper's setting (Das et al. §5.2: "p_R() and p_S() ... set according to
    the actual distribution over the *whole* input stream"): the value counts of the whole
    recorded input are loaded before the run and frozen. Not something a user can run
    (it needs the future); the rows are labelled ``PROB-KNOWN`` as a comparison only."""
    join = make_join(wl.join_config(), MemoryConfig(mode, budget, allocation, seed=seed))
    assert isinstance(join, BoundedJoin)
    mem = join.memory
    if known:
        for k in range(wl.streams.size):
            mem.stats.observe(int(wl.streams[k]), int(wl.tss[k]), wl.vals[k])
        mem.observe_arrival = _frozen  # type: ignore[method-assign]
    admit = mem.admit
    spent = [0.0]

    def timed(*args: Any) -> bool:
        t = time.process_time()
        ok = admit(*args)
        spent[0] += time.process_time() - t
        return ok

    mem.admit = timed  # type: ignore[method-assign,assignment]
    first = wl.first_counted
    results = 0
    shares = np.zeros(wl.m)
    samples = 0
    t0 = time.process_time()
    for k in range(wl.streams.size):
        out = join.process(int(wl.streams[k]), int(wl.tss[k]), k, wl.vals[k])
        if k >= first:
            results += out.count
            if k % 5 == 0:
                n = np.array(mem.window_tuples(), np.float64)
                if n.sum() > 0:
                    shares += n / n.sum()
                    samples += 1
    total = time.process_time() - t0
    return {
        "results": results,
        "seconds": total,
        "evict_us_per_tuple": 1e6 * spent[0] / max(wl.streams.size, 1),
        "us_per_tuple": 1e6 * total / max(wl.streams.size, 1),
        "share": (shares / max(samples, 1)).tolist(),
        "evictions": mem.metrics()["evictions"],
    }


def _frozen(stream: int, ts: int, enc: Any) -> None:
    """``observe_arrival`` of a policy whose statistics were loaded in advance."""


def run_opt(wl: Workload, budget: int, allocation: str = "fixed") -> dict[str, Any]:
    """OPT-offline (2-way only); skipped when the solve would exceed 10 minutes."""
    from pipeline.operators.memory.opt import find_matches

    pred = wl.make_predicate()
    steps = np.arange(wl.streams.size, dtype=np.int64)
    mt = find_matches(wl.streams, wl.tss, wl.vals, steps, (wl.window_ms, wl.window_ms), pred)
    arcs = int(mt.first.size) + 3 * wl.streams.size
    if arcs > MAX_OPT_ARCS:
        return {"results": None, "note": f"skipped: {arcs} arcs would take more than "
                f"10 minutes (about 40 µs per arc)"}
    got = opt_offline(wl.streams, wl.tss, wl.vals, (wl.window_ms, wl.window_ms), pred, budget,
                      allocation, count_from_step=wl.first_counted)
    return {"results": got.results, "exact": got.exact, "arcs": got.arcs,
            "seconds": got.build_seconds + got.solve_seconds}
