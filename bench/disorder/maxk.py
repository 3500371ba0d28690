"""Max-K-slack's average K from the arrivals alone (Ji et al., ICDE, §VI, Table II).

Max-K-slack sets K to the largest raw delay seen so far over all streams (the rule of
:class:`pipeline.operators.disorder.slack_policies.MaxSlack`); the engine reads K at
every adaptation boundary L, before the arrivals at or after it. K depends on the
arrivals only, not on the join, so its average over the paper's 30-minute span is a
cheap replay of the generator while the bench's runs cover a shorter span. The running
maximum keeps climbing with the span (the largest of more Zipf draws), which is why a
short run's Max-K average understates the paper's Table II.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from connectors.workloads import WorkloadSpec
from connectors.workloads.registry import generate_workload

I64 = NDArray[np.int64]


def raw_delays(stream: I64, event_time: I64) -> I64:
    """Each arrival's raw delay ^iT − ts, ^iT its stream's largest ts so far, itself
    included (Ji et al. §II-A); arrays in arrival order."""
    delay = np.zeros(len(event_time), dtype=np.int64)
    for s in np.unique(stream):
        rows = np.flatnonzero(stream == s)
        ts = event_time[rows]
        delay[rows] = np.maximum.accumulate(ts) - ts
    return delay


def max_k_average(stream: I64, event_time: I64, arrival_time: I64, interval_ms: int) -> float:
    """Max-K-slack's K averaged over the boundaries L, 2L, … up to the last arrival: at a
    boundary b, the largest raw delay among the arrivals before b (arrays in arrival
    order, as the engine sees them)."""
    if len(arrival_time) == 0:
        return 0.0
    k = np.maximum.accumulate(raw_delays(stream, event_time))
    first = (int(arrival_time[0]) // interval_ms + 1) * interval_ms
    bounds = np.arange(first, int(arrival_time[-1]) + 1, interval_ms)
    if bounds.size == 0:
        return 0.0
    before = np.searchsorted(arrival_time, bounds, "left")
    ks = np.where(before > 0, k[np.maximum(before - 1, 0)], 0)
    return float(ks.mean())


def max_k_of_spec(spec: WorkloadSpec, interval_ms: int) -> float:
    """Max-K-slack's average K (ms) on the workload ``spec`` generates."""
    cols = generate_workload(spec).columns
    return max_k_average(np.asarray(cols["stream"]), np.asarray(cols["event_time"]),
                         np.asarray(cols["arrival_time"]), interval_ms)
