"""CTR in the virtual cluster (Gu et al. §3): tuples are stored on the hosts of their
segment's first hop; each segment's probers walk its path hop by hop — every host of a
hop joins the partial results it receives with the slots it was assigned (the
annotations) and ships what it formed to the next hop's hosts (the intermediate
tuples, counted in ``Trace.shipped``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bench.diffusion.cluster import Trace, batches
from bench.diffusion.join import Allowed, Host
from bench.diffusion.workload import Workload
from pipeline.diffusion.ctr import CTRRouter, Path
from pipeline.diffusion.load import KeyLoads

IntArray = npt.NDArray[np.int64]


class _Cost:
    """Per-host CPU and cost units of the current batch."""

    def __init__(self, groups: int) -> None:
        self.cpu = np.zeros(groups)
        self.units = np.zeros(groups)
        self.shipped = 0


def _in_slots(wl: Workload, T: int, slots: IntArray) -> Allowed:
    """The annotation of one host on one hop: candidates of these slots only."""
    def allowed(cand: IntArray) -> npt.NDArray[np.bool_]:
        return np.isin(wl.ts[cand] // T, slots)
    return allowed


def _walk(wl: Workload, hosts: list[Host], path: Path, probers: IntArray, i: int,
          T: int, acc: _Cost) -> IntArray:
    """The complete results of ``probers`` (one segment of stream ``i``) along ``path``."""
    start = np.full((len(probers), wl.m), -1, np.int64)
    start[:, i] = probers
    cur: dict[int, IntArray] = {h: start for h in path.hops[0].hosts}
    for k, hop in enumerate(path.hops):
        new: dict[int, IntArray] = {}
        for h in hop.hosts:
            slots = np.asarray(sorted(e for e, x in hop.assign.items() if x == h), np.int64)
            if len(slots) == 0:
                continue
            if k == 0:
                inp = cur.get(h, start[:0])
            else:
                acc.shipped += sum(len(v) for p, v in cur.items() if p != h)
                inp = np.concatenate([start[:0], *cur.values()])
            c0 = time.process_time()
            out, units = hosts[h].extend(inp, inp[:, i], hop.stream,
                                         allowed=_in_slots(wl, T, slots))
            acc.cpu[h] += time.process_time() - c0
            acc.units[h] += units
            new[h] = out
        cur = new
    return np.concatenate([start[:0], *cur.values()])


def run_ctr(wl: Workload, groups: int, trigger_ms: int, segment_ms: int, *,
            selectivity: float, speeds: Sequence[float] | None = None,
            weights: Sequence[float] = (1.0, 0.0, 0.0)) -> Trace:
    """Route and join the workload with CTR on ``groups`` hosts."""
    plan = batches(wl, trigger_ms)
    shape = (groups, len(plan))
    cpu, cost, received, state = (np.zeros(shape) for _ in range(4))
    loads = KeyLoads(groups, weights, speeds)
    router = CTRRouter(groups, wl.windows, segment_ms, loads, selectivity)
    hosts = [Host(wl) for _ in range(groups)]
    found: list[IntArray] = [np.zeros((0, wl.m), np.int64)]
    route_cpu, shipped, table_bytes = 0.0, 0, 0
    for b, (lo, hi, until) in enumerate(plan):
        gids = np.arange(lo, hi, dtype=np.int64)
        t0 = time.process_time()
        rows, keys = router.route(wl.stream[gids], wl.ts[gids])
        route_cpu += time.process_time() - t0
        table_bytes = max(table_bytes, router.table_bytes())
        acc = _Cost(groups)
        for k, host in enumerate(hosts):
            mine = gids[rows[keys == k]]
            c0 = time.process_time()
            host.add(mine)
            acc.cpu[k] += time.process_time() - c0
            received[k, b] = len(mine)
        seg = wl.ts[gids] // segment_ms
        for i, e in sorted({(int(a), int(c)) for a, c in zip(wl.stream[gids], seg,
                                                                 strict=True)}):
            probers = gids[(wl.stream[gids] == i) & (seg == e)]
            acc.units[router.paths[(i, e)].hops[0].hosts] += len(probers)
            found.append(_walk(wl, hosts, router.paths[(i, e)], probers, i, segment_ms, acc))
        for k, host in enumerate(hosts):
            host.expire(until)
            state[k, b] = host.state()
        cpu[:, b], cost[:, b] = acc.cpu, acc.units
        shipped += acc.shipped
        loads.observe(cost.sum(axis=1), state[:, b], received.sum(axis=1), until)
    trace = Trace(groups, wl.n, cpu, cost, received, state, route_cpu, np.concatenate(found),
                  shipped=float(shipped))
    trace.extra["routing_table_bytes"] = table_bytes
    return trace
