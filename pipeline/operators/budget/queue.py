"""A bounded input queue in front of the join (GrubJoin §III-B: tuples are dropped when
a finite input buffer overflows; ours on the wall clock: a queue bounded in waiting
time, :class:`~pipeline.operators.budget.wall.WallQueue`).

* :func:`queue_budget` — the queue budget a ``[shedding]`` section names (virtual:
  ``queue`` tuples; wall: ``queue_ms`` of modelled backlog);
* :func:`queue_row` — its part of a shedder's metrics row;
* :func:`queue_admit_run` / :func:`queue_charge_run` — a whole run of tuples through the
  wall queue at once (the engine's batch path, ours). :func:`queue_admit_run` plays
  :meth:`WallQueue.admit` for each tuple in order; :func:`queue_charge_run` then serves
  the admitted ones as :meth:`WallQueue.charge` would, each with an equal share of the
  run's measured seconds (one clock reading covers the run). While a run is being
  admitted its own service times are not measured yet, so each admitted tuple is
  predicted to take ``service_ms`` (the modelled time per tuple of the previous run): a
  run that would overflow the queue drops its tail, as tuple by tuple. A run the queue
  admits whole is recognised at once, from a closed form of the busy-until recurrence
  (:func:`_admits_all`); only a run that comes near the bound walks its tuples. The run's service
  times are stretched as :meth:`WallQueue.stretch_at` says at the charge. With a clock that
  does not move inside a call the decisions and the state equal the per-tuple path's
  exactly (tests/unit/operators/test_drop_batch.py). The virtual CPU's queue depends on
  each previous tuple's cost in cost units, so there the engine admits tuple by tuple
  (:meth:`~pipeline.operators.budget.protocol.Budget.queue` is None).

Used by GrubJoin and the drop baselines (``taildrop``, ``randomdrop-static``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.budget.factory import make_queue_budget
from pipeline.operators.budget.protocol import Budget
from pipeline.operators.budget.reading import BudgetReading
from pipeline.operators.budget.wall import WallQueue

if TYPE_CHECKING:
    from pipeline.operators.config import SheddingConfig
    from pipeline.operators.contract import PluginEnv

__all__ = ["queue_admit_run", "queue_budget", "queue_charge_run", "queue_row"]


def queue_budget(sh: SheddingConfig, env: PluginEnv, serve_overhead: bool = True) -> Budget:
    """The bounded-queue budget of ``sh`` (virtual: ``queue`` tuples; wall: ``queue_ms``;
    ``serve_overhead``: a batch's time outside the join fills the wall queue too)."""
    return make_queue_budget(sh.budget, sh.capacity, sh.queue, float(sh.queue_bound_ms),
                             sh.utilization, env.clock, env.speedup, sh.batch_lag,
                             serve_overhead)


def queue_row(reading: BudgetReading, budget: Budget) -> dict[str, Any]:
    """The budget's part of a metrics row."""
    row: dict[str, Any] = {
        "beta": round(min(reading.beta, 1e6), 6),
        "queue_drops": reading.dropped,
        "queue_overflows": reading.overflows,
        "pushed": reading.pushed,
        "consumed": reading.consumed,
        "cost": round(reading.cost, 3),
    }
    queue = budget.queue()
    if queue is not None:
        row["backlog_ms"] = round(queue.backlog_ms(), 3)
    return row


def queue_admit_run(q: WallQueue, nows: NDArray[np.int64], service_ms: float,
                    offered: NDArray[np.bool_] | None = None) -> NDArray[np.bool_]:
    """:meth:`WallQueue.admit` for each tuple of a run in order (those ``offered``; the
    rest never reach the queue, e.g. dropped at random), each admitted one predicted to
    keep the server busy ``service_ms`` more; returns the admitted mask. The queue's
    counters move as tuple by tuple; ``busy_until`` moves in :func:`queue_charge_run`."""
    n = nows.shape[0]
    at_nows = nows if offered is None else nows[offered]
    if _admits_all(q, at_nows, service_ms):
        count = at_nows.shape[0]
        if count:
            q.pushed += count
            q.admitted += count
            q.last_dropped = False
            q.last_now = max(q.last_now, float(at_nows.max()))
            q.started = q.clock()
        return np.ones(n, dtype=bool) if offered is None else offered.copy()
    kept = np.zeros(n, dtype=bool)
    bound = q.queue_config.bound_ms
    busy, last = q.busy_until, q.last_now
    pushed = dropped = admitted = overflows = 0
    last_dropped = q.last_dropped
    at = range(n) if offered is None else np.flatnonzero(offered).tolist()
    now_list = nows.tolist()
    for k in at:
        now = now_list[k]
        pushed += 1
        last = max(last, float(now))
        if busy - now > bound:
            dropped += 1
            if not last_dropped:
                overflows += 1
                last_dropped = True
            continue
        last_dropped = False
        admitted += 1
        kept[k] = True
        busy = max(busy, last) + service_ms
    q.pushed += pushed
    q.dropped += dropped
    q.admitted += admitted
    q.overflows += overflows
    q.last_dropped = last_dropped
    q.last_now = last
    if admitted:
        q.started = q.clock()
    return kept


def _admits_all(q: WallQueue, nows: NDArray[np.int64], service_ms: float) -> bool:
    """Whether :func:`queue_admit_run`'s loop would admit every one of ``nows`` (the
    offered tuples, in order), decided at once: with every earlier tuple admitted, the
    server is busy before tuple k until ``b_{k-1}``, where ``b_k = max(b_{k-1}, l_k) + s``
    (``l_k`` the latest arrival so far, ``s = service_ms``, ``b_{-1}`` the queue's
    ``busy_until``), i.e. ``b_k = (k + 1)·s + max(b_{-1}, max_{j≤k}(l_j − j·s))``; tuple k
    is dropped when ``b_{k-1} − now_k > bound``. No tuple comes within a rounding margin
    of the bound (float sums in another order than the loop's) — else False, and the
    loop decides."""
    n = nows.shape[0]
    if n == 0:
        return True
    s = float(service_ms)
    now = nows.astype(np.float64)
    last = np.maximum(np.maximum.accumulate(now), float(q.last_now))
    k = np.arange(n, dtype=np.float64)
    after = (k + 1.0) * s + np.maximum(float(q.busy_until),
                                        np.maximum.accumulate(last - k * s))
    before = np.concatenate(([float(q.busy_until)], after[:-1]))
    scale = max(float(np.abs(after).max()), float(np.abs(now).max()), abs(s), 1.0)
    margin = 4.0 * (n + 2) * float(np.spacing(scale))
    return bool(np.all(before - now <= float(q.queue_config.bound_ms) - margin))


def queue_charge_run(q: WallQueue, costs: NDArray[np.float64], nows: NDArray[np.int64],
                     last_before: float) -> float:
    """:meth:`WallQueue.charge` for each tuple admitted by :func:`queue_admit_run` (at
    ``nows``; ``last_before`` = the queue's ``last_now`` before that call), the run's
    measured seconds shared equally; returns the modelled ms per tuple (the next run's
    ``service_ms``). A tuple dropped between two admitted ones changes nothing here: it
    found the server busy beyond its own arrival."""
    n = costs.shape[0]
    if n == 0:
        return 0.0
    now_s = q.clock()
    took = max(0.0, now_s - q.started)
    q.spent += took
    q.timed_total += took
    q.cost = float(np.cumsum(np.concatenate(([q.cost], costs)))[-1])  # in order, as += each
    share = took / n
    q.last_took = share
    cfg = q.queue_config
    serve = share * 1000.0 * cfg.speedup / cfg.utilization * q.stretch_at(now_s)
    busy, last = q.busy_until, last_before
    for now in nows.tolist():
        last = max(last, float(now))
        busy = max(busy, last) + serve
    q.busy_until, q.last_now = busy, max(q.last_now, last)
    return serve
