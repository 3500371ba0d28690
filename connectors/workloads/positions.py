"""A distance-join workload standing in for Ji et al.'s soccer data (DEBS 2013 grand
challenge; their query: players of opposite teams within 5 m, windows of 5 s).

Each stream is a team; its readings go round-robin over the team's players. Player p's
position is a smooth path around a home point h_p:

    x_p(φ) = h_p,x + Σ_k A_k·sin(ω_k·φ + ψ_k)   (three terms per axis, Σ_k A_k = roam/2)

clipped to the field, so consecutive readings of a player are close and players of both
teams meet now and then. ``value`` is the player's speed (m/s, from the derivative),
``a1`` the sensor id (100·team + player).

With ``markers`` > 0 (ours) the first ``markers`` players of every later team mark the
first team's players of the same number: marker p is where its man was ``lag_p`` seconds
before, plus a gap g_p(φ)·(cos θ_p(φ), sin θ_p(φ)) with g_p = ``mark_gap``·(1 + sin(ν_p·φ
+ χ_p))/2 and θ_p turning at ν'_p rad/s. A marker and its man then come within a small
distance mostly at one lag, the same lag over the whole run: the time correlation
between the streams that window harvesting learns (Gedik et al., TKDE §III), as a
defender shadows an attacker in real match data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from connectors.workloads.params import PositionParams

_TERMS = 3
#: the marking gap's swing period and the gap direction's turn period (s)
_GAP_PERIOD_S = (4.0, 12.0)
_TURN_PERIOD_S = (10.0, 40.0)


@dataclass(frozen=True)
class _Paths:
    """A team's players' paths: home points, amplitudes, angular speeds, phases."""

    home: np.ndarray  # (p, 2)
    amp: np.ndarray  # (p, 2, terms)
    omega: np.ndarray
    phase: np.ndarray

    @classmethod
    def draw(cls, params: PositionParams, rng: np.random.Generator) -> _Paths:
        p = params.players
        bounds = np.array([params.length, params.width])
        margin = np.minimum(bounds / 2.0, params.roam / 2.0)
        home = rng.uniform(margin, bounds - margin, (p, 2))
        amp = rng.dirichlet(np.ones(_TERMS), (p, 2)) * (params.roam / 2.0)
        omega = rng.uniform(params.omega_min, params.omega_max, (p, 2, _TERMS))
        phase = rng.uniform(0.0, 2.0 * np.pi, (p, 2, _TERMS))
        return cls(home, amp, omega, phase)

    def at(self, player: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unclipped positions and velocities (n, 2) of ``player`` at times ``phi`` (s)."""
        angle = self.omega[player] * phi[:, None, None] + self.phase[player]
        pos = self.home[player] + np.sum(self.amp[player] * np.sin(angle), axis=2)
        vel = np.sum(self.amp[player] * self.omega[player] * np.cos(angle), axis=2)
        return pos, vel


def _marked(pos: np.ndarray, vel: np.ndarray, player: np.ndarray, phi: np.ndarray,
            leader: _Paths, params: PositionParams, rng: np.random.Generator) -> None:
    """Move the markers' rows of ``pos``/``vel`` (in place) onto their men's delayed paths
    plus the swinging gap (module docstring)."""
    k = params.markers
    lag = rng.uniform(params.mark_lag_min, params.mark_lag_max, k)
    nu = 2.0 * np.pi / rng.uniform(*_GAP_PERIOD_S, k)
    chi = rng.uniform(0.0, 2.0 * np.pi, k)
    turn = 2.0 * np.pi / rng.uniform(*_TURN_PERIOD_S, k)
    heading = rng.uniform(0.0, 2.0 * np.pi, k)
    rows = np.flatnonzero(player < k)
    q, t = player[rows], phi[rows]
    lpos, lvel = leader.at(q, t - lag[q])
    gap = params.mark_gap * (1.0 + np.sin(nu[q] * t + chi[q])) / 2.0
    dgap = params.mark_gap * nu[q] * np.cos(nu[q] * t + chi[q]) / 2.0
    theta = turn[q] * t + heading[q]
    c, s = np.cos(theta), np.sin(theta)
    pos[rows] = lpos + gap[:, None] * np.stack([c, s], axis=1)
    vel[rows] = lvel + np.stack([dgap * c - gap * turn[q] * s,
                                 dgap * s + gap * turn[q] * c], axis=1)


def position_columns(
    times_ms: np.ndarray,
    start_ms: int,
    team: int,
    params: PositionParams,
    rng: np.random.Generator,
    first_team_rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """x, y (m), value = speed (m/s), a1 = sensor id, for team ``team`` (1-based);
    ``first_team_rng``: a fresh copy of team 1's generator (its paths, for the markers of
    a later team; needed when ``params.markers`` > 0 and ``team`` > 1)."""
    n = len(times_ms)
    player = np.arange(n) % params.players
    phi = (times_ms - start_ms) / 1000.0
    paths = _Paths.draw(params, rng)
    pos, vel = paths.at(player, phi)
    if params.markers > 0 and team > 1:
        if first_team_rng is None:
            raise ValueError("position_columns: markers need the first team's generator")
        _marked(pos, vel, player, phi, _Paths.draw(params, first_team_rng), params, rng)
    pos = np.clip(pos, 0.0, np.array([params.length, params.width]))
    return {
        "value": np.hypot(vel[:, 0], vel[:, 1]),
        "a1": (100 * team + player + 1).astype(np.int64),
        "x": pos[:, 0],
        "y": pos[:, 1],
    }
