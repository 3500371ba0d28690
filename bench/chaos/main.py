"""The run of `harvest bench chaos` (the package docstring says what it measures): the
cluster, the job and the producer, the fault schedule, the read-back and the report."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from bench.chaos.capacity import batches, job_rate
from bench.chaos.faults import kill_leader, kill_python_worker
from bench.chaos.live import Run
from bench.chaos.plan import (
    AT_CAPACITY_LOAD,
    HISTORY,
    LOAD,
    NODE_DOWN_S,
    NODES,
    PARTS,
    Fault,
    capacity_basis,
    job_capacity,
    job_history,
    plan,
    rate_basis,
    soak_capacity,
)
from bench.chaos.readback import Outcome, read_back
from bench.chaos.recovery import commit_times
from bench.chaos.report import payload, plot
from bench.kit.output import read_payload, write_json
from bench.kit.parts import only_parts
from pipeline.core.errors import HarvestError, InfraError
from pipeline.core.jsonl import read_jsonl
from pipeline.core.procs import Child, run_harvest
from pipeline.core.settings import Settings


def _cluster(settings: Settings) -> Any:
    """The bench's own three-node cluster under ``<cache>/bench-chaos/cache`` (a single
    broker running in the main cache is left alone), started."""
    from connectors.launch.broker_config import BrokerConfig
    from connectors.launch.cluster import LocalCluster

    cache = settings.cache_dir / "bench-chaos" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    jars = cache / "jars"
    if not jars.exists():
        jars.symlink_to(settings.jars_dir.resolve(), target_is_directory=True)
    launcher = LocalCluster(BrokerConfig.from_settings(settings.model_copy(
        update={"cache_dir": cache})))
    return launcher


def _slack(settings: Settings, quick: bool, minutes: float | None, rate: float) -> int:
    """K: the largest delay of the run's records (generated once, dry run)."""
    probe = plan(quick, minutes, settings, 0, rate)
    run_harvest("produce-dry", [*probe.producer_args(), "--dry-run"], probe.workdir, {}, 600)
    slack = max(int(r["arrival_time"]) - int(r["event_time"]) for r in read_jsonl(probe.dump))
    shutil.rmtree(probe.workdir, ignore_errors=True)
    return slack


