"""The ``spark_e2e`` part of `harvest bench diffusion`: adaptive ATR in the real Spark job
(Gu et al. §2.2–2.6: least-loaded segments by Eq. 1, master switching by Eq. 2, the T
climb) on ``local[2]`` with ``groups = 2``, through a master switch and a restart from
the checkpoint, against the oracle.

The check is the e2e test's (``tests/e2e/test_adaptive_atr.py``), run as it is — pytest
in a child process on the real broker — so the bench and the test cannot drift apart;
the test writes what it observed to the file ``HARVEST_E2E_RECORD`` names. The bench
imports no Spark (the layer contract), and a test's outcome is only known by running it.

The broker is the one the other benches use (:func:`bench.kit.broker.answering_broker`:
the configured one, else the local one, started if needed); ``KAFKA_BOOTSTRAP_SERVERS``
is set for the child, so the test's fixture never starts a broker of its own.
``HARVEST_KAFKA_LOCK``, when set, names a lock file held (``flock``) while the test runs,
for machines where broker users take turns. ``child_cpu_s`` is the CPU of the child's
whole process tree, the Spark JVM included (sampled from ``/proc``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.kit.broker import answering_broker
from pipeline.core.logging import get_logger
from pipeline.core.settings import PROJECT_ROOT, Settings

log = get_logger("bench.diffusion")

TEST = Path("tests/e2e/test_adaptive_atr.py")
#: the child pytest's limit (the test itself waits at most 90 s for the switch)
TIMEOUT_S = 900


@contextlib.contextmanager
def _held(path: str | None) -> Iterator[None]:
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _outcome(junit: Path) -> tuple[str, str | None]:
    """``passed`` / ``failed`` / ``skipped`` / ``error`` and the message, from the
    child's JUnit XML."""
    if not junit.exists():
        return "error", "pytest wrote no report"
    cases = ET.parse(junit).getroot().iter("testcase")
    for case in cases:
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                label = "failed" if kind == "failure" else kind
                return label, (node.get("message") or "")[:600]
        return "passed", None
    return "error", "the report holds no test case"


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds so far of ``root`` and every descendant (Linux ``/proc``; empty
    elsewhere): pyspark never reaps the Spark JVM, so ``RUSAGE_CHILDREN`` misses it."""
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            parent[pid] = int(fields[1])
            cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, grew = {root}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    return {p: cpu[p] for p in tree if p in cpu}


def _run(cmd: list[str], env: dict[str, str]) -> tuple[int | None, str, float]:
    """Run the child, sampling its process tree's CPU twice a second (the last sample of
    each process counts); returns rc (None = timed out), the output's tail, CPU s."""
    seen: dict[int, float] = {}
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + TIMEOUT_S
        rc: int | None = None
        while rc is None and time.monotonic() < deadline:
            seen |= _tree_cpu(proc.pid)
            try:
                rc = proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue
        if rc is None:
            proc.kill()
            proc.wait()
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        seen[proc.pid] = max(seen.get(proc.pid, 0.0), use.ru_utime + use.ru_stime)
        out.seek(0)
        tail = out.read()[-1500:] if rc is not None else f"timed out after {TIMEOUT_S} s"
    return rc, tail, sum(seen.values())


def spark_e2e(settings: Settings) -> dict[str, Any]:
    """Run the e2e test once; its outcome, what it observed and what it cost."""
    test = PROJECT_ROOT / TEST
    if not test.exists():
        return {"outcome": "not run", "why": f"{TEST} is not in this installation "
                "(it runs from a checkout)", "passed": None}
    bootstrap = answering_broker(settings, lambda text: log.info(text))
    with tempfile.TemporaryDirectory(prefix="harvest-e2e-") as tmp:
        record, junit = Path(tmp) / "observed.json", Path(tmp) / "junit.xml"
        env = {**os.environ, "HARVEST_E2E_RECORD": str(record),
               "KAFKA_BOOTSTRAP_SERVERS": bootstrap}
        cmd = [sys.executable, "-m", "pytest", str(TEST), "-q", "-p", "no:cacheprovider",
               f"--junitxml={junit}"]
        with _held(os.environ.get("HARVEST_KAFKA_LOCK")):
            t0 = time.monotonic()
            rc, tail, cpu = _run(cmd, env)
            wall = time.monotonic() - t0
        outcome, message = _outcome(junit) if rc is not None else ("error", tail)
        observed = json.loads(record.read_text()) if record.exists() else None
    passed = outcome == "passed" and bool(observed and observed["equals_oracle"])
    return {"outcome": outcome, "passed": passed if outcome in ("passed", "failed") else None,
            "message": message, "bootstrap": bootstrap, "observed": observed,
            "command": " ".join(cmd[1:]), "pytest_rc": rc, "wall_s": round(wall, 1),
            "child_cpu_s": round(cpu, 1),
            "log_tail": None if outcome == "passed" else tail}
