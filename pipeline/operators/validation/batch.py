"""The validator's batch path (ours): the clock rules of
:class:`~pipeline.operators.validation.validator.InputValidator` over a whole batch with
array operations, with the same verdicts and the same state as tuple by tuple.

Tuple by tuple, every tuple's verdict reads the clocks
(:mod:`~pipeline.operators.validation.clock`) — each stream's and the common one, the
lower median of the last ``clock_size`` accepted arrivals, recomputed lazily once
:data:`~pipeline.operators.validation.clock.REFRESH` arrivals made it stale — and an
accepted tuple then feeds them. Valid
input is accepted whole, so the batch path *assumes* every tuple of a run is accepted,
computes the clock each verdict would read under that assumption (the refresh points
follow from the counts alone: a clock refreshes at the first verdict after it went stale,
and every verdict reads every clock), and judges all of the run at once. Up to the first
tuple whose verdict is not "accept" — far-future, late, or a (stream, seq) seen before in
the batch or held by the engine — the assumption held, so those verdicts and the state
after them are exactly the per-tuple path's; that tuple is judged by the per-tuple code
and the next run starts after it. Hostile input costs one array pass per bad tuple (runs
are cut at :data:`RUN` tuples); valid input one pass per run.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from pipeline.operators.events import Event
from pipeline.operators.validation.clock import REFRESH, StreamTime, lower_median

if TYPE_CHECKING:
    from pipeline.operators.validation.config import Admission, Held, ValidatorConfig

I64 = NDArray[np.int64]
B1 = NDArray[np.bool_]
#: tuples judged per array pass at most (bounds the cost of a bad tuple's restart)
RUN = 8192
#: batches shorter than this are judged tuple by tuple
MIN_BATCH = 16
_NONE = np.iinfo(np.int64).min  # "no clock" in the clock arrays


def clock_trace(ring: Sequence[int], stale: int, cached: int | None, new: I64,
                counts: I64, size: int, quorum: int, refresh: int
                ) -> tuple[I64, int | None, int]:
    """The value one lazily refreshed median clock shows at each verdict of a run.

    ``ring``/``stale``/``cached``: the clock's state before the run; ``new``: the
    arrivals it takes during the run, in order; ``counts[j]``: how many of them were taken
    before verdict j (non-decreasing, steps of at most 1). Returns the clock at each
    verdict (:data:`_NONE` below the quorum) and the cached value and staleness after the
    run's last verdict *and* the arrivals taken after it (``counts[-1]`` … ``len(new)``).
    """
    r0 = len(ring)
    seq = np.concatenate((np.asarray(ring, dtype=np.int64), new))
    c_max = int(counts[-1]) if counts.shape[0] else 0
    # the counts at which a verdict refreshes the cached value: the first one that sees
    # the quorum and a stale (or no) value, then every ``refresh`` arrivals; counts
    # run through every value of [0, c_max], so each such count has a verdict
    first = (max(0, quorum - r0) if cached is None
             else max(0, refresh - stale, quorum - r0))
    points = np.arange(first, c_max + 1, refresh, dtype=np.int64)
    values = np.empty(points.shape[0], dtype=np.int64)
    if points.shape[0]:
        ends = r0 + points  # ring = seq[max(0, end - size) : end]
        full = ends >= size
        if full.any():
            win = sliding_window_view(seq, size)[ends[full] - size]
            k = (size - 1) // 2
            values[full] = np.partition(win, k, axis=1)[:, k]
        for i in np.flatnonzero(~full).tolist():
            e = int(ends[i])
            values[i] = lower_median(seq[max(0, e - size):e].tolist())
    # the value seen at each verdict: the last refresh at or below its count
    at = np.searchsorted(points, counts, side="right") - 1
    base = _NONE if cached is None else int(cached)
    shown = np.where(at >= 0, values[np.maximum(at, 0)] if values.shape[0] else base, base)
    shown = np.where(r0 + counts >= quorum, shown, _NONE)
    total = int(new.shape[0])
    if points.shape[0]:
        return shown.astype(np.int64), int(values[-1]), total - int(points[-1])
    return shown.astype(np.int64), cached, stale + total


def judge_batch(time: StreamTime, pending: list[deque[int]], config: ValidatorConfig,
                items: Sequence[tuple[Event, Any]], held: Held, out: Admission,
                slow: Callable[[int, dict[tuple[int, int], Any]], None]) -> None:
    """The validator's judging (not the bootstrap) of ``items`` against the clocks
    ``time``, which it advances; ``pending``: each stream's run of future rejections
    (cleared by an accepted tuple of the stream). ``slow(j, batch)`` judges item ``j``
    tuple by tuple against ``batch`` (this call's accepted tuples that a later item may
    repeat)."""
    n = len(items)
    st = np.fromiter((ev.stream for ev, _ in items), np.int64, n)
    seq = np.fromiter((ev.seq for ev, _ in items), np.int64, n)
    arr = np.fromiter((ev.arrival for ev, _ in items), np.int64, n)
    ts = np.fromiter((ev.ts for ev, _ in items), np.int64, n)
    special = np.zeros(n, dtype=bool)
    repeated: set[tuple[int, int]] = set()
    order = np.lexsort((seq, st))  # stable: equal keys keep their batch order
    same = (st[order][1:] == st[order][:-1]) & (seq[order][1:] == seq[order][:-1])
    if same.any():
        later = order[1:][same]
        special[later] = True
        repeated = {(int(st[j]), int(seq[j])) for j in later.tolist()}
    if held:
        for j in range(n):
            if (int(st[j]), int(seq[j])) in held:
                special[j] = True
    batch: dict[tuple[int, int], Any] = {}
    p = 0
    while p < n:
        e = min(n, p + RUN)
        f = _fast_run(time, pending, config, (st, arr, ts), special, p, e)
        out.accepted.extend(items[p:f])
        if repeated:
            for j in range(p, f):
                ev = items[j][0]
                if (ev.stream, ev.seq) in repeated:
                    batch[(ev.stream, ev.seq)] = (ev.ts, ev.attrs)
        if f < e:
            slow(f, batch)
            p = f + 1
        else:
            p = e


def _fast_run(time: StreamTime, pending: list[deque[int]], cfg: ValidatorConfig,
              cols: tuple[I64, I64, I64], special: B1, p: int, e: int) -> int:
    """Judge items [p, e) (``cols``: their streams, arrivals, event times) assuming all
    are accepted; commit the state of the accepted prefix and return where it ends (the
    first item that is not accepted, or e)."""
    st, arr, ts = cols
    size, quorum = cfg.clock_size, time.quorum
    m = len(time.streams)
    s_run, a_run, t_run = st[p:e], arr[p:e], ts[p:e]
    k = e - p
    clocks: list[I64] = []
    per_stream: list[tuple[I64, I64, int | None, int]] = []
    for s in range(m):
        mine = s_run == s
        taken = np.concatenate(([0], np.cumsum(mine)[:-1])).astype(np.int64)
        clock = time.streams[s]
        shown, cached, stale = clock_trace(clock.ring, clock.stale, clock.cached,
                                           a_run[mine], taken, size, quorum, REFRESH)
        clocks.append(shown)
        per_stream.append((mine, taken, cached, stale))
    common, _, _ = clock_trace(time.common.ring, time.common.stale, time.common.cached,
                               a_run, np.arange(k, dtype=np.int64), size, quorum, REFRESH)
    stacked = np.stack([*clocks, common])
    known = stacked != _NONE
    any_known = known.any(axis=0)
    ref = np.where(known, stacked, _NONE).max(axis=0)
    if time.reference is not None:
        ref = np.where(any_known, np.maximum(ref, time.reference), ref)
    limit = ref + cfg.max_future_ms
    future = any_known & ((a_run > limit) | (t_run > limit))
    own = stacked[s_run, np.arange(k)]
    mine_clock = np.where(own != _NONE, own, np.where(common != _NONE, common, ref))
    late = any_known & ~future & (t_run < mine_clock - cfg.max_late_ms)
    bad = future | late | special[p:e]
    hits = np.flatnonzero(bad)
    f = p + int(hits[0]) if hits.shape[0] else e
    _commit(time, pending, per_stream, a_run, p, f, size, quorum)
    return f


def _commit(time: StreamTime, pending: list[deque[int]],
            per_stream: list[tuple[I64, I64, int | None, int]],
            a_run: I64, p: int, f: int, size: int, quorum: int) -> None:
    """The clocks' state after accepting items [p, f) of the run (verdicts of p … f−1,
    then their arrivals), as tuple by tuple."""
    n_acc = f - p
    if n_acc == 0:
        return
    for s, (mine, taken, _, _) in enumerate(per_stream):
        clock = time.streams[s]
        new = a_run[:n_acc][mine[:n_acc]]
        _, cached, stale = clock_trace(clock.ring, clock.stale, clock.cached, new,
                                       taken[:n_acc], size, quorum, REFRESH)
        clock.take_run(new.tolist(), cached, stale)
        if new.shape[0]:
            pending[s].clear()
    common = time.common
    _, cached, stale = clock_trace(common.ring, common.stale, common.cached, a_run[:n_acc],
                                   np.arange(n_acc, dtype=np.int64), size, quorum, REFRESH)
    common.take_run(a_run[:n_acc].tolist(), cached, stale)
