"""K-slack and the Synchronizer over a run of arrivals at once (ours; Ji et al. §II
Fig. 3 and Alg. 1, vectorized).

Both give exactly what pushing the tuples one by one gives — the same released tuples in
the same order, the same buffers afterwards — as long as K does not change inside the
run (the engine cuts runs at adaptation boundaries).

* **K-slack** (:func:`kslack_run`): per stream the local time ^iT after each arrival is
  a running maximum, so a buffered tuple is released at the first arrival of its stream
  with ^iT ≥ ts + K (one binary search) — not before its own arrival. One push releases
  its tuples in (ts, push counter) order.
* **Synchronizer** (:func:`sync_run`): Alg. 1's T_sync after item k is
  max(T_sync before, min_s R_s(k)), R_s(k) = the largest ts of stream s seen so far
  (buffered items included): the loop pops the buffer in ts order until some stream is
  empty, i.e. up to the smallest per-stream maximum. An item with ts ≤ T_sync passes
  straight through; a buffered one leaves at the first step whose T_sync reaches its ts,
  with that step's other releases in (ts, counter) order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.disorder.kslack import BufferColumns, KSlack, Tagged
from pipeline.operators.disorder.synchronizer import Synchronizer
from pipeline.operators.events import NEG_INF, Event

I64 = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Released:
    """(event, raw delay) items in order, with their stream, ts, seq and delay as arrays
    (so the join needs no second pass over the events)."""

    items: list[Tagged]
    stream: I64
    ts: I64
    seq: I64
    delay: I64

    @classmethod
    def of(cls, items: Sequence[Tagged]) -> Released:
        """From items alone (one pass over their events)."""
        n = len(items)
        return cls(list(items), np.fromiter((it[0].stream for it in items), np.int64, n),
                   np.fromiter((it[0].ts for it in items), np.int64, n),
                   np.fromiter((it[0].seq for it in items), np.int64, n),
                   np.fromiter((it[1] for it in items), np.int64, n))

    def __len__(self) -> int:
        return len(self.items)

    def take(self, order: I64) -> Released:
        """The items at positions ``order``, in that order."""
        return Released([self.items[j] for j in order.tolist()], self.stream[order],
                        self.ts[order], self.seq[order], self.delay[order])

    def slice(self, a: int, b: int) -> Released:
        return Released(self.items[a:b], self.stream[a:b], self.ts[a:b], self.seq[a:b],
                        self.delay[a:b])


def _cat(parts: Sequence[Released]) -> Released:
    return Released([it for p in parts for it in p.items],
                    np.concatenate([p.stream for p in parts]),
                    np.concatenate([p.ts for p in parts]),
                    np.concatenate([p.seq for p in parts]),
                    np.concatenate([p.delay for p in parts]))


def kslack_run(kslacks: Sequence[KSlack], events: Sequence[Event], streams: I64, ts: I64,
               seqs: I64, k: int) -> tuple[I64, Released, I64]:
    """Push ``events`` (arrival order) into their K-slack buffers under K = ``k``.

    Returns each event's raw delay (^iT − ts after its own arrival), the released
    (event, delay) items in release order, and for each released item the index of the
    arrival that released it."""
    n = ts.shape[0]
    delays = np.zeros(n, np.int64)
    rel_at: list[I64] = []
    rel_cnt: list[I64] = []
    parts: list[Released] = []
    for s, ks in enumerate(kslacks):
        idx = np.flatnonzero(streams == s)
        if idx.shape[0] == 0:
            continue
        held = ks.columns()
        mine = ts[idx]
        local = np.maximum.accumulate(np.maximum(mine, ks.local_time))
        d = local - mine
        delays[idx] = d
        new_events = np.empty(idx.shape[0], object)
        new_events[:] = [events[i] for i in idx.tolist()]
        pool_events = np.concatenate([held.events, new_events])
        pool_ts = np.concatenate([held.ts, mine])
        pool_seq = np.concatenate([held.seq, seqs[idx]])
        pool_delay = np.concatenate([held.delay, d])
        all_cnt = np.concatenate([held.counter,
                                  ks._counter + np.arange(idx.shape[0], dtype=np.int64)])
        own = np.concatenate([np.zeros(held.ts.shape[0], np.int64), np.arange(idx.shape[0])])
        at = np.maximum(local.searchsorted(pool_ts + k, "left"), own)
        done = at < idx.shape[0]
        keep = np.flatnonzero(~done)
        keep = keep[np.lexsort((all_cnt[keep], pool_ts[keep]))]
        ks.set_columns(BufferColumns(pool_ts[keep], all_cnt[keep], pool_seq[keep],
                                     pool_delay[keep], pool_events[keep]))
        ks.local_time = int(local[-1])
        ks._counter += int(idx.shape[0])
        go = np.flatnonzero(done)
        rel_at.append(idx[at[go]])
        rel_cnt.append(all_cnt[go])
        go_delay = pool_delay[go]
        parts.append(Released(list(zip(pool_events[go].tolist(), go_delay.tolist(),
                                       strict=True)),
                              np.full(go.shape[0], s, np.int64), pool_ts[go], pool_seq[go],
                              go_delay))
    if not rel_at:
        return delays, Released.of([]), np.zeros(0, np.int64)
    at_all = np.concatenate(rel_at)
    flat = _cat(parts)
    order = np.lexsort((np.concatenate(rel_cnt), flat.ts, at_all))
    return delays, flat.take(order), at_all[order]


def sync_run(sync: Synchronizer, rel: Released) -> tuple[Released, I64]:
    """Alg. 1 for the items of ``rel`` in order: the released items in release order,
    and for each the index of the item whose push released it."""
    n = len(rel)
    if n == 0:
        return rel, np.zeros(0, np.int64)
    streams, ts = rel.stream, rel.ts
    old = sync._heap
    m = sync.config.streams
    run_max = np.empty((m, n), np.int64)
    for s in range(m):
        start = max((h[0] for h in old if h[2] == s), default=NEG_INF)
        run_max[s] = np.maximum.accumulate(np.where(streams == s, ts, NEG_INF))
        np.maximum(run_max[s], start, out=run_max[s])
    t_sync = np.maximum(run_max.min(axis=0), sync.sync_time)
    before = np.concatenate(([sync.sync_time], t_sync[:-1]))
    passes = ts <= before
    pushed = np.flatnonzero(~passes)
    counter = np.full(n, -1, np.int64)
    counter[pushed] = sync._counter + np.arange(pushed.shape[0])
    step = np.arange(n, dtype=np.int64)
    step[pushed] = t_sync.searchsorted(ts[pushed], "left")
    held = Released([h[3] for h in old], np.array([h[2] for h in old], np.int64),
                    np.array([h[0] for h in old], np.int64),
                    np.array([h[3][0].seq for h in old], np.int64),
                    np.array([h[3][1] for h in old], np.int64))
    o_cnt = np.array([h[1] for h in old], np.int64)
    pool = _cat([held, rel])
    all_step = np.concatenate([t_sync.searchsorted(held.ts, "left"), step])
    all_cnt = np.concatenate([o_cnt, counter])
    out = np.flatnonzero(all_step < n)
    order = out[np.lexsort((all_cnt[out], pool.ts[out], all_step[out]))]
    left = np.flatnonzero(all_step >= n)
    kept = sorted(zip(pool.ts[left].tolist(), all_cnt[left].tolist(), left.tolist(),
                      strict=True))
    sync._heap = [(t, c, int(pool.stream[j]), pool.items[j]) for t, c, j in kept]
    counts = np.bincount(pool.stream[left], minlength=m).tolist()
    sync._counts = counts
    sync._missing = sum(1 for c in counts if c == 0)
    sync._counter += int(pushed.shape[0])
    sync.sync_time = int(t_sync[-1])
    return pool.take(order), all_step[order]
