"""Baseline K-slack sizing policies (Ji et al. §V baselines).

* ``none`` — No-K-slack: K = 0; only the Synchronizer handles (inter-stream) disorder.
* ``max``  — Max-K-slack: K = the maximum raw delay observed so far over all streams
  (Mutschler & Philippsen, as described by Ji et al.); the tuple that raises K stays
  out of order itself.
* ``fixed`` — K = ``disorder.slack_ms`` throughout.

Each reports a metrics row ``{time, k_ms, policy, max_delay_ms}`` at every interval
boundary L, so the average K can be plotted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.contract import ObservesRuns, PluginEnv, SteadyK

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig


class BaselinePolicy(ObservesRuns):
    """Shared mechanics: track max delay, report K at each boundary."""

    mode = "baseline"
    needs_cross = False

    def __init__(self, k_ms: int = 0) -> None:
        self.k_ms = k_ms
        self.max_delay = 0

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> BaselinePolicy:
        return cls(config.disorder.slack_ms if cls.mode == "fixed" else 0)

    def observe_arrival(self, stream: int, ts: int, delay: int) -> None:
        if delay > self.max_delay:
            self.max_delay = delay

    def observe_arrivals(self, streams: Any, ts: Any, delays: Any) -> None:
        """:meth:`observe_arrival` for every arrival of a run (the engine's batch path)."""
        if len(delays):
            self.max_delay = max(self.max_delay, int(delays.max()))

    def observe_join(
        self, stream: int, ts: int, delay: int, results: int, cross: int, late: bool
    ) -> None:
        return None

    def observe_joins(self, *args: Any) -> None:
        """:meth:`observe_join` for a run: nothing to record."""
        return None

    def current_k(self) -> int:
        return self.k_ms

    def maybe_adapt(self, now_ms: int) -> dict[str, Any] | None:
        return {
            "time": now_ms,
            "k_ms": self.current_k(),
            "policy": self.mode,
            "max_delay_ms": self.max_delay,
        }

    def snapshot(self) -> dict[str, Any]:
        return {"mode": self.mode, "k_ms": self.k_ms, "max_delay": self.max_delay}

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> BaselinePolicy:
        if snap.get("mode") != cls.mode:
            raise OperatorStateError(
                f"slack policy snapshot of mode {snap.get('mode')!r}, expected {cls.mode!r}"
            )
        policy = cls(int(snap["k_ms"]))
        policy.max_delay = int(snap["max_delay"])
        return policy


class NoSlack(BaselinePolicy, SteadyK):
    """No-K-slack: K = 0."""

    mode = "none"


class FixedSlack(BaselinePolicy, SteadyK):
    """Fixed K = ``disorder.slack_ms``."""

    mode = "fixed"


class MaxSlack(BaselinePolicy):
    """Max-K-slack: K = max raw delay observed so far (over all streams); K changes with
    arrivals, so it is not :class:`~pipeline.operators.contract.SteadyK`."""

    mode = "max"

    def current_k(self) -> int:
        return self.max_delay
