"""The chaos bench's fault injections: SIGKILL of the node leading a partition (started
again after a pause), of one PySpark worker of the job, of the job's driver."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from connectors.io.admin import leader_of
from connectors.launch.cluster import LocalCluster
from pipeline.core.errors import HarvestError, InfraError

#: a PySpark daemon or a worker it forked has this in its command line
WORKER_MARKER = b"pyspark.daemon"


def _children(pid: int) -> list[int]:
    """Child pids of ``pid`` (``/proc/<pid>/task/*/children``)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, breadth first."""
    found, todo = [], [pid]
    while todo:
        kids = _children(todo.pop(0))
        found += kids
        todo += kids
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def python_workers(root: int) -> list[int]:
    """The PySpark workers below ``root``: processes running ``pyspark.daemon`` whose
    parent does too (the daemon forks one per worker)."""
    daemons = {p for p in descendants(root) if WORKER_MARKER in _cmdline(p)}
    return sorted(p for p in daemons if _parent(p) in daemons)


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def kill_python_worker(root: int, wait_s: float = 20.0) -> int:
    """SIGKILL one PySpark worker below ``root`` (the lowest pid; waits up to ``wait_s``
    for one to exist); its pid. InfraError when none appears."""
    deadline = time.monotonic() + wait_s
    while not (workers := python_workers(root)):
        if time.monotonic() > deadline:
            raise InfraError(f"no PySpark worker runs below pid {root}")
        time.sleep(0.5)
    os.kill(workers[0], signal.SIGKILL)
    return workers[0]


def _leader(bootstrap: str, topic: str, wait_s: float = 30.0) -> int:
    """The node leading ``topic``[0], waiting up to ``wait_s`` while it has none."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return leader_of(bootstrap, topic)
        except HarvestError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def kill_leader(launcher: LocalCluster, bootstrap: str, topic: str, down_s: float) -> int:
    """SIGKILL the node leading ``topic``[0], wait ``down_s``, start it again; its id."""
    node = _leader(bootstrap, topic)
    launcher.stop_node(node, kill=True)
    time.sleep(down_s)
    launcher.start_node(node, timeout=120.0)
    return node
