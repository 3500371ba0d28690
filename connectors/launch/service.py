"""A local service run as a detached JVM and recorded on disk: the Kafka broker
(:mod:`connectors.launch.broker`) and the schema registry (:mod:`connectors.launch.registry`).

Both keep their pid (and address) in files under their directory, serialise up/down
across processes with a lock file there, start the JVM in its own session (so it
outlives the command that started it) with its output appended to a console log, and
stop it with SIGTERM to its process group, then SIGKILL. This module is that part.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger
from pipeline.core.procs import process_runs

log = get_logger(__name__)

Clock = Callable[[], float]
#: how long a service may take to go after SIGKILL
KILL_WAIT_S = 10.0


def read_int(path: Path) -> int | None:
    """The integer in ``path`` (None when missing or unreadable)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def log_tail(*paths: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of each existing file, labelled, for error messages."""
    parts = []
    for path in paths:
        if path.exists():
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- last {len(text)} lines of {path} ---\n" + "\n".join(text))
    return "\n".join(parts) if parts else "(no log written)"


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (its directory made when missing): one at
    a time across processes (parallel test sessions share the cache) — a service's up
    and down, the registry's download."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class ServiceProcess:
    """The JVM of one local service: started detached by :meth:`launch`, recognised by
    ``marker`` in its command line (a reused pid is not taken for it), stopped by
    :meth:`terminate`. ``name`` is how log lines and errors call it."""

    def __init__(self, name: str, marker: bytes, clock: Clock = time.monotonic) -> None:
        self.name = name
        self.marker = marker
        self._clock = clock
        self.proc: subprocess.Popen[bytes] | None = None

    def runs(self, pid: int) -> bool:
        """True when ``pid`` is a live (not zombie) process of this service."""
        return process_runs(pid, self.marker)

    def launch(self, cmd: list[str], console_log: Path, cwd: Path) -> int:
        """Start ``cmd`` in its own session in ``cwd``, output appended to ``console_log``;
        its pid."""
        with console_log.open("ab") as console:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                cwd=cwd, start_new_session=True,
            )
        return self.proc.pid

    def exit_code(self) -> int | None:
        """The exit code of the process :meth:`launch` started (None while it runs or
        when this object started none)."""
        return None if self.proc is None else self.proc.poll()

    def terminate(self, pid: int, stop_timeout_s: float) -> None:
        """SIGTERM to ``pid``'s process group, wait ``stop_timeout_s``, then SIGKILL;
        :class:`InfraError` when it survives that."""
        log.info(f"stopping {self.name}", pid=pid)
        _signal(pid, signal.SIGTERM)
        if self.wait_gone(pid, stop_timeout_s):
            return
        log.warning(f"{self.name} ignored SIGTERM; killing", pid=pid, waited_s=stop_timeout_s)
        _signal(pid, signal.SIGKILL)
        if not self.wait_gone(pid, KILL_WAIT_S):
            raise InfraError(f"{self.name} pid {pid} survived SIGKILL")

    def term(self, pid: int) -> None:
        """SIGTERM to ``pid``'s process group without waiting (several services at once)."""
        log.info(f"stopping {self.name}", pid=pid)
        _signal(pid, signal.SIGTERM)

    def kill(self, pid: int) -> None:
        """SIGKILL to ``pid``'s process group at once (fault injection); :class:`InfraError`
        when it survives that."""
        log.info(f"killing {self.name}", pid=pid)
        _signal(pid, signal.SIGKILL)
        if not self.wait_gone(pid, KILL_WAIT_S):
            raise InfraError(f"{self.name} pid {pid} survived SIGKILL")

    def wait_gone(self, pid: int, seconds: float) -> bool:
        """True once ``pid`` has exited (reaped when this object started it), False when
        it still runs after ``seconds``."""
        start = self._clock()
        while self._clock() - start < seconds:
            if self.proc is not None and self.proc.pid == pid:
                if self.proc.poll() is not None:
                    return True
            elif not self.runs(pid):
                return True
            time.sleep(0.2)
        return False


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
