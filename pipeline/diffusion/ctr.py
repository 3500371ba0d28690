"""Coordinated tuple routing, CTR (Gu et al., "Adaptive Load Diffusion for Multiway Windowed
Stream Joins", §3–4, Fig. 6; ARCHITECTURE §6).

Every stream is cut into segments (slots) of T. The routing table holds loc(S_i[slot]),
the hosts storing each segment. A segment's route is computed once, before its slot
begins (all streams of a slot are placed together, in stream order, as soon as the stream
reaches the slot's start − W_max — so no tuple waits), as a path V_1 → … → V_{n−1} over a
join order S_{i1} → … → S_{i(n−1)}:

* hop k must cover the segments of S_{ik}'s window [slot·T − W_{ik}, (slot + 1)·T);
  those already covered by V_{k−1} stay there (no shipping), the rest by the greedy
  weighted set cover of Chvátal (pick the host minimizing w / |newly covered|, w = the
  host's Eq. 1 load); with nothing to cover (warm-up, footnote 6) hop 1 takes the least
  loaded key, and it joins hop 1 too (one more copy) whenever its load is below
  ``spread`` × the lightest cover host's — ours: without it the cover keeps every
  segment on the hosts that hold the earlier ones, and G − 1 hosts never get any;
* the path with the smallest Eq. 3 overhead, r_i·T·(|V_1| − 1 + Σ_k Π σ·r·W · |V'_k|),
  over the candidate join orders (every order for n ≤ 4, else n − 1 rotations of the
  shortest-window-first order: footnote 7's "limited number of good orders");
* annotations: each covered segment is joined by exactly one host of its hop, the least
  loaded of the hop's hosts that hold it (§3 step 3), so no partial result is formed
  twice; the others skip it;
* the segment itself is stored on V_1: loc(S_i[slot]) = V_1;
* the chosen path's expected work (:meth:`CTRRouter.estimate`: tuples stored, partial
  results received, candidates scanned per assigned slot, rows thinning as in Eq. 3) is
  charged to its hosts' loads at once, so the next segment's cover sees it; the loads
  themselves are whatever :class:`KeyLoads` measures (the virtual cluster: cost units of
  the last few triggers, a utilization as Eq. 1's φ = U/C is).

Segments of the *same* slot placed later in stream order are not in the table when an
earlier one's path is made; once placed, each gets a host of every earlier path's hop
over its stream (the least loaded of the hop's hosts, or a host of its own added to the
hop), and that host joins it. This is ours: the paper routes tuple by tuple and does not
say how concurrent segments meet.

Plain Python: the virtual cluster (``bench/diffusion``) executes the paths; the Spark job
refuses ``routing = "ctr"`` (docs/NOTES.md).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError
from pipeline.diffusion.load import KeyLoads

IntArray = npt.NDArray[np.int64]
Seg = tuple[int, int]  # (stream, slot)
#: candidate join orders beyond which footnote 7's limited set is used
ALL_ORDERS_MAX_N = 4


@dataclass
class Hop:
    """One hop: the stream it joins, its hosts, and which host joins each slot."""

    stream: int
    hosts: list[int]
    assign: dict[int, int] = field(default_factory=dict)


@dataclass
class Path:
    """The route of one segment: its hops in join order."""

    hops: list[Hop]


def greedy_cover(segments: Sequence[int], holders: dict[int, Sequence[int]],
                 load: npt.NDArray[np.float64]) -> dict[int, int]:
    """Chvátal's greedy weighted set cover (Gu et al. §4.1): slot → the host chosen to
    cover it; host weight = its load (a small floor keeps idle hosts comparable)."""
    left = set(segments)
    chosen: dict[int, int] = {}
    floor = 0.05 * float(load.mean()) + 1e-9
    while left:
        best: tuple[float, int] | None = None
        for h in sorted({h for s in left for h in holders[s]}):
            covers = sum(1 for s in left if h in holders[s])
            score = (float(load[h]) + floor) / covers
            if best is None or score < best[0]:
                best = (score, h)
        assert best is not None
        for s in [s for s in left if best[1] in holders[s]]:
            chosen[s] = best[1]
            left.discard(s)
    return chosen


class CTRRouter:
    """The routing table, the paths, and the placement of slots ahead of the stream."""

    def __init__(self, groups: int, windows: Sequence[int], segment_ms: int,
                 loads: KeyLoads, selectivity: float = 0.1, spread: float = 0.5) -> None:
        if segment_ms <= 0:
            raise ConfigError(f"job.segment_ms: must be > 0, got {segment_ms}")
        self.groups, self.windows, self.T = groups, tuple(int(w) for w in windows), segment_ms
        self.loads, self.sigma, self.spread = loads, selectivity, spread
        self.table: dict[Seg, list[int]] = {}
        self.paths: dict[Seg, Path] = {}
        self.next_slot: int | None = None
        self.rates = [1.0] * len(self.windows)

    @property
    def m(self) -> int:
        return len(self.windows)

    def _window_slots(self, j: int, slot: int) -> list[int]:
        first = (slot * self.T - self.windows[j]) // self.T
        return [e for e in range(first, slot + 1) if (j, e) in self.table]

    def _orders(self, i: int) -> list[tuple[int, ...]]:
        others = [j for j in range(self.m) if j != i]
        if self.m <= ALL_ORDERS_MAX_N:
            return list(itertools.permutations(others))
        base = sorted(others, key=lambda j: (self.windows[j] * self.rates[j], j))
        return [tuple(base[k:] + base[:k]) for k in range(len(base))]

    def _hop(self, j: int, slot: int, prev: list[int], w: npt.NDArray[np.float64]
             ) -> tuple[list[int], dict[int, int]]:
        """Hop over stream ``j`` (§4.1): the slots ``prev`` holds stay there, the rest by
        the greedy cover; then each slot is joined by the least loaded of the hop's hosts
        that hold it (§3 step 3's annotation)."""
        slots = self._window_slots(j, slot)
        assign = {e: h for e in slots for h in self.table[(j, e)] if h in prev}
        rest = [e for e in slots if e not in assign]
        assign |= greedy_cover(rest, {e: self.table[(j, e)] for e in rest}, w)
        hosts = sorted(set(assign.values()))
        for e in slots:
            assign[e] = min((h for h in hosts if h in self.table[(j, e)]),
                            key=lambda h: (w[h], h))
        return sorted(set(assign.values())), assign

    def _path(self, i: int, slot: int, order: tuple[int, ...], w: npt.NDArray[np.float64]
              ) -> tuple[Path, float]:
        hops: list[Hop] = []
        prev: list[int] = []
        overhead, carried = 0.0, 1.0
        for k, j in enumerate(order):
            hosts, assign = self._hop(j, slot, prev, w)
            idle = int(np.argmin(w))
            if k == 0 and (not hosts or (idle not in hosts and w[idle] < self.spread * min(
                    w[h] for h in hosts))):  # warm-up and spreading: by load alone
                hosts = sorted({*hosts, idle})
            if k == 0:
                overhead += len(hosts) - 1
            else:
                overhead += carried * len(set(hosts) - set(prev))
            carried *= self.sigma * self.rates[j] * self.windows[j]
            hops.append(Hop(j, hosts, assign))
            prev = hosts
        return Path(hops), self.rates[i] * self.T * overhead

    def estimate(self, i: int, path: Path) -> dict[int, float]:
        """Expected cost units per host of joining one segment of stream ``i`` along
        ``path`` (the bench's cost unit: a tuple stored or a partial result received,
        one each; a candidate scanned, one each): r_i·T probers on every V_1 host, then
        per hop each assigned slot scanned by the rows that reach it (r_j·T candidates
        per row), the rows thinning by σ·r_j·W_j per hop as in Eq. 3."""
        rows = self.rates[i] * self.T
        est = dict.fromkeys(path.hops[0].hosts, rows)
        prev = path.hops[0].hosts
        for hop in path.hops:
            per_slot = rows * self.rates[hop.stream] * self.T
            for h in hop.hosts:
                est[h] = est.get(h, 0.0) + (rows if h not in prev else 0.0)
            for h in hop.assign.values():
                est[h] = est.get(h, 0.0) + per_slot
            rows *= self.sigma * self.rates[hop.stream] * self.windows[hop.stream]
            prev = hop.hosts
        return est

    def _meet_earlier(self, j: int, slot: int, w: npt.NDArray[np.float64]) -> None:
        """Segment (j, slot) was just placed: every earlier path of the slot with a hop
        over j gets a host that holds it and joins it there."""
        store = self.table[(j, slot)]
        for i in range(j):
            for hop in self.paths[(i, slot)].hops:
                if hop.stream != j:
                    continue
                both = [h for h in hop.hosts if h in store]
                if not both:
                    h = min(hop.hosts or store, key=lambda x: (w[x], x))
                    if h not in store:
                        store.append(h)
                    if h not in hop.hosts:
                        hop.hosts.append(h)
                    both = [h]
                hop.assign[slot] = min(both, key=lambda x: (w[x], x))

    def place_slot(self, slot: int) -> None:
        """Route every stream's segment of ``slot`` (Fig. 6 lines 3–11)."""
        for i in range(self.m):
            w = self.loads.values()
            path, _ = min((self._path(i, slot, o, w) for o in self._orders(i)),
                          key=lambda p: p[1])
            self.paths[(i, slot)] = path
            self.table[(i, slot)] = list(path.hops[0].hosts)
            for h, units in self.estimate(i, path).items():
                self.loads.charge(h, (slot + 1) * self.T, units)
            self._meet_earlier(i, slot, w)

    def prune(self, slot: int) -> None:
        """Forget segments no window starting at ``slot`` or later reaches."""
        keep = slot - (max(self.windows) // self.T) - 2
        for seg in [s for s in self.table if s[1] < keep]:
            del self.table[seg]
            self.paths.pop(seg, None)

    def ensure(self, first_ts: int, until_ts: int) -> None:
        """Place every slot starting at or before ``until_ts`` (the first: ``first_ts``'s)
        and forget what no tuple from ``first_ts`` on needs."""
        last = until_ts // self.T
        if self.next_slot is None:
            self.next_slot = first_ts // self.T
        while self.next_slot <= last:
            self.place_slot(self.next_slot)
            self.next_slot += 1
        self.prune(first_ts // self.T)

    def route(self, streams: IntArray, ts: IntArray) -> tuple[IntArray, IntArray]:
        """``(row, host)`` copies of a batch: each tuple to the hosts storing its segment
        (slots are placed W_max ahead of the batch's last timestamp)."""
        self.ensure(int(ts.min()), int(ts.max()) + max(self.windows))
        span = max(int(ts.max()) - int(ts.min()), 1)
        counts = np.bincount(streams, minlength=self.m)
        self.rates = [float(c) / span for c in counts]  # tuples per ms, Eq. 3's r
        slots = ts // self.T
        rows: list[IntArray] = []
        hosts: list[IntArray] = []
        for (s, e) in {(int(a), int(b)) for a, b in zip(streams, slots, strict=True)}:
            sel = np.flatnonzero((streams == s) & (slots == e))
            for h in sorted(self.table[(s, e)]):
                rows.append(sel.astype(np.int64))
                hosts.append(np.full(len(sel), h, np.int64))
        row_arr, host_arr = np.concatenate(rows), np.concatenate(hosts)
        order = np.lexsort((host_arr, row_arr))
        return row_arr[order], host_arr[order]

    def table_bytes(self) -> int:
        """Size of the live routing table as JSON (what a diffusion operator keeps)."""
        return len(json.dumps({f"{s}:{e}": v for (s, e), v in self.table.items()}))