def _wait_first_commit(run: Run, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not commit_times(run.chaos.checkpoint):
        if not run.job.running() or time.monotonic() > deadline:
            raise InfraError(f"the chaos job did not commit a micro-batch:\n{run.job.tail()}")
        time.sleep(1.0)


def _inject(run: Run, fault: Fault) -> str:
    """Fire one fault; what it hit."""
    from connectors.io.topics import input_topic, results_topic

    prefix = run.chaos.prefix
    if fault.kind == "input_leader":
        node = kill_leader(run.launcher, run.bootstrap, input_topic(prefix, "sensors", "s1"),
                           NODE_DOWN_S)
        return f"node {node}"
    if fault.kind == "results_leader":
        node = kill_leader(run.launcher, run.bootstrap, results_topic(prefix), NODE_DOWN_S)
        return f"node {node}"
    if fault.kind == "python_worker":
        return f"pid {kill_python_worker(run.job.proc.pid)}"
    os.killpg(run.job.proc.pid, signal.SIGKILL)
    run.job.proc.wait()
    pid = run.job.proc.pid
    run.restart_job()
    return f"driver pid {pid}"


def _keep_job_alive(run: Run) -> None:
    """Start the job again when its driver exited on its own (counted)."""
    code = run.job.proc.poll()
    if code is not None:
        run.unplanned_exits.append(code)
        run.restart_job()


def _faults(run: Run, t0: float) -> None:
    """Fire the schedule (``t0``: epoch of the input's start)."""
    for fault in run.chaos.faults:
        while time.time() < t0 + fault.at_s:
            _keep_job_alive(run)
            time.sleep(0.5)
        _keep_job_alive(run)
        at = time.time()
        try:
            hit = _inject(run, fault)
        except HarvestError as exc:  # recorded; the run goes on
            hit = f"not injected: {exc}"
        run.fired.append({"kind": fault.kind, "at_s": round(at - t0, 1), "epoch": at,
                          "hit": hit})
        print(f"  {at - t0:6.1f} s  {fault.kind:15s} {hit}", flush=True)


def _finish(run: Run, producer: Child) -> int:
    """Wait for the producer, then for the job to go idle and end; the job's exit code."""
    limit = time.monotonic() + 60.0 * run.chaos.minutes + 300.0
    while producer.running() and time.monotonic() < limit:
        _keep_job_alive(run)
        time.sleep(1.0)
    producer.wait(60.0)
    run.input_end = time.time()
    return run.job.wait(900.0)


def _execute(run: Run) -> tuple[float, int, Child]:
    """The job's first commit, the producer, the faults; (t0, job exit, producer)."""
    _wait_first_commit(run)
    producer = Child("produce", run.chaos.producer_args(), run.chaos.workdir, run.env)
    t0 = time.time()
    try:
        _faults(run, t0)
        code = _finish(run, producer)
    finally:
        producer.stop()
        run.job.stop()
    return t0, code, producer


def _capacity(run: Run, t0: float, basis: str, results_dir: Path) -> dict[str, Any]:
    """What the rate was based on and what the job worked off in this run
    (:mod:`bench.chaos.capacity`)."""
    chaos = run.chaos
    end = run.input_end or t0 + 60.0 * chaos.minutes
    measured = job_rate(batches(chaos.checkpoint), (t0, end), [f["epoch"] for f in run.fired])
    streams = len(chaos.spec.join.streams)
    return {
        "basis": basis,
        "planned_from_job_rate_per_stream": job_capacity(results_dir) if basis == "job"
        else None,
        "operator_rate_per_stream": soak_capacity(results_dir),
        "job_rate_per_stream": round(measured[0] / streams, 1) if measured else None,
        "batches_measured": measured[1] if measured else 0,
        "method": "records read / micro-batch time (offsets file to commit file) over the "
                  "batches inside the input with no fault in their span, per stream",
    }


def _measured(results_dir: Path, settings: Settings, quick: bool, minutes: float | None,
              load: float) -> dict[str, Any]:
    """One faulted run on a cluster of its own, planned for ``load``: the demo's
    capacity for :data:`AT_CAPACITY_LOAD` (:func:`~bench.chaos.plan.capacity_basis`),
    else ``load`` × the job's rate (:func:`~bench.chaos.plan.rate_basis`); its JSON
    body."""
    launcher = _cluster(settings)
    status = launcher.up(NODES, timeout=240.0)
    assert status.bootstrap is not None
    bootstrap = status.bootstrap
    try:
        rate, basis = (capacity_basis(results_dir) if load == AT_CAPACITY_LOAD
                       else rate_basis(results_dir, load))
        chaos = plan(quick, minutes, settings, _slack(settings, quick, minutes, rate), rate)
        print(f"chaos: {chaos.minutes:g} min at {chaos.rate:g}/s per stream "
              f"(basis {basis}) on {NODES} nodes ({bootstrap}); "
              f"{len(chaos.faults)} faults", flush=True)
        live = Run(chaos, launcher, bootstrap,
                   Child("submit-1", chaos.submit_args(), chaos.workdir,
                         {"HARVEST_BOOTSTRAP_SERVERS": bootstrap}))
        t0, code, producer = _execute(live)
        outcome: Outcome = read_back(chaos, bootstrap, settings, producer)
    finally:
        launcher.down()
    body = payload(live, t0, code, outcome, settings, results_dir,
                   _capacity(live, t0, basis, results_dir))
    body["planned_load"] = load
    return body


def _save(body: dict[str, Any], measured: dict[str, Any], results_dir: Path) -> None:
    """Append ``measured``'s job rate to ``job_rate_history`` and write ``chaos.json``."""
    history = job_history(results_dir)
    rate = (measured.get("capacity") or {}).get("job_rate_per_stream")
    if rate:
        history.append(float(rate))
    body["job_rate_history"] = history[-HISTORY:]
    write_json("chaos", body, results_dir)


def run(quick: bool, results_dir: Path, settings: Settings, minutes: float | None = None,
        only: str | None = None) -> int:
    """Benchmark entry point (see the package docstring); ``only``: comma-separated parts
    of :data:`~bench.chaos.plan.PARTS`, merged into the existing ``chaos.json``."""
    parts = only_parts(only, PARTS)
    body = read_payload("chaos", results_dir)
    if "faults" in parts:
        measured = _measured(results_dir, settings, quick, minutes, LOAD)
        kept = {k: body[k] for k in ("at_capacity",) if k in body}
        body = {**measured, **kept}
        _save(body, measured, results_dir)
        plot(body, results_dir)
    if "at_capacity" in parts:
        measured = _measured(results_dir, settings, quick, minutes, AT_CAPACITY_LOAD)
        body["at_capacity"] = measured
        _save(body, measured, results_dir)
        plot(measured, results_dir, "chaos_at_capacity")
    keys = ("faults", "faults_survived", "records_lost", "duplicates_read_committed",
            "results_equal_oracle", "median_recovered_s_broker", "targets_met")
    print(json.dumps({part: {k: (body if part == "faults" else body[part]).get(k)
                             for k in keys} for part in parts}))
    return 0
