"""Operator throttling: the throttle fraction z (GrubJoin §IV-A, DESIGN §5).

Every Δ the budget source reports β, the join's performance over the last interval:

* β < 1 (the join fell behind: fewer tuples consumed than pushed, or more time spent
  than available): z ← β · z                                       (paper's rule)
* β ≥ 1: z ← min(1, γ · z)                                          (paper's boost)

Refinements (ours), for a budget that also measures its *headroom* h (utilization target
over the share of the budget used, e.g. capacity over virtual busy time):

* the boost is capped by the headroom, z ← min(1, z·min(γ, t·h)), so at the operating
  point z settles instead of oscillating between a boost and a cut;
* *learned utilization target* t ∈ (0, 1]: drops while the budget was not used up
  (β < 1 but h ≥ 1) come from single expensive probes overflowing the small input
  queue (per-probe cost variance), not from the mean load. They still cost output —
  a dropped tuple is missing from its window too — so z is cut by the paper's rule and
  t is multiplied by β: boosts then stop below the cost level at which drops happened.
  t relaxes by ``relax`` per drop-free interval (back towards 1), and because it is a
  cost level, a rate change moves z without re-learning t. Under steady overload
  the controller thus settles at a drop-free z.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import ConfigError, OperatorStateError

#: z never goes below this (a direction with z = 0 would never produce or learn)
Z_MIN = 1e-3
#: the learned utilization target never goes below this
T_MIN = 0.05


@dataclass(frozen=True)
class ThrottleConfig:
    """Boost factor γ > 1 (paper: 1.2), the headroom cap, the smallest β still read as
    a burst (``burst_beta``; below it the drops are plain overload) and the learned
    target's relaxation per drop-free interval (``relax``)."""

    boost: float = 1.2
    cap_by_headroom: bool = True
    burst_beta: float = 0.8
    relax: float = 1.01

    def __post_init__(self) -> None:
        if not self.boost > 1.0:
            raise ConfigError(f"boost: must be > 1, got {self.boost}")
        if not 0.0 < self.burst_beta <= 1.0:
            raise ConfigError(f"burst_beta: must be in (0, 1], got {self.burst_beta}")
        if not self.relax >= 1.0:
            raise ConfigError(f"relax: must be >= 1, got {self.relax}")


class Throttle:
    """Runtime z (starts at 1) and the learned utilization target t (starts at 1)."""

    def __init__(self, config: ThrottleConfig, z: float = 1.0, target: float = 1.0) -> None:
        self.config = config
        self.z = z
        self.target = target

    def update(self, beta: float, headroom: float | None = None) -> float:
        """One adaptation step (GrubJoin §IV-A); returns the new z."""
        if beta < 0.0:
            raise OperatorStateError(f"beta: must be >= 0, got {beta}")
        cfg = self.config
        use_h = cfg.cap_by_headroom and headroom is not None
        if beta < 1.0:
            if use_h and headroom is not None and headroom >= 1.0 and beta >= cfg.burst_beta:
                # drops under budget: per-probe bursts overflowed the queue (ours)
                self.target = max(T_MIN, self.target * beta)
            z = beta * self.z
        else:
            factor = cfg.boost
            if use_h and headroom is not None:
                factor = min(factor, self.target * headroom)
            z = min(1.0, factor * self.z)
            self.target = min(1.0, self.target * cfg.relax)
        self.z = max(Z_MIN, z)
        return self.z

    def snapshot(self) -> dict[str, Any]:
        return {"z": self.z, "target": self.target}

    @classmethod
    def from_snapshot(cls, config: ThrottleConfig, snap: dict[str, Any]) -> Throttle:
        try:
            return cls(config, z=float(snap["z"]), target=float(snap.get("target", 1.0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"throttle: bad snapshot {snap!r}") from exc
