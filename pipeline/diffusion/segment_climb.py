"""The segment-length hill climb of adaptive ATR (Gu et al., "Adaptive Load Diffusion for
Multiway Windowed Stream Joins", §2.6, sampling-based profiling).

At the end of each trial the measured performance of the T in force is handed to
:meth:`SegmentClimb.next`: T ← T + ΔT while it improves; when a step makes it worse, the
climb turns and steps the other way, and so on, within [T_min, T_max]. Performance is
a throughput (larger is better); the caller decides what it measures.

>>> climb = SegmentClimb(1000, 500, 3000, 500)
>>> climb.next(10.0), climb.next(12.0), climb.next(11.0), climb.next(13.0)
(1500, 2000, 1500, 1000)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.core.errors import ConfigError


class SegmentClimb:
    """T, its bounds and step, the direction of the climb and the last performance."""

    def __init__(self, segment_ms: int, low: int, high: int, step: int) -> None:
        if not 0 < low <= high:
            raise ConfigError(f"job.segment_min_ms: need 0 < min <= max = {high}, got {low}")
        if step <= 0:
            raise ConfigError(f"job.segment_step_ms: must be > 0, got {step}")
        self.segment_ms = min(max(int(segment_ms), low), high)
        self.low, self.high, self.step = low, high, step
        self.direction = 1
        self.last: float | None = None

    def next(self, performance: float) -> int:
        """Record the performance of the current T and return the T of the next trial."""
        if self.last is not None and performance < self.last:
            self.direction = -self.direction
        self.last = performance
        t = self.segment_ms + self.direction * self.step
        if not self.low <= t <= self.high:  # at a bound: turn
            self.direction = -self.direction
            t = self.segment_ms + self.direction * self.step
        self.segment_ms = min(max(t, self.low), self.high)
        return self.segment_ms

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {"segment_ms": self.segment_ms, "low": self.low, "high": self.high,
                "step": self.step, "direction": self.direction, "last": self.last}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> SegmentClimb:
        """Inverse of :meth:`snapshot`."""
        out = cls(snap["segment_ms"], snap["low"], snap["high"], snap["step"])
        out.direction, out.last = int(snap["direction"]), snap["last"]
        return out
