"""What a virtual-cluster run yields (issue 31): rates, balance, replication, exactness.

* ``async_rate = N / max_k Σ_b cpu[k,b]/speed_k`` — each host queues its own input (the
  paper's model): the most loaded host sets the pace;
* ``batch_rate = N / Σ_b max_k cpu[k,b]/speed_k`` — Spark's barrier per micro-batch
  (without its fixed costs);
* ``route_rate = N / routing CPU``; ``routing_us_per_tuple``;
* ``imbalance = max_k / mean_k`` of the hosts' busy time; ``replication`` = tuples
  received / N; ``shipped_per_tuple`` = CTR's intermediate tuples / N;
* the same two rates on cost units (``*_cost``): deterministic, free of timer noise;
* ``async_rate_paper`` (tuples per 1000 units) and ``imbalance_paper`` on the paper's
  simulation costs (:func:`bench.diffusion.cluster.paper_units`: 1 per tuple or partial
  result received, 10 per probe of a window, whatever its size);
* ``batch_rate_paper``: the batch rate on those costs (no host borrows idle time from
  another trigger: the paper's live throughput, where a host sheds what it cannot do in
  time, rather than a host that may queue its input for the whole run);
* ``async_rate_pairs`` / ``batch_rate_pairs``: the paper's costs with a probe read as one
  tuple pair compared (:func:`bench.diffusion.cluster.pair_units`);
* ``equals_oracle`` (the distinct results are the oracle's) and ``duplicates``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.diffusion.cluster import Trace
from bench.diffusion.oracle import unique_rows

IntArray = npt.NDArray[np.int64]


def measure(trace: Trace, truth: IntArray, speeds: Sequence[float] | None = None
            ) -> dict[str, Any]:
    """The row of one run (without part, router and the G = 1 reference)."""
    sp = np.ones(trace.groups) if speeds is None else np.asarray(speeds, dtype=np.float64)
    busy = trace.cpu / sp[:, None]
    units = trace.cost / sp[:, None]
    per_host = busy.sum(axis=1)
    paper_kb = None if trace.paper is None else trace.paper / sp[:, None]
    paper = None if paper_kb is None else paper_kb.sum(axis=1)
    pairs_kb = None if trace.pairs is None else trace.pairs / sp[:, None]
    n = trace.n
    distinct = unique_rows(trace.results)
    return {
        "async_rate": round(float(n / per_host.max()), 1),
        "batch_rate": round(float(n / busy.max(axis=0).sum()), 1),
        "route_rate": round(n / trace.route_cpu, 1) if trace.route_cpu > 0 else None,
        "routing_us_per_tuple": round(trace.route_cpu / n * 1e6, 2),
        "async_rate_cost": round(float(n / units.sum(axis=1).max() * 1000), 3),
        "batch_rate_cost": round(float(n / units.max(axis=0).sum() * 1000), 3),
        "async_rate_paper": (None if paper is None
                             else round(float(n / paper.max() * 1000), 3)),
        "imbalance_paper": (None if paper is None
                            else round(float(paper.max() / paper.mean()), 3)),
        "batch_rate_paper": (None if paper_kb is None
                             else round(float(n / paper_kb.max(axis=0).sum() * 1000), 3)),
        "async_rate_pairs": (None if pairs_kb is None
                             else round(float(n / pairs_kb.sum(axis=1).max() * 1000), 3)),
        "batch_rate_pairs": (None if pairs_kb is None
                             else round(float(n / pairs_kb.max(axis=0).sum() * 1000), 3)),
        "imbalance": round(float(per_host.max() / per_host.mean()), 3),
        "imbalance_cost": round(float(units.sum(axis=1).max() / units.sum(axis=1).mean()), 3),
        "replication": round(float(trace.received.sum()) / n, 3),
        "shipped_per_tuple": round(trace.shipped / n, 3),
        "state_max": int(trace.state.max()) if trace.state.size else 0,
        "cpu_s": round(float(trace.cpu.sum()), 3),
        "results": len(distinct),
        "duplicates": len(trace.results) - len(distinct),
        "equals_oracle": bool(len(trace.results) == len(distinct)
                              and np.array_equal(distinct, truth)),
        "batches": trace.cpu.shape[1],
        "input": n,
        **trace.extra,
    }
