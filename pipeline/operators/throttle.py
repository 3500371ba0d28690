"""Operator throttling: the throttle fraction z (GrubJoin §IV-A, DESIGN §5).

Every Δ the budget source reports β, the join's performance over the last interval:

* β < 1 (the join fell behind: fewer tuples consumed than pushed, or more time spent
  than available): z ← β · z                                       (paper's rule)
* β ≥ 1: z ← min(1, γ · z)                                          (paper's boost)

Refinement (ours): a budget that can also measure its *headroom* h (available budget /
budget used, e.g. capacity over virtual busy time) caps the boost at h, z ← min(1,
z·min(γ, h)); with h ≈ 1 at the operating point z settles instead of oscillating
between a boost and a cut (and the drops each overshoot would cause). Drops while the
budget was not used up (β < 1 but h ≥ 1) come from bursts overflowing the small input
queue, not from overload, so they do not cut z.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import ConfigError, OperatorStateError

#: z never goes below this (a direction with z = 0 would never produce or learn)
Z_MIN = 1e-3


@dataclass(frozen=True)
class ThrottleConfig:
    """Boost factor γ > 1 (paper: 1.2) and whether the headroom cap is used."""

    boost: float = 1.2
    cap_by_headroom: bool = True

    def __post_init__(self) -> None:
        if not self.boost > 1.0:
            raise ConfigError(f"boost: must be > 1, got {self.boost}")


class Throttle:
    """Runtime z (starts at 1)."""

    def __init__(self, config: ThrottleConfig, z: float = 1.0) -> None:
        self.config = config
        self.z = z

    def update(self, beta: float, headroom: float | None = None) -> float:
        """One adaptation step (GrubJoin §IV-A); returns the new z."""
        if beta < 0.0:
            raise OperatorStateError(f"beta: must be >= 0, got {beta}")
        if beta < 1.0 and self.config.cap_by_headroom and headroom is not None and (
            headroom >= 1.0
        ):
            beta = 1.0  # drops while under budget: a burst overflowed the queue
        if beta < 1.0:
            z = beta * self.z
        else:
            factor = self.config.boost
            if self.config.cap_by_headroom and headroom is not None:
                factor = min(factor, headroom)
            z = min(1.0, factor * self.z)
        self.z = max(Z_MIN, z)
        return self.z

    def snapshot(self) -> dict[str, Any]:
        return {"z": self.z}

    @classmethod
    def from_snapshot(cls, config: ThrottleConfig, snap: dict[str, Any]) -> Throttle:
        try:
            return cls(config, z=float(snap["z"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"throttle: bad snapshot {snap!r}") from exc
