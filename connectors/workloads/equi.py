"""Ji et al.'s synthetic equi-join streams (ICDE, §VI, dataset D_syn^×3).

Attribute a1 takes integer values in [1, 100], Zipf-distributed (value k has probability
∝ k^-z); the skew z starts at 1.0 and is redrawn uniformly from [0, 5] after random gaps
of 1–10 minutes, so the join selectivity varies over time. ``value`` = a1.
"""

from __future__ import annotations

import numpy as np

from connectors.workloads.disorder import sample_zipf_ranks
from connectors.workloads.params import EquiParams


def skew_schedule(
    duration_s: float, params: EquiParams, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Change points (seconds since start, first = 0) and the skew in force from each."""
    starts = [0.0]
    skews = [params.initial_skew]
    t = 0.0
    while True:
        t += float(rng.uniform(params.gap_min_s, params.gap_max_s))
        if t >= duration_s:
            break
        starts.append(t)
        skews.append(float(rng.uniform(params.skew_min, params.skew_max)))
    return np.asarray(starts), np.asarray(skews)


def equi_columns(
    times_ms: np.ndarray,
    start_ms: int,
    duration_s: float,
    params: EquiParams,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """a1 (Zipf over [1, domain] with the time-varying skew), value = a1, x = y = 0.

    Also returns ``a1_skew``: the skew each tuple was drawn with (for checks; not a field
    of the Avro record).
    """
    starts, skews = skew_schedule(duration_s, params, rng)
    phi_s = (times_ms - start_ms) / 1000.0
    segment = np.searchsorted(starts, phi_s, side="right") - 1
    a1 = np.empty(len(times_ms), dtype=np.int64)
    for k, skew in enumerate(skews):
        rows = np.flatnonzero(segment == k)
        a1[rows] = sample_zipf_ranks(params.domain, float(skew), len(rows), rng) + 1
    n = len(times_ms)
    return {
        "value": a1.astype(np.float64),
        "a1": a1,
        "x": np.zeros(n),
        "y": np.zeros(n),
        "a1_skew": skews[segment],
    }
