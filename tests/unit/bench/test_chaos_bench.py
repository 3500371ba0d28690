"""`harvest bench chaos`: the fault schedule, recovery times from the checkpoint's commit
files, finding the PySpark workers below a driver, and the JSON body's targets."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.chaos.faults import descendants, python_workers
from bench.chaos.plan import CATCH_UP_TRIGGERS, KINDS, max_offsets, schedule
from bench.chaos.readback import Outcome
from bench.chaos.recovery import commit_times, recovered_s
from bench.chaos.report import payload
from pipeline.core.errors import InfraError


def test_the_full_run_fires_each_kind_twice_in_order() -> None:
    faults = schedule(10.0)
    assert len(faults) == 8
    assert [f.kind for f in faults] == [*KINDS, *KINDS]
    times = [f.at_s for f in faults]
    assert times == sorted(times) and times[0] == 45.0 and times[-1] < 600 - 30


def test_a_quick_run_fires_each_kind_once() -> None:
    assert [f.kind for f in schedule(3.0)] == list(KINDS)


def test_a_batch_reads_at_most_a_few_triggers_of_input() -> None:
    """A restarted driver's backlog is read in batches of CATCH_UP_TRIGGERS triggers of
    input (all streams), not in one."""
    assert max_offsets(594.8, 3, 8000) == math.ceil(CATCH_UP_TRIGGERS * 594.8 * 3 * 8)
    assert max_offsets(0.01, 3, 500) == 1


def test_recovered_is_the_first_commit_after_the_fault(tmp_path: Path) -> None:
    commits = tmp_path / "commits"
    commits.mkdir()
    for batch, mtime in ((0, 100.0), (1, 108.0), (2, 130.0)):
        path = commits / str(batch)
        path.write_text("v1")
        os.utime(path, (mtime, mtime))
    (commits / ".1.crc").write_text("")
    times = commit_times(tmp_path)
    assert times == {0: 100.0, 1: 108.0, 2: 130.0}
    assert recovered_s(110.0, sorted(times.values())) == 20.0
    assert recovered_s(131.0, sorted(times.values())) is None
    assert commit_times(tmp_path / "none") == {}


def test_python_workers_are_forked_daemons_below_the_root() -> None:
    """Below a root of its own (the test process may have real PySpark workers below it,
    from the Spark session of earlier tests): a fake daemon that forks one worker."""
    daemon = ("import os, sys, time\n"
              "if os.fork() == 0:\n    time.sleep(30)\nelse:\n    time.sleep(30)\n")
    root = ("import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', {daemon!r}, 'pyspark.daemon'])\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", root])
    try:
        deadline = time.monotonic() + 10
        while len(descendants(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        below = descendants(proc.pid)
        workers = python_workers(proc.pid)
        assert len(workers) == 1 and workers[0] != below[0] and workers[0] != proc.pid
    finally:
        for pid in [*descendants(proc.pid), proc.pid]:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        proc.wait()


def _outcome(**changes: object) -> Outcome:
    base = dict(generated=100, producer_sent=100, producer_failed=0, held=100,
                records_lost=0, input_duplicates=0, results=40, oracle_results=40,
                duplicates_read_committed=0, results_equal_oracle=True)
    return Outcome(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(("job_exit", "outcome", "met"), [
    (0, _outcome(), True),
    (1, _outcome(), False),
    (0, _outcome(duplicates_read_committed=1), False),
    (0, _outcome(results_equal_oracle=False), False),
])
def test_payload_counts_faults_and_checks_the_targets(
        tmp_path: Path, job_exit: int, outcome: Outcome, met: bool) -> None:
    checkpoint = tmp_path / "ck"
    (checkpoint / "commits").mkdir(parents=True)
    for batch, mtime in ((0, 1000.0), (1, 1012.0), (2, 1030.0), (3, 1050.0), (4, 1070.0)):
        path = checkpoint / "commits" / str(batch)
        path.write_text("v1")
        os.utime(path, (mtime, mtime))
    spec = SimpleNamespace(job=SimpleNamespace(trigger_ms=8000),
                           join=SimpleNamespace(window_ms=60000),
                           disorder=SimpleNamespace(slack_ms=3000))
    chaos = SimpleNamespace(quick=True, minutes=3.0, rate=40.0, prefix="c", spec=spec,
                            checkpoint=checkpoint, faults=schedule(3.0))
    fired = [{"kind": k, "at_s": 5.0 + 10 * i, "epoch": 1005.0 + 10 * i, "hit": "x"}
             for i, k in enumerate(KINDS)]
    run = SimpleNamespace(chaos=chaos, fired=fired, drivers=2, unplanned_exits=[])
    body = payload(run, 1000.0, job_exit, outcome, None, tmp_path)  # type: ignore[arg-type]
    assert body["faults"] == 4
    assert [f["recovered_s"] for f in body["fault_log"]] == [7.0, 15.0, 5.0, 15.0]
    assert body["faults_survived"] == (4 if job_exit == 0 else 0)
    assert body["median_recovered_s_broker"] == 11.0
    assert all(body["targets_met"].values()) is met
    assert body["load"] is None


def test_the_rate_is_a_third_of_the_soaks_capacity(tmp_path: Path) -> None:
    from bench.chaos.plan import RATE_PER_STREAM, rate_per_stream

    assert rate_per_stream(tmp_path) == RATE_PER_STREAM
    (tmp_path / "soak.json").write_text('{"capacity": {"capacity_rate": 1800.0}}')
    assert rate_per_stream(tmp_path) == 600.0


def _checkpoint_batch(checkpoint: Path, batch: int, started: float, committed: float,
                      ends: tuple[int, int]) -> None:
    """Spark's offsets file (version, metadata, the source's end offsets) and commit file
    of one micro-batch, stamped with when it was planned and committed."""
    offsets = checkpoint / "offsets" / str(batch)
    commit = checkpoint / "commits" / str(batch)
    for path in (offsets, commit):
        path.parent.mkdir(parents=True, exist_ok=True)
    offsets.write_text('v1\n{"batchWatermarkMs":0}\n'
                       f'{{"p.in.s1":{{"0":{ends[0]}}},"p.in.s2":{{"0":{ends[1]}}}}}\n')
    commit.write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    os.utime(offsets, (started, started))
    os.utime(commit, (committed, committed))


def test_the_jobs_rate_is_records_over_batch_time_without_warm_up_or_faults(
        tmp_path: Path) -> None:
    """Against the sums written out by hand: batch 1 is the first to read records (warm-up,
    left out), batch 3 has a fault in its span, batch 5 commits after the input ended."""
    from bench.chaos.capacity import batches, job_rate

    spans = [(0, 100.0, 104.0, (0, 0)), (1, 108.0, 120.0, (500, 500)),
             (2, 120.0, 125.0, (1500, 1500)), (3, 128.0, 140.0, (2500, 2500)),
             (4, 140.0, 143.0, (3100, 3100)), (5, 150.0, 161.0, (4000, 4000))]
    for batch, started, committed, ends in spans:
        _checkpoint_batch(tmp_path, batch, started, committed, ends)
    (tmp_path / "commits" / ".4.crc").write_text("")
    done = batches(tmp_path)
    assert [(b.batch, b.records, b.span_s) for b in done] == [
        (0, 0, 4.0), (1, 1000, 12.0), (2, 2000, 5.0), (3, 2000, 12.0), (4, 1200, 3.0),
        (5, 1800, 11.0)]
    assert job_rate(done, (99.0, 160.0), faults=[130.0]) == ((2000 + 1200) / (5.0 + 3.0), 2)
    assert job_rate(done, (99.0, 160.0), faults=[122.0, 130.0, 141.0]) is None
    assert batches(tmp_path / "none") == []


def test_the_rate_follows_the_jobs_measured_rate_before_the_operators(
        tmp_path: Path) -> None:
    from bench.chaos.plan import LOAD, OPERATOR_SHARE, rate_basis

    (tmp_path / "soak.json").write_text('{"capacity": {"capacity_rate": 1800.0}}')
    assert rate_basis(tmp_path) == (round(OPERATOR_SHARE * 1800.0, 1), "operator")
    (tmp_path / "chaos.json").write_text('{"capacity": {"job_rate_per_stream": 700.0}}')
    assert rate_basis(tmp_path) == (round(LOAD * 700.0, 1), "job")
    (tmp_path / "chaos.json").write_text('{"capacity": null}')
    assert rate_basis(tmp_path)[1] == "operator"


def test_a_node_starts_again_below_the_bench_and_is_put_back_once_it_answers() -> None:
    """A fake launcher whose node is a `sleep`: it runs at the raised nice value while it
    starts, and at the bench's once `start_niced` returns (lowering a nice value needs
    privilege: without it the node stays where it started)."""
    from bench.chaos.faults import start_niced

    own = os.getpriority(os.PRIO_PROCESS, 0)
    seen: list[int] = []
    procs: list[subprocess.Popen[bytes]] = []

    def start_node(node: int, timeout: float) -> SimpleNamespace:
        proc = subprocess.Popen(["sleep", "30"])
        procs.append(proc)
        seen.append(os.getpriority(os.PRIO_PROCESS, proc.pid))
        return SimpleNamespace(nodes=(SimpleNamespace(node=node, pid=proc.pid),
                                      SimpleNamespace(node=node + 1, pid=None)))

    try:
        start_niced(SimpleNamespace(start_node=start_node), 2, 10)  # type: ignore[arg-type]
        assert seen == [min(19, own + 10)]
        after = os.getpriority(os.PRIO_PROCESS, procs[0].pid)
        assert after == (own if os.geteuid() == 0 else seen[0])
        assert os.getpriority(os.PRIO_PROCESS, 0) == own
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_node_that_fails_to_start_fails_the_fault() -> None:
    from bench.chaos.faults import start_niced

    def start_node(node: int, timeout: float) -> None:
        raise InfraError(f"node {node} did not answer")

    with pytest.raises(InfraError, match="node 3"):
        start_niced(SimpleNamespace(start_node=start_node), 3, 10)  # type: ignore[arg-type]


def test_the_rate_is_planned_from_the_median_of_the_last_runs(tmp_path: Path) -> None:
    import json
    import statistics

    from bench.chaos.plan import AT_CAPACITY_LOAD, HISTORY, LOAD, job_history, rate_basis

    rates = [350.0, 520.0, 310.0, 500.0, 480.0, 900.0, 495.0]
    (tmp_path / "chaos.json").write_text(json.dumps(
        {"capacity": {"job_rate_per_stream": 1.0}, "job_rate_history": rates}))
    assert job_history(tmp_path) == rates[-HISTORY:]
    median = statistics.median(rates[-HISTORY:])
    assert rate_basis(tmp_path) == (round(LOAD * median, 1), "job")
    assert rate_basis(tmp_path, AT_CAPACITY_LOAD) == (round(median, 1), "job")
    # one slow run moves the median by at most one neighbour, not to its own value
    slowed = [*rates[-HISTORY + 1:], 100.0]
    (tmp_path / "chaos.json").write_text(json.dumps({"job_rate_history": slowed}))
    assert rate_basis(tmp_path)[0] >= round(LOAD * 480.0, 1)


def test_chaos_parts_are_checked_and_merged(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import bench.chaos.main as chaos_main
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match="--only"):
        chaos_main.run(True, tmp_path, SimpleNamespace(), only="faults,nope")  # type: ignore[arg-type]
    loads: list[float] = []

    def fake(results_dir: Path, settings: object, quick: bool, minutes: float | None,
             load: float) -> dict[str, object]:
        loads.append(load)
        return {"load": load, "capacity": {"job_rate_per_stream": 400.0 + 100 * load},
                "commits": [], "fault_log": [], "faults": 0, "faults_survived": 0,
                "records_lost": 0, "duplicates_read_committed": 0,
                "results_equal_oracle": True, "trigger_ms": 8000}

    monkeypatch.setattr(chaos_main, "_measured", fake)
    monkeypatch.setattr(chaos_main, "plot", lambda *a, **k: None)
    (tmp_path / "chaos.json").write_text(json.dumps({"job_rate_history": [300.0]}))
    assert chaos_main.run(False, tmp_path, SimpleNamespace(), only="at_capacity") == 0  # type: ignore[arg-type]
    first = json.loads((tmp_path / "chaos.json").read_text())
    assert first["at_capacity"]["load"] == 1.0 and first["job_rate_history"] == [300.0, 500.0]
    assert chaos_main.run(False, tmp_path, SimpleNamespace(), only="faults") == 0  # type: ignore[arg-type]
    second = json.loads((tmp_path / "chaos.json").read_text())
    assert second["load"] == 0.6 and second["at_capacity"] == first["at_capacity"]
    assert second["job_rate_history"] == [300.0, 500.0, 460.0]
    assert loads == [1.0, 0.6]


def test_at_capacity_runs_at_the_demos_capacity_not_the_fed_back_rate(
        tmp_path: Path) -> None:
    from bench.chaos.plan import capacity_basis

    (tmp_path / "chaos.json").write_text('{"job_rate_history": [400.0]}')
    assert capacity_basis(tmp_path) == (400.0, "job")
    (tmp_path / "soak.json").write_text('{"capacity": {"capacity_rate": 1784.36}}')
    assert capacity_basis(tmp_path) == (1784.4, "operator")
