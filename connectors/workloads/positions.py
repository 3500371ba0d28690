"""A distance-join workload standing in for Ji et al.'s soccer data (DEBS 2013 grand
challenge; their query: players of opposite teams within 5 m, windows of 5 s).

Each stream is a team; its readings go round-robin over the team's players. Player p's
position is a smooth path around a home point h_p:

    x_p(φ) = h_p,x + Σ_k A_k·sin(ω_k·φ + ψ_k)   (three terms per axis, Σ_k A_k = roam/2)

clipped to the field, so consecutive readings of a player are close and players of both
teams meet now and then. ``value`` is the player's speed (m/s, from the derivative),
``a1`` the sensor id (100·team + player).
"""

from __future__ import annotations

import numpy as np

from connectors.workloads.params import PositionParams

_TERMS = 3


def position_columns(
    times_ms: np.ndarray,
    start_ms: int,
    team: int,
    params: PositionParams,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """x, y (m), value = speed (m/s), a1 = sensor id, for team ``team`` (1-based)."""
    n = len(times_ms)
    p = params.players
    player = np.arange(n) % p
    phi = (times_ms - start_ms) / 1000.0
    bounds = np.array([params.length, params.width])
    margin = np.minimum(bounds / 2.0, params.roam / 2.0)
    home = rng.uniform(margin, bounds - margin, (p, 2))
    amp = rng.dirichlet(np.ones(_TERMS), (p, 2)) * (params.roam / 2.0)
    omega = rng.uniform(params.omega_min, params.omega_max, (p, 2, _TERMS))
    phase = rng.uniform(0.0, 2.0 * np.pi, (p, 2, _TERMS))
    angle = omega[player] * phi[:, None, None] + phase[player]
    pos = home[player] + np.sum(amp[player] * np.sin(angle), axis=2)
    vel = np.sum(amp[player] * omega[player] * np.cos(angle), axis=2)
    pos = np.clip(pos, 0.0, bounds)
    return {
        "value": np.hypot(vel[:, 0], vel[:, 1]),
        "a1": (100 * team + player + 1).astype(np.int64),
        "x": pos[:, 0],
        "y": pos[:, 1],
    }
