"""Child `harvest` processes for orchestrators (the demo, the pipeline benchmark).

Each child is a real `harvest <subcommand>` process with its stdout/stderr in files, its
own session (so it and its JVM can be stopped by process group), and JSON logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.core.errors import InfraError


class Child:
    """One running `harvest ...` child process."""

    def __init__(self, name: str, args: Sequence[str], workdir: Path,
                 env: Mapping[str, str]) -> None:
        self.name = name
        self.stdout_path = workdir / f"{name}.out"
        self.stderr_path = workdir / f"{name}.err"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pipeline.cli.main", "--log-format", "json", *args],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env={**os.environ, **env}, start_new_session=True,
            )

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout_s: float) -> int:
        """Exit code; raises :class:`InfraError` (after stopping it) on timeout."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise InfraError(
                f"harvest {self.name} did not finish within {timeout_s:.0f} s; "
                f"log tail:\n{self.tail()}"
            ) from None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM its process group, SIGKILL after ``grace_s``."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def tail(self, lines: int = 20) -> str:
        text = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stdout_lines(self) -> list[str]:
        return self.stdout_path.read_text(errors="replace").splitlines()

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines on stderr whose ``event`` is ``name``."""
        found = []
        for line in self.stderr_path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("event") == name:
                found.append(row)
        return found

    def wait_for_event(self, name: str, timeout_s: float, poll_s: float = 0.5) -> dict[str, Any]:
        """Block until a JSON log line with ``event == name`` appears on stderr."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            hits = self.events(name)
            if hits:
                return hits[-1]
            if not self.running():
                raise InfraError(f"harvest {self.name} exited ({self.proc.returncode}) before "
                                 f"{name!r}; log tail:\n{self.tail()}")
            time.sleep(poll_s)
        self.stop()
        raise InfraError(f"harvest {self.name}: no {name!r} within {timeout_s:.0f} s; "
                         f"log tail:\n{self.tail()}")


def run_harvest(name: str, args: Sequence[str], workdir: Path, env: Mapping[str, str],
                timeout_s: float) -> Child:
    """Run a child to completion; raises :class:`InfraError` on a non-zero exit."""
    child = Child(name, args, workdir, env)
    code = child.wait(timeout_s)
    if code != 0:
        raise InfraError(f"harvest {name} exited with {code}; log tail:\n{child.tail()}")
    return child


def read_jsonl_lines(lines: Sequence[str]) -> list[dict[str, Any]]:
    """Decode JSON lines printed by `harvest consume --format jsonl` (blank lines skipped).

    >>> read_jsonl_lines(['{"id": "r1"}', "", '{"id": "r2"}'])
    [{'id': 'r1'}, {'id': 'r2'}]
    """
    return [json.loads(line) for line in lines if line.strip()]


def process_runs(pid: int, needle: bytes, settle_s: float = 1.0) -> bool:
    """True when ``pid`` is a live (not zombie) process whose command line mentions
    ``needle`` (so a reused pid is not taken for ours). Right after a spawn, or while a
    launcher script ``exec``s its JVM, ``/proc/<pid>/cmdline`` reads empty for a moment:
    that is waited out (up to ``settle_s``) instead of being taken for a dead process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc") / str(pid)
    deadline = time.monotonic() + settle_s
    while True:
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            return proc.exists() or not Path("/proc/self").exists()
        if state in ("Z", "X"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return False
        if cmdline or time.monotonic() >= deadline:
            return needle in cmdline
        time.sleep(0.01)
