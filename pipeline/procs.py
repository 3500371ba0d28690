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

from pipeline.errors import InfraError


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
    """Decode JSON lines printed by `harvest consume --format jsonl`."""
    return [json.loads(line) for line in lines if line.strip()]
