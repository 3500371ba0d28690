"""The chaos bench's JSON body and PNG (commits over time, the faults and recoveries)."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.chaos.plan import MASTER, NODES, UNTIL_IDLE_S, soak_capacity
from bench.chaos.recovery import commit_times, recovered_s
from bench.kit.output import save_figure
from pipeline.core.settings import Settings

if TYPE_CHECKING:
    from bench.chaos.live import Run
    from bench.chaos.readback import Outcome

BROKER_KINDS = ("input_leader", "results_leader")
COLOURS = {"input_leader": "tab:blue", "results_leader": "tab:orange",
           "python_worker": "tab:green", "driver": "tab:red"}


def payload(run: Run, t0: float, job_exit: int, outcome: Outcome, settings: Settings,
            results_dir: Path, capacity: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything ``chaos.json`` holds. ``load`` is the rate against what the job worked
    off in this run (``capacity["job_rate_per_stream"]``: the share of the run the job was
    busy), else against the operator's capacity (``soak.json``)."""
    chaos = run.chaos
    commits = commit_times(chaos.checkpoint)
    times = sorted(commits.values())
    faults = [{"kind": f["kind"], "at_s": f["at_s"], "hit": f["hit"],
               "recovered_s": recovered_s(f["epoch"], times)} for f in run.fired
              if not str(f["hit"]).startswith("not injected")]
    missed = [f for f in run.fired if str(f["hit"]).startswith("not injected")]
    survived = sum(f["recovered_s"] is not None for f in faults) if job_exit == 0 else 0
    broker = [f["recovered_s"] for f in faults
              if f["kind"] in BROKER_KINDS and f["recovered_s"] is not None]
    trigger_s = chaos.spec.job.trigger_ms / 1000.0
    median_broker = statistics.median(broker) if broker else None
    job = (capacity or {}).get("job_rate_per_stream")
    base = job or soak_capacity(results_dir)
    out = dataclasses.asdict(outcome)
    targets = {
        "faults_survived": survived == len(faults) and len(faults) >= (8 if not chaos.quick
                                                                       else 4),
        "records_lost": outcome.records_lost == 0,
        "duplicates_read_committed": outcome.duplicates_read_committed == 0,
        "results_equal_oracle": outcome.results_equal_oracle,
        "broker_recovery": median_broker is not None and median_broker <= 2 * trigger_s,
    }
    return {
        "quick": chaos.quick, "minutes": chaos.minutes, "nodes": NODES, "master": MASTER,
        "input_rate_per_stream": chaos.rate,
        "load": round(chaos.rate / base, 3) if base else None,
        "capacity": capacity,
        "trigger_ms": chaos.spec.job.trigger_ms, "until_idle_s": UNTIL_IDLE_S,
        "window_ms": chaos.spec.join.window_ms, "slack_ms": chaos.spec.disorder.slack_ms,
        "topic_prefix": chaos.prefix,
        "schedule": [{"kind": f.kind, "at_s": f.at_s} for f in chaos.faults],
        "fault_log": faults, "faults_not_injected": missed,
        "faults": len(faults), "faults_survived": survived,
        "records_lost": outcome.records_lost,
        "duplicates_read_committed": outcome.duplicates_read_committed,
        "results_equal_oracle": outcome.results_equal_oracle,
        "median_recovered_s_broker": median_broker,
        "median_recovered_s": {k: statistics.median(v) if v else None for k, v in {
            kind: [f["recovered_s"] for f in faults
                   if f["kind"] == kind and f["recovered_s"] is not None]
            for kind in COLOURS}.items()},
        "job_exit": job_exit, "drivers_started": run.drivers,
        "unplanned_driver_exits": run.unplanned_exits,
        "outcome": out,
        "commits": [[b, round(t - t0, 2)] for b, t in sorted(commits.items())],
        "targets_met": targets,
    }


def plot(body: dict[str, Any], results_dir: Path, name: str = "chaos") -> Path:
    """Micro-batches committed over time with each fault and its recovery (``name``.png)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    commits = body["commits"]
    top.step([t for _, t in commits], [b for b, _ in commits], where="post", color="black",
             lw=1.2, label="micro-batches committed")
    for fault in body["fault_log"]:
        colour = COLOURS.get(fault["kind"], "grey")
        top.axvline(fault["at_s"], color=colour, ls="--", lw=1)
        if fault["recovered_s"] is not None:
            top.axvspan(fault["at_s"], fault["at_s"] + fault["recovered_s"], color=colour,
                        alpha=0.2)
            bottom.bar(fault["at_s"], fault["recovered_s"], width=6, color=colour)
    for kind, colour in COLOURS.items():
        top.plot([], [], color=colour, ls="--", label=kind)
    top.set_ylabel("batch id")
    verdict = ("equal to the oracle" if body["results_equal_oracle"] else "NOT the oracle's")
    load = f" at {body['load']:g}x the job's rate" if body.get("load") else ""
    top.set_title(f"chaos{load}: {body['faults_survived']}/{body['faults']} faults survived, "
                  f"{body['records_lost']} records lost, "
                  f"{body['duplicates_read_committed']} duplicates, results {verdict}")
    top.legend(loc="upper left", fontsize=8)
    bottom.axhline(2 * body["trigger_ms"] / 1000.0, color="grey", ls=":",
                   label="2 × trigger")
    bottom.set_ylabel("recovered (s)")
    bottom.set_xlabel("seconds since the input started")
    bottom.legend(loc="upper left", fontsize=8)
    return save_figure(fig, name, results_dir)
