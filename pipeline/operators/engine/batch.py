"""The engine's batch path (ours): :meth:`Engine.process_many` without a Python step per
tuple where the plug-ins allow it.

The arrivals are cut at every adaptation boundary (L for the K policy, Δ for the
shedder), where :meth:`Engine._advance` adapts exactly as tuple by tuple. Inside a
segment K is constant, so K-slack and the Synchronizer run vectorized
(:mod:`~pipeline.operators.disorder.run_front`), the K policy sees the arrivals at once
(``observe_arrivals``) and the released run goes through the join at once
(:func:`join_run`: ``process_batch``, Ji et al. Alg. 2 over the run) with the same
plans, results, costs, feedback and statistics as :meth:`Engine._join_one` per tuple.

Plug-ins opt in (hooks.py): a K policy whose K changes only in ``maybe_adapt`` sets
``batch_front = True``; a shedder that can admit a whole run (no queue that depends on
the previous tuple's cost) implements ``admit_run``/``charge_run``; a shedder that drops
some tuples of a run (random drops, a queue bounded in wall-clock waiting time)
implements ``admit_some(streams, nows)`` → the mask of admitted tuples (None: tuple by
tuple) and ``charge_some(costs, nows)`` for the admitted ones: the dropped tuples leave
the run before the join, exactly as a False ``admit`` leaves it tuple by tuple.
Otherwise, and for non-dense predicates or a join subclass (the memory-bounded one), the
same steps run tuple by tuple.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.disorder.kslack import Tagged
from pipeline.operators.disorder.run_front import Released, kslack_run, sync_run
from pipeline.operators.events import Event
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import DensePredicate
from pipeline.operators.join.run import DISCARDED, LATE, PROBED, classify, encode_dense

if TYPE_CHECKING:
    from pipeline.operators.engine.engine import Engine

I64 = NDArray[np.int64]
#: tuples per join run at most (bounds the run × run visibility matrices)
MAX_RUN = 2048


def front_batchable(eng: Engine) -> bool:
    """Whether K-slack/Synchronizer may run vectorized: K changes only at boundaries."""
    return bool(getattr(eng.slack, "batch_front", False))


def join_batchable(eng: Engine) -> bool:
    """Whether released runs may be joined at once."""
    return (type(eng.join) is MWayJoin and isinstance(eng.config.predicate, DensePredicate)
            and (hasattr(eng.shedder, "admit_run") or hasattr(eng.shedder, "admit_some")))


def run_events(eng: Engine, events: Sequence[Event]) -> None:
    """Every event of ``events`` as :meth:`Engine._process_one` would, segment by segment.

    The cyclic garbage collector is paused meanwhile: the batch path allocates plain
    tuples (buffer entries, results) by the thousand, and each collection would scan the
    caller's whole heap — the input events included — for cycles none of them can form."""
    n = len(events)
    if n == 0:
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        _run_events(eng, events, n)
    finally:
        if enabled:
            gc.enable()


def _run_events(eng: Engine, events: Sequence[Event], n: int) -> None:
    arrivals = np.fromiter((e.arrival for e in events), np.int64, n)
    streams = np.fromiter((e.stream for e in events), np.int64, n)
    ts = np.fromiter((e.ts for e in events), np.int64, n)
    seqs = np.fromiter((e.seq for e in events), np.int64, n)
    reach = np.maximum.accumulate(arrivals)
    i = 0
    while i < n:
        eng._advance(int(arrivals[i]))
        assert eng.next_interval is not None and eng.next_adapt is not None
        bound = min(eng.next_interval, eng.next_adapt)
        j = i + 1 + int(reach[i + 1 :].searchsorted(bound, "left"))
        j = min(j, n)
        clock0 = eng.clock
        seg_clock = np.maximum(reach[i:j], clock0)
        eng.clock = int(seg_clock[-1])
        k = eng.slack.current_k()
        delays, released, at = kslack_run(eng.kslacks, events[i:j], streams[i:j], ts[i:j],
                                          seqs[i:j], k)
        observe = getattr(eng.slack, "observe_arrivals", None)
        if observe is not None:
            observe(streams[i:j], ts[i:j], delays)
        else:
            for s, t, d in zip(streams[i:j].tolist(), ts[i:j].tolist(), delays.tolist(),
                               strict=True):
                eng.slack.observe_arrival(s, t, d)
        eng.stats.inputs += j - i
        if len(released):
            joined, step = sync_run(eng.sync, released)
            join_run(eng, joined, seg_clock[at[step]])
        i = j


