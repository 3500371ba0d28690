"""Processes and memory of `harvest bench soak`: resident sets from /proc, the driver's
JVM and its Python workers, and the JVM's native memory by NMT category (jcmd)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_NMT_TOTAL = re.compile(r"Total: reserved=(\d+)KB, committed=(\d+)KB")
_NMT_CATEGORY = re.compile(r"^-\s+(.+?) \(reserved=(\d+)KB, committed=(\d+)KB\)")


def rss_mb(pid: int, proc: Path = Path("/proc")) -> float:
    """Resident set size of ``pid`` in MB (0 if it is gone)."""
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return 0.0
    return 0.0


def process_table(proc: Path = Path("/proc")) -> dict[int, tuple[int, str]]:
    """pid → (parent pid, command line) of every process that can be read."""
    out: dict[int, tuple[int, str]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except (OSError, ValueError):
            continue
        out[int(entry.name)] = (ppid, cmd)
    return out


def descendants(root: int, table: Mapping[int, tuple[int, str]]) -> list[int]:
    """Every pid below ``root`` in the process tree."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def parse_nmt(text: str) -> dict[str, float]:
    """Committed MB per category of ``jcmd <pid> VM.native_memory summary`` (and
    ``Total``); empty if NMT is off."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if m := _NMT_TOTAL.search(line):
            out["Total"] = int(m.group(2)) / 1024.0
        elif m := _NMT_CATEGORY.match(line):
            out[m.group(1).strip()] = int(m.group(3)) / 1024.0
    return out


def jvm_native(pid: int) -> dict[str, float]:
    """The JVM's native memory by NMT category (committed MB); empty if unavailable."""
    try:
        done = subprocess.run(["jcmd", str(pid), "VM.native_memory", "summary"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_nmt(done.stdout)


def driver_jvms(driver_pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The ``java`` processes below the driver (local mode: one)."""
    table = process_table(proc)
    return [p for p in descendants(driver_pid, table) if "java" in table[p][1].split(" ")[0]]


@dataclass(frozen=True)
class MemorySample:
    """Resident memory of the driver (Python + JVM) and of the Python workers, MB."""

    driver_mb: float
    jvm_mb: float
    python_driver_mb: float
    worker_mb: float
    workers: int


def sample_memory(driver_pid: int, proc: Path = Path("/proc")) -> MemorySample:
    """The driver's own RSS, its JVM's (a ``java`` child), and every Python process below
    that JVM (PySpark daemon and workers)."""
    table = process_table(proc)
    own = rss_mb(driver_pid, proc)
    jvms = [p for p in descendants(driver_pid, table) if "java" in table[p][1].split(" ")[0]]
    jvm = sum(rss_mb(p, proc) for p in jvms)
    workers = [p for j in jvms for p in descendants(j, table) if "python" in table[p][1]]
    return MemorySample(driver_mb=own + jvm, jvm_mb=jvm, python_driver_mb=own,
                        worker_mb=sum(rss_mb(p, proc) for p in workers),
                        workers=len(workers))
