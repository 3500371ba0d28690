"""The GrubJoin sensor workload (Gedik et al., TKDE, §VI-B).

Stream S_i's value at time φ (seconds of event time since the start) is

    X_i(φ) = ((D/η)·(φ + τ_i) + κ_i·N(0,1)) mod D,        D = 1000, η = 50,

so all streams sweep the domain once every η seconds; τ_i shifts stream i in time (the
lag: all 0 = aligned streams) and κ_i blurs it (the deviation: κ = 0 gives identical,
possibly lagged streams; a large κ removes the time correlation). The natural join is
the ε-band |value_i − value_j| ≤ ε (the paper: ε = 1).
"""

from __future__ import annotations

import numpy as np

from connectors.workloads.params import SensorParams


def sensor_values(
    phi_s: np.ndarray, lag_s: float, kappa: float, params: SensorParams, rng: np.random.Generator
) -> np.ndarray:
    """X_i(φ) of GrubJoin §VI-B for event times ``phi_s`` (seconds), lag τ_i, deviation κ_i."""
    slope = params.domain / params.period
    noise = rng.standard_normal(len(phi_s)) * kappa
    return np.mod(slope * (phi_s + lag_s) + noise, params.domain)


def sensor_columns(
    times_ms: np.ndarray,
    start_ms: int,
    lag_s: float,
    kappa: float,
    params: SensorParams,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """The attribute columns of one sensor stream: value = X_i(φ), a1 = ⌊value⌋, x = y = 0."""
    phi_s = (times_ms - start_ms) / 1000.0
    value = sensor_values(phi_s, lag_s, kappa, params, rng)
    n = len(times_ms)
    return {
        "value": value,
        "a1": np.floor(value).astype(np.int64),
        "x": np.zeros(n),
        "y": np.zeros(n),
    }