def join_run(eng: Engine, items: Released | Sequence[Tagged], nows: I64 | int) -> None:
    """The join step of every released (event, delay) item, in order; ``nows`` is the
    engine clock each was released at."""
    n = len(items)
    if n == 0:
        return
    rel = items if isinstance(items, Released) else Released.of(items)
    now_arr = np.broadcast_to(np.asarray(nows, np.int64), (n,))
    if not join_batchable(eng):
        _one_by_one(eng, rel.items, now_arr)
        return
    for a in range(0, n, MAX_RUN):
        _join_batch(eng, rel.slice(a, a + MAX_RUN), now_arr[a : a + MAX_RUN])


def _one_by_one(eng: Engine, items: Sequence[Tagged], nows: I64) -> None:
    """:meth:`Engine._join_one` per item, at the clock it was released at."""
    last = eng.clock
    for (ev, delay), now in zip(items, nows.tolist(), strict=True):
        eng.clock = now
        eng._join_one(ev, delay)
    eng.clock = last


def _join_batch(eng: Engine, rel: Released, nows: I64) -> None:
    """One run through the join: admission, plans, Alg. 2, statistics, cost."""
    now = int(nows[-1])
    admit_some = getattr(eng.shedder, "admit_some", None)
    if admit_some is not None:
        kept = admit_some(rel.stream, nows)
        if kept is None:
            _one_by_one(eng, rel.items, nows)  # admission depends on each cost before
            return
        if not kept.all():  # dropped before the join: not inserted, not charged
            eng.stats.dropped += int(kept.shape[0] - np.count_nonzero(kept))
            at = np.flatnonzero(kept)
            if at.shape[0] == 0:
                return
            rel, nows = rel.take(at), nows[at]
    elif not eng.shedder.admit_run(rel.stream, now):  # type: ignore[attr-defined]
        _one_by_one(eng, rel.items, nows)  # admission depends on each cost before
        return
    n = len(rel)
    streams, ts, seqs, delays = rel.stream, rel.ts, rel.seq, rel.delay
    feats = encode_dense(eng.config.predicate, rel.items, items=True)
    join = eng.join
    outcome, _ = classify(join.join_time, eng.config.windows, streams, ts)
    plans: list[ProbePlan | None] = [None] * n
    if not getattr(eng.shedder, "never_plans", False):
        probing = np.flatnonzero(outcome == PROBED)
        plan_run = getattr(eng.shedder, "plan_run", None)
        got = plan_run(streams[probing]) if plan_run is not None else None
        if got is None:
            plan = eng.shedder.plan
            got = [plan(s) for s in streams[probing].tolist()]
        for i, p in zip(probing.tolist(), got, strict=True):
            plans[i] = p
    needs_cross = bool(eng.slack.needs_cross)
    out = join.process_batch(streams, ts, seqs, feats, plans, want_cross=needs_cross)
    probed = out.outcome == PROBED
    cross = out.cross if out.cross is not None else np.zeros(n, np.int64)
    observe = getattr(eng.slack, "observe_joins", None)
    if observe is not None:
        observe(streams, ts, delays, np.where(probed, out.count, 0),
                np.where(probed, cross, 0), ~probed)
    else:
        for i in range(n):
            p = bool(probed[i])
            eng.slack.observe_join(int(streams[i]), int(ts[i]), int(delays[i]),
                                   int(out.count[i]) if p else 0,
                                   int(cross[i]) if p else 0, not p)
    for _, fb in out.feedback:
        eng.shedder.observe_probe(fb)
    cfg = eng.config
    costs = out.cost.astype(np.float64) + cfg.tuple_cost + np.where(
        out.cost > 0, cfg.probe_cost, 0.0)
    if admit_some is not None:
        eng.shedder.charge_some(costs, nows)  # type: ignore[attr-defined]
    else:
        eng.shedder.charge_run(costs, now)  # type: ignore[attr-defined]
    stats = eng.stats
    stats.late += int(np.count_nonzero(out.outcome == LATE))
    stats.discarded += int(np.count_nonzero(out.outcome == DISCARDED))
    stats.comparisons += int(out.cost.sum())
    stats.checks += out.checks
    eng.pairs_evaluated += out.evaluated
    stats.cost = float(np.cumsum(np.concatenate(([stats.cost], costs)))[-1])  # in order
    stats.results += int(out.count.sum())
    if out.seqs.shape[0]:
        eng._pending.append((out.seqs, out.tss))
