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

from bench.diffusion.cluster import Trace, batches, pair_units, paper_units
from bench.diffusion.join import Host, Spans, span_rows
from bench.diffusion.workload import Workload
from pipeline.diffusion.ctr import CTRRouter, Path
from pipeline.diffusion.load import KeyLoads

IntArray = npt.NDArray[np.int64]
#: CTR's loads are the cost units of the last this many triggers (Eq. 1's utilization)
LOAD_HORIZON_TRIGGERS = 10


class _Cost:
    """Per-host CPU and cost units of the current batch."""

    def __init__(self, groups: int) -> None:
        self.cpu = np.zeros(groups)
        self.units = np.zeros(groups)
        self.recv = np.zeros(groups)
        self.shipped = 0


def _spans(T: int, slots: list[int]) -> Spans:
    """The annotation of one host on one hop: its assigned slots as time spans (runs of
    consecutive slots merged)."""
    out: Spans = []
    for e in sorted(slots):
        if out and out[-1][1] == e * T:
            out[-1] = (out[-1][0], (e + 1) * T)
        else:
            out.append((e * T, (e + 1) * T))
    return out


def _walk(wl: Workload, hosts: list[Host], segments: list[tuple[Path, IntArray, int]],
          T: int, acc: _Cost) -> IntArray:
    """The complete results of one batch's segments, each ``(path, probers, stream)``,
    hop by hop along their paths. Per hop level, a host joins the partial results of all
    the segments that reach it over the same stream, with the same streams joined so
    far, in one vectorized call, each row restricted to its segment's annotation
    (:meth:`Host.extend_rows`): the join work and the cost units are those of one call
    per segment, without the simulator's per-call overhead (which ATR's one call per
    host, stream and hop does not pay either)."""
    empty = np.zeros((0, wl.m), np.int64)
    cur: list[dict[int, IntArray]] = []
    for path, probers, i in segments:
        start = np.full((len(probers), wl.m), -1, np.int64)
        start[:, i] = probers
        cur.append(dict.fromkeys(path.hops[0].hosts, start))
    for k in range(wl.m - 1):
        work: dict[tuple[int, int, tuple[int, ...]],
                   list[tuple[int, IntArray, Spans, int]]] = {}
        for x, (path, _, i) in enumerate(segments):
            hop = path.hops[k]
            for h in hop.hosts:
                slots = [e for e, y in hop.assign.items() if y == h]
                if not slots:
                    continue
                if k == 0:
                    inp = cur[x].get(h, empty)
                else:
                    got = sum(len(v) for p, v in cur[x].items() if p != h)
                    acc.shipped += got
                    acc.recv[h] += got
                    acc.units[h] += got  # a received partial result costs what a tuple does
                    inp = np.concatenate([empty, *cur[x].values()])
                if len(inp):
                    have = tuple(sorted([i, *(q.stream for q in path.hops[:k])]))
                    work.setdefault((h, hop.stream, have), []).append(
                        (x, inp, _spans(T, slots), i))
        new: list[dict[int, IntArray]] = [{} for _ in segments]
        for (h, j, _), items in work.items():
            members = np.concatenate([inp for _, inp, _, _ in items])
            prober = np.concatenate([inp[:, i] for _, inp, _, i in items])
            owner = np.concatenate([np.full(len(inp), x, np.int64) for x, inp, _, _ in items])
            starts = np.cumsum([0] + [len(inp) for _, inp, _, _ in items])
            parts = [span_rows(len(inp), sp, int(s0))
                     for (_, inp, sp, _), s0 in zip(items, starts[:-1], strict=True)]
            row, lo, hi = (np.concatenate([p[c] for p in parts]) for c in range(3))
            c0 = time.process_time()
            out, origin, units = hosts[h].extend_rows(members, prober, j, row, (lo, hi))
            acc.cpu[h] += time.process_time() - c0
            acc.units[h] += units
            xs = owner[origin]
            for x in np.unique(xs).tolist():
                new[x][h] = out[xs == x]
        cur = new
    return np.concatenate([empty, *(v for c in cur for v in c.values())])


def run_ctr(wl: Workload, groups: int, trigger_ms: int, segment_ms: int, *,
            selectivity: float, speeds: Sequence[float] | None = None,
            weights: Sequence[float] = (1.0, 0.0, 0.0),
            load_horizon_ms: int | None = None) -> Trace:
    """Route and join the workload with CTR on ``groups`` hosts; the set cover and the
    annotations weigh hosts by their cost units over the last ``load_horizon_ms`` of
    stream time (default ``LOAD_HORIZON_TRIGGERS`` triggers) plus the estimated cost of
    the hop joins given to them and not yet run."""
    plan = batches(wl, trigger_ms)
    shape = (groups, len(plan))
    cpu, cost, received, state, paper, pairs = (np.zeros(shape) for _ in range(6))
    loads = KeyLoads(groups, weights, speeds,
                     recent_ms=load_horizon_ms or LOAD_HORIZON_TRIGGERS * trigger_ms)
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
        probes = np.asarray([host.probes for host in hosts], np.float64)
        for k, host in enumerate(hosts):
            mine = gids[rows[keys == k]]
            c0 = time.process_time()
            host.add(mine)
            acc.cpu[k] += time.process_time() - c0
            received[k, b] = len(mine)
        seg = wl.ts[gids] // segment_ms
        segments = []
        for i, e in sorted({(int(a), int(c)) for a, c in zip(wl.stream[gids], seg,
                                                                 strict=True)}):
            probers = gids[(wl.stream[gids] == i) & (seg == e)]
            acc.units[router.paths[(i, e)].hops[0].hosts] += len(probers)
            segments.append((router.paths[(i, e)], probers, i))
        found.append(_walk(wl, hosts, segments, segment_ms, acc))
        for k, host in enumerate(hosts):
            host.expire(until)
            state[k, b] = host.state()
        cpu[:, b], cost[:, b] = acc.cpu, acc.units
        paper[:, b] = paper_units(received[:, b] + acc.recv, np.asarray(
            [host.probes for host in hosts], np.float64) - probes)
        got = received[:, b] + acc.recv  # units: + 1 per tuple stored, partial received
        pairs[:, b] = pair_units(got, acc.units - got)
        shipped += acc.shipped
        loads.observe(cost.sum(axis=1), state[:, b], received.sum(axis=1), until)
    trace = Trace(groups, wl.n, cpu, cost, received, state, route_cpu, np.concatenate(found),
                  shipped=float(shipped), paper=paper, pairs=pairs)
    trace.extra["routing_table_bytes"] = table_bytes
    return trace
