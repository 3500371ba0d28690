"""One join host of the virtual cluster: per-stream windows of tuple numbers (gids) and the
m-way probe (MJoin order: the prober, then the other streams one hop each).

A prober x of stream i joins only tuples numbered below it (results are produced by
their last member, as the engine does): a candidate y of stream j lies in
[x.ts − W_j, x.ts]; every pair of members must meet the window condition
e_a.ts − W_b ≤ e_b.ts ≤ e_a.ts + W_a (ARCHITECTURE §4) and the predicate. The cost unit
is one candidate scanned plus one per prober (the engine's ``stats.cost`` with
``tuple_cost`` 1): deterministic, what adaptive routing balances on.

:meth:`Host.extend` is one hop over this host's window of one stream, optionally
restricted to time spans (CTR's annotations; :meth:`Host.extend_rows` gives each row
spans of its own); ATR runs every hop on one host (:meth:`Host.probe_all`), CTR ships the
partial results between hosts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bench.diffusion.workload import Workload

IntArray = npt.NDArray[np.int64]
#: half-open stream-time spans [a, b) a hop may scan (CTR: the slots a host was assigned)
Spans = list[tuple[int, int]]
EMPTY = np.zeros(0, np.int64)


def span_rows(n: int, spans: Spans, first: int = 0) -> tuple[IntArray, IntArray, IntArray]:
    """Rows ``first … first + n − 1`` paired with every span, span-major: the ``row``,
    ``a`` and ``b`` arrays :meth:`Host.extend_rows` takes (pair p scans row ``row[p]``
    within ``[a[p], b[p])``)."""
    row = np.tile(np.arange(first, first + n, dtype=np.int64), len(spans))
    a = np.repeat(np.asarray([s[0] for s in spans], np.int64), n)
    b = np.repeat(np.asarray([s[1] for s in spans], np.int64), n)
    return row, a, b


class Host:
    """The windows of one host: gids (ascending) and their timestamps, per stream."""

    def __init__(self, wl: Workload) -> None:
        self.wl = wl
        self.gids: list[IntArray] = [EMPTY] * wl.m
        self.ts: list[IntArray] = [EMPTY] * wl.m
        #: probes so far: rows joined against one of this host's windows (the paper's
        #: simulation charges each the same, however many tuples the window holds)
        self.probes = 0

    def add(self, gids: IntArray) -> None:
        """Store tuples (ascending gids, all newer than what the host holds)."""
        if len(gids) == 0:
            return
        streams = self.wl.stream[gids]
        for j in np.unique(streams).tolist():
            new = gids[streams == j]
            self.gids[j] = np.concatenate((self.gids[j], new))
            self.ts[j] = np.concatenate((self.ts[j], self.wl.ts[new]))

    def expire(self, before: int) -> None:
        """Drop what no prober at or after ``before`` can join."""
        for j in range(self.wl.m):
            cut = int(np.searchsorted(self.ts[j], before - self.wl.windows[j], "left"))
            if cut:
                self.gids[j], self.ts[j] = self.gids[j][cut:], self.ts[j][cut:]

    def state(self) -> int:
        """Tuples held."""
        return sum(len(g) for g in self.gids)

    def _match(self, members: IntArray, cand: IntArray, j: int) -> npt.NDArray[np.bool_]:
        """Window condition and predicate of each candidate against every member so far
        (rows may differ in which members they have: CTR's batched hops mix segments of
        several streams and join orders)."""
        wl = self.wl
        ok = np.ones(len(cand), dtype=bool)
        tj, vj = wl.ts[cand], (wl.value[cand] if wl.predicate == "band" else wl.key[cand])
        for c in range(wl.m):
            gc = members[:, c]
            if c == j:
                continue
            filled = gc >= 0
            if not filled.any():
                continue
            tc = wl.ts[gc]
            hit = (tc - wl.windows[j] <= tj) & (tj <= tc + wl.windows[c])
            if wl.predicate == "band":
                hit &= np.abs(wl.value[gc] - vj) <= wl.eps
            else:
                hit &= wl.key[gc] == vj
            ok &= hit if filled.all() else hit | ~filled
        return ok

    def extend(self, members: IntArray, prober: IntArray, j: int,
               spans: Spans | None = None) -> tuple[IntArray, int]:
        """One hop: the partial results ``members`` (rows × m gids, −1 = not yet) of
        ``prober`` (one gid per row) joined with this host's window of stream ``j`` —
        only its tuples in the time ``spans`` if given (CTR's annotations: a host scans
        just the segments it was assigned); returns the extended rows and the candidates
        scanned."""
        if spans is None:
            rows = np.arange(len(members), dtype=np.int64)
            out, _, scanned = self.extend_rows(members, prober, j, rows)
            return out, scanned
        row, a, b = span_rows(len(members), spans)
        out, _, scanned = self.extend_rows(members, prober, j, row, (a, b))
        return out, scanned

    def extend_rows(self, members: IntArray, prober: IntArray, j: int, row: IntArray,
                    spans: tuple[IntArray, IntArray] | None = None
                    ) -> tuple[IntArray, IntArray, int]:
        """:meth:`extend` with spans of its own per row: pair p scans row ``row[p]``'s
        window ``[x.ts − W_j, x)`` cut to ``[a[p], b[p])`` of ``spans = (a, b)`` (the
        whole window if None), so partial results of many CTR segments, each with its own
        annotation, go through one vectorized call; returns the extended rows, the input
        row each extends, and the candidates scanned."""
        if len(members) == 0:
            return members, row[:0], 0
        self.probes += len(members)
        tsj, gj = self.ts[j], self.gids[j]
        lo = np.searchsorted(tsj, self.wl.ts[prober] - self.wl.windows[j], "left")[row]
        hi = np.searchsorted(gj, prober, "left")[row]
        if spans is not None:
            lo = np.maximum(lo, np.searchsorted(tsj, spans[0], "left"))
            hi = np.minimum(hi, np.searchsorted(tsj, spans[1], "left"))
        cnt = np.maximum(hi - lo, 0)
        total = int(cnt.sum())
        if total == 0:
            return members[:0], row[:0], 0
        rows = np.repeat(row, cnt)
        offset = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        cand = gj[np.repeat(lo, cnt) + offset]
        sub = members[rows]
        ok = self._match(sub, cand, j)
        out = sub[ok]
        out[:, j] = cand[ok]
        return out, rows[ok], total

    def probe_all(self, probers: IntArray) -> tuple[IntArray, int]:
        """Every hop on this host: the complete results whose last member is a prober,
        and the cost units (candidates + one per prober)."""
        wl = self.wl
        found = [np.zeros((0, wl.m), np.int64)]
        cost = len(probers)
        streams = wl.stream[probers]
        for i in np.unique(streams).tolist():
            px = probers[streams == i]
            members = np.full((len(px), wl.m), -1, np.int64)
            members[:, i] = px
            for j in range(wl.m):
                if j == i:
                    continue
                members, c = self.extend(members, members[:, i], j)
                cost += c
                if len(members) == 0:
                    break
            if len(members):
                found.append(members)
        return np.concatenate(found), cost
