"""The live state of a chaos run: the cluster, the job's current driver, what fired."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.chaos.plan import Chaos
from pipeline.core.procs import Child


@dataclass
class Run:
    """The live run: the cluster, the job's current driver and what happened."""

    chaos: Chaos
    launcher: Any  # connectors.launch.cluster.LocalCluster
    bootstrap: str
    job: Child
    drivers: int = 1
    #: per fault: kind, at_s, epoch, what was hit
    fired: list[dict[str, Any]] = field(default_factory=list)
    #: driver exits the bench did not cause (restarted too)
    unplanned_exits: list[int] = field(default_factory=list)
    #: epoch at which the producer was seen to have ended (0: not yet)
    input_end: float = 0.0

    @property
    def env(self) -> dict[str, str]:
        return {"HARVEST_BOOTSTRAP_SERVERS": self.bootstrap}

    def restart_job(self) -> None:
        self.drivers += 1
        self.job = Child(f"submit-{self.drivers}", self.chaos.submit_args(),
                         self.chaos.workdir, self.env)
