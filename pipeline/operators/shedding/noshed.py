"""The ``off`` shedder: admit everything, always scan the full windows (exact join)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.contract import AdmitsRuns, NeverPlans, PluginEnv, WallAccount
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig


class NoShedder(AdmitsRuns, NeverPlans):
    """No load shedding: the full join (GrubJoin's z = 1 baseline)."""

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> NoShedder:
        return cls()

    def admit(self, event: Event, now: int) -> bool:
        return True

    def plan(self, direction: int) -> ProbePlan | None:
        return None

    def charge(self, cost: float, now: int) -> None:
        return None

    def admit_run(self, streams: Any, now: int) -> bool:
        """The engine's batch path: everything is admitted."""
        return True

    def charge_run(self, costs: Any, now: int) -> None:
        return None

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        return None

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        return None

    def wall_budget(self) -> WallAccount | None:
        """None: no budget."""
        return None

    def snapshot(self) -> dict[str, Any]:
        return {"mode": "off"}

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> NoShedder:
        if snap.get("mode") != "off":
            raise OperatorStateError(f"not an 'off' shedder snapshot: {snap.get('mode')!r}")
        return cls()
