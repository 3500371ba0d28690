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

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.events import Event
from pipeline.operators.kslack import NEG_INF, KSlack, Tagged
from pipeline.operators.synchronizer import Synchronizer

I64 = NDArray[np.int64]


def kslack_run(kslacks: Sequence[KSlack], events: Sequence[Event], streams: I64, ts: I64,
               k: int) -> tuple[I64, list[Tagged], I64]:
    """Push ``events`` (arrival order) into their K-slack buffers under K = ``k``.

    Returns each event's raw delay (^iT − ts after its own arrival), the released
    (event, delay) items in release order, and for each released item the index of the
    arrival that released it."""
    n = ts.shape[0]
    delays = np.zeros(n, np.int64)
    rel_at: list[I64] = []
    rel_ts: list[I64] = []
    rel_cnt: list[I64] = []
    rel_items: list[list[Tagged]] = []
    for s, ks in enumerate(kslacks):
        idx = np.flatnonzero(streams == s)
        old = ks._heap
        if idx.shape[0] == 0:
            continue
        mine = ts[idx]
        local = np.maximum.accumulate(np.maximum(mine, ks.local_time))
        d = local - mine
        delays[idx] = d
        counter = ks._counter + np.arange(idx.shape[0], dtype=np.int64)
        items: list[Tagged] = [(h[2], h[3]) for h in old]
        items += [(events[i], dd) for i, dd in zip(idx.tolist(), d.tolist(), strict=True)]
        all_ts = np.concatenate([np.array([h[0] for h in old], np.int64), mine])
        all_cnt = np.concatenate([np.array([h[1] for h in old], np.int64), counter])
        own = np.concatenate([np.zeros(len(old), np.int64), np.arange(idx.shape[0])])
        at = np.maximum(local.searchsorted(all_ts + k, "left"), own)
        done = at < idx.shape[0]
        keep = np.flatnonzero(~done)
        kept = sorted(zip(all_ts[keep].tolist(), all_cnt[keep].tolist(), keep.tolist(),
                          strict=True))
        ks._heap = [(t, c, items[j][0], items[j][1]) for t, c, j in kept]
        ks.local_time = int(local[-1])
        ks._counter += int(idx.shape[0])
        go = np.flatnonzero(done)
        rel_at.append(idx[at[go]])
        rel_ts.append(all_ts[go])
        rel_cnt.append(all_cnt[go])
        rel_items.append([items[j] for j in go.tolist()])
    if not rel_at:
        return delays, [], np.zeros(0, np.int64)
    at_all = np.concatenate(rel_at)
    order = np.lexsort((np.concatenate(rel_cnt), np.concatenate(rel_ts), at_all))
    flat = [it for part in rel_items for it in part]
    return delays, [flat[j] for j in order.tolist()], at_all[order]


def sync_run(sync: Synchronizer, items: Sequence[Tagged]) -> tuple[list[Tagged], I64]:
    """Alg. 1 for ``items`` in order: the released items in release order, and for each
    the index of the item whose push released it."""
    n = len(items)
    if n == 0:
        return [], np.zeros(0, np.int64)
    streams = np.fromiter((it[0].stream for it in items), np.int64, n)
    ts = np.fromiter((it[0].ts for it in items), np.int64, n)
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
    o_ts = np.array([h[0] for h in old], np.int64)
    o_cnt = np.array([h[1] for h in old], np.int64)
    o_step = t_sync.searchsorted(o_ts, "left")
    all_step = np.concatenate([o_step, step])
    all_ts = np.concatenate([o_ts, ts])
    all_cnt = np.concatenate([o_cnt, counter])
    pool: list[Tagged] = [h[3] for h in old] + list(items)
    out = np.flatnonzero(all_step < n)
    order = out[np.lexsort((all_cnt[out], all_ts[out], all_step[out]))]
    left = np.flatnonzero(all_step >= n)
    kept = sorted(zip(all_ts[left].tolist(), all_cnt[left].tolist(), left.tolist(),
                      strict=True))
    sync._heap = [(t, c, pool[j][0].stream, pool[j]) for t, c, j in kept]
    counts = [0] * m
    for h in sync._heap:
        counts[h[2]] += 1
    sync._counts = counts
    sync._missing = sum(1 for c in counts if c == 0)
    sync._counter += int(pushed.shape[0])
    sync.sync_time = int(t_sync[-1])
    return [pool[j] for j in order.tolist()], all_step[order]
