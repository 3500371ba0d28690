"""The virtual cluster of `harvest bench diffusion`: G join hosts in one process, fed in
trigger-sized micro-batches exactly as the job feeds its route keys.

Per batch: the router routes the batch (its CPU time is the routing cost); then each
key, in turn, stores its share, probes with it, keeps the results it owns and expires
its windows; per (key, batch) the runner records CPU time (``time.process_time``),
cost units, tuples received and state size, and hands the keys' cumulative usage back
to the router (adaptive placement balances on it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bench.diffusion.join import Host
from bench.diffusion.routers import VRouter
from bench.diffusion.workload import Workload

F64 = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class Trace:
    """What one run measured: per (key, batch) arrays and the results emitted."""

    groups: int
    n: int
    cpu: F64
    cost: F64
    received: F64
    state: F64
    route_cpu: float
    results: IntArray
    shipped: float = 0.0
    #: per (key, batch) the paper's simulation cost (:func:`paper_units`)
    paper: F64 | None = None
    #: per (key, batch) the same costs with a probe read as one tuple pair compared
    #: (:func:`pair_units`)
    pairs: F64 | None = None
    extra: dict[str, object] = field(default_factory=dict)


#: Gu et al. §6.2's simulated costs: 1 ms to send or receive a tuple, 10 ms per join probe
RECEIVE_UNITS, PROBE_UNITS = 1.0, 10.0


def paper_units(received: npt.ArrayLike, probes: npt.ArrayLike) -> F64:
    """Cost in the paper's simulation model (§6.2), in ms: every tuple or partial result a
    host receives costs 1, every probe (one tuple or partial result against one stream's
    window on that host, however many tuples it holds) 10."""
    return np.asarray(RECEIVE_UNITS * np.asarray(received, np.float64)
                      + PROBE_UNITS * np.asarray(probes, np.float64))


def pair_units(received: npt.ArrayLike, candidates: npt.ArrayLike) -> F64:
    """The other reading of §6.2's "one join probing takes on average 10 ms": one tuple
    pair compared (the prototype's predicate compares two video images), so 1 per tuple
    or partial result received and 10 per candidate scanned."""
    return np.asarray(RECEIVE_UNITS * np.asarray(received, np.float64)
                      + PROBE_UNITS * np.asarray(candidates, np.float64))


def batches(wl: Workload, trigger_ms: int) -> list[tuple[int, int, int]]:
    """(first gid, end gid, end stream time) of each micro-batch of ``trigger_ms``."""
    if wl.n == 0:
        return []
    t0 = int(wl.ts[0])
    idx = (wl.ts - t0) // trigger_ms
    cuts = np.flatnonzero(np.diff(idx)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [wl.n]))
    return [(int(a), int(b), t0 + (int(idx[a]) + 1) * trigger_ms)
            for a, b in zip(starts, ends, strict=True)]


def run_keys(wl: Workload, router: VRouter, groups: int, trigger_ms: int) -> Trace:
    """Route and join the workload batch by batch on ``groups`` hosts."""
    plan = batches(wl, trigger_ms)
    shape = (groups, len(plan))
    cpu, cost, received, state, paper, pairs = (np.zeros(shape) for _ in range(6))
    hosts = [Host(wl) for _ in range(groups)]
    found: list[IntArray] = [np.zeros((0, wl.m), np.int64)]
    route_cpu = 0.0
    for b, (lo, hi, until) in enumerate(plan):
        gids = np.arange(lo, hi, dtype=np.int64)
        t0 = time.process_time()
        rows, keys = router.route(gids)
        route_cpu += time.process_time() - t0
        for k, host in enumerate(hosts):
            mine = gids[rows[keys == k]]
            probes = host.probes
            c0 = time.process_time()
            host.add(mine)
            res, units = host.probe_all(mine)
            if len(res):
                res = res[router.owners(res) == k]
            host.expire(until)
            cpu[k, b] = time.process_time() - c0
            cost[k, b], received[k, b], state[k, b] = units, len(mine), host.state()
            paper[k, b] = paper_units(len(mine), host.probes - probes)
            pairs[k, b] = pair_units(len(mine), units - len(mine))  # units: + 1 per prober
            found.append(res)
        router.observe(cost.sum(axis=1), state[:, b], received.sum(axis=1), until)
    return Trace(groups, wl.n, cpu, cost, received, state, route_cpu, np.concatenate(found),
                 paper=paper, pairs=pairs)
