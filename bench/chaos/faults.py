"""The chaos bench's fault injections: SIGKILL of the node leading a partition (started
again after a pause), of one PySpark worker of the job, of the job's driver."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

from connectors.io.admin import leader_of
from connectors.launch.cluster import LocalCluster
from pipeline.core.errors import HarvestError, InfraError

#: a PySpark daemon or a worker it forked has this in its command line
WORKER_MARKER = b"pyspark.daemon"
#: added to the nice value of a node while it starts again: its JVM's start-up (about half
#: a minute of CPU on the shared two cores, in competition with the batch working off the
#: fault's backlog) belongs to the fault injection, not to the job; on a real cluster the
#: node starts on a machine of its own (docs/NOTES.md, issue 33, session 15)
RESTART_NICENESS = 10
#: how long a node started again may take to answer (at :data:`RESTART_NICENESS`)
RESTART_TIMEOUT_S = 240.0


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


def _renice(pid: int, nice: int) -> None:
    """Every thread of ``pid`` to ``nice`` (Linux keeps the nice value per thread); a
    value the process may not set (lower than its own, without privilege) is left."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            os.setpriority(os.PRIO_PROCESS, int(task.name), nice)


def start_niced(launcher: LocalCluster, node: int, niceness: int) -> None:
    """`start_node` from a thread whose nice value is raised by ``niceness`` (the node's
    JVM inherits the starting thread's), then the node's threads back to the bench's
    value once it answers."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    failed: list[BaseException] = []
    pids: list[int | None] = []

    def start() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, own + niceness))
            status = launcher.start_node(node, timeout=RESTART_TIMEOUT_S)
            pids.extend(n.pid for n in status.nodes if n.node == node)
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    starter = threading.Thread(target=start, name=f"start-node-{node}")
    starter.start()
    starter.join()
    if failed:
        raise failed[0]
    for pid in pids:
        if pid is not None:
            _renice(pid, own)


def kill_leader(launcher: LocalCluster, bootstrap: str, topic: str, down_s: float) -> int:
    """SIGKILL the node leading ``topic``[0], wait ``down_s``, start it again (at
    :data:`RESTART_NICENESS`); its id."""
    node = _leader(bootstrap, topic)
    launcher.stop_node(node, kill=True)
    time.sleep(down_s)
    start_niced(launcher, node, RESTART_NICENESS)
    return node
