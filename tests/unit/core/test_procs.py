"""Child `harvest` processes: exit codes, stdout, JSON log events, failures named."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from pipeline.core.errors import InfraError
from pipeline.core.procs import Child, process_runs, read_jsonl_lines, run_harvest


def test_child_runs_a_real_subcommand(tmp_path: Path) -> None:
    env = {"HARVEST_CACHE_DIR": str(tmp_path / "cache")}
    child = Child("status", ["spark-cluster", "status"], tmp_path, env)
    assert child.wait(60.0) == 1  # nothing running in a fresh cache dir
    assert child.stdout_lines() == ["not running"]
    assert not child.running()
    with pytest.raises(InfraError, match="before 'never'"):
        child.wait_for_event("never", timeout_s=60.0)  # it exited without logging it
    child.stderr_path.write_text('noise\n{"event": "a", "n": 1}\n{"event": "b"}\n{bad json\n')
    assert child.events("a") == [{"event": "a", "n": 1}]
    assert child.wait_for_event("b", timeout_s=1.0) == {"event": "b"}
    assert read_jsonl_lines(['{"x": 1}', "", '{"x": 2}']) == [{"x": 1}, {"x": 2}]


def test_run_harvest_raises_on_failure_with_the_log_tail(tmp_path: Path) -> None:
    env = {"HARVEST_CACHE_DIR": str(tmp_path / "cache")}
    with pytest.raises(InfraError, match="exited with 2"):
        run_harvest("bad", ["demo", "--spec", str(tmp_path / "none.toml")], tmp_path, env,
                    timeout_s=60.0)
    assert "none.toml" in (tmp_path / "bad.err").read_text()


def test_process_runs_needs_a_live_process_with_the_needle() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert process_runs(child.pid, b"sleep")
        assert not process_runs(child.pid, b"kafka.Kafka")  # a reused pid is not ours
    finally:
        child.kill()
    deadline = time.monotonic() + 5.0
    while Path(f"/proc/{child.pid}/stat").exists() and time.monotonic() < deadline:
        if not process_runs(child.pid, b"sleep"):  # a zombie is dead (and gets reaped)
            break
        time.sleep(0.01)
    assert not process_runs(child.pid, b"sleep")
