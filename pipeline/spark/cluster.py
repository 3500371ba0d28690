"""A Spark standalone cluster (one master + N workers) on 127.0.0.1 from the PySpark wheel.

The PyPI wheel ships ``jars/`` but no ``sbin/start-master.sh``, so the daemons are
launched directly: ``java -cp "<pyspark>/jars/*" org.apache.spark.deploy.master.Master``
and ``...deploy.worker.Worker spark://host:port``. Pid files, logs, the worker's work
dir and the recorded master URL live under ``<cache>/spark/`` (worker 1: ``worker.pid``,
``worker.log``, ``work/``; worker n > 1: ``worker-<n>.*``, ``work-<n>/``). Readiness is the
master's web UI JSON (``/json/``) reporting status ALIVE with every worker ALIVE.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.logging import get_logger
from pipeline.core.procs import process_runs

log = get_logger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Where and how big: ports fall back to free ones when taken."""

    state_dir: Path
    host: str = "127.0.0.1"
    master_port: int = 7077
    webui_port: int = 8080
    worker_webui_port: int = 8081
    worker_cores: int = 2
    worker_memory: str = "2g"
    #: workers started by ``up``, each with ``worker_cores`` and ``worker_memory``
    workers: int = 1
    daemon_heap: str = "512m"
    java_home: Path | None = None
    python: str = sys.executable
    timeout_s: float = 90.0

    def __post_init__(self) -> None:
        if self.worker_cores < 1:
            raise ConfigError(f"--cores: must be >= 1, got {self.worker_cores}")
        if self.workers < 1:
            raise ConfigError(f"--workers: must be >= 1, got {self.workers}")
        if not self.worker_memory[:-1].isdigit() or self.worker_memory[-1] not in "mMgG":
            raise ConfigError(f"--memory: expected e.g. 2g or 1536m, got {self.worker_memory!r}")

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "state_dir": str(self.state_dir),
            "host": self.host,
            "master_port": self.master_port,
            "webui_port": self.webui_port,
            "worker_webui_port": self.worker_webui_port,
            "worker_cores": self.worker_cores,
            "worker_memory": self.worker_memory,
            "workers": self.workers,
        }


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """What ``status`` reports."""

    running: bool
    master_url: str | None
    webui_url: str | None
    workers_alive: int
    cores: int
    master_pid: int | None
    worker_pid: int | None


def spark_home() -> Path:
    """The PySpark distribution directory (it holds ``jars/`` and ``bin/``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise InfraError("pyspark is not installed in this interpreter; run `make venv`")
    home = Path(spec.origin).parent
    if not (home / "jars").is_dir():
        raise InfraError(f"no jars/ directory in the PySpark distribution at {home}")
    return home


def scala_version(home: Path) -> str:
    """Scala binary version of the distribution, from ``jars/scala-library-2.13.x.jar``."""
    for jar in sorted((home / "jars").glob("scala-library-*.jar")):
        parts = jar.stem.removeprefix("scala-library-").split(".")
        if len(parts) >= 2:
            return f"{parts[0]}.{parts[1]}"
    raise InfraError(f"no scala-library jar in {home / 'jars'}")


def java_binary(java_home: Path | None) -> str:
    """``$JAVA_HOME/bin/java`` (setting, then env), else ``java`` on PATH."""
    home = java_home or (Path(os.environ["JAVA_HOME"]) if os.environ.get("JAVA_HOME") else None)
    if home is not None:
        candidate = home / "bin" / "java"
        if candidate.exists():
            return str(candidate)
        raise InfraError(f"JAVA_HOME={home} has no bin/java")
    found = shutil.which("java")
    if found is None:
        raise InfraError(
            "Java 17+ is required to run Spark; apt-get install openjdk-17-jre-headless"
        )
    return found


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def pick_port(host: str, preferred: int, avoid: set[int]) -> int:
    """``preferred`` when free (and not in ``avoid``), else an OS-assigned free port."""
    if preferred not in avoid and port_free(host, preferred):
        return preferred
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in avoid:
            return port
    raise InfraError(f"no free TCP port on {host}")


def _pid_alive(pid: int, needle: str) -> bool:
    """The process exists and its command line mentions ``needle`` (no pid reuse; an
    ``exec`` in progress is waited out, :func:`pipeline.core.procs.process_runs`)."""
    return process_runs(pid, needle.encode())


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


class StandaloneCluster:
    """Start/stop/inspect the master + worker described by a :class:`ClusterConfig`."""

    def __init__(self, config: ClusterConfig, clock: Callable[[], float] = time.monotonic):
        self.config = config
        self._clock = clock
        self._dir = config.state_dir

    # -- files ------------------------------------------------------------------------
    @property
    def master_pid_file(self) -> Path:
        return self._dir / "master.pid"

    @property
    def worker_pid_file(self) -> Path:
        return self._dir / "worker.pid"

    @staticmethod
    def worker_role(n: int) -> str:
        """The file stem of worker ``n`` (1-based): ``worker``, ``worker-2``, ..."""
        return "worker" if n == 1 else f"worker-{n}"

    def _worker_roles(self) -> list[str]:
        """Every worker this state directory knows of (pid files), the first included."""
        extra = sorted((p.stem for p in self._dir.glob("worker-*.pid")),
                       key=lambda r: int(r.split("-")[1]) if r.split("-")[1].isdigit() else 0)
        return ["worker", *extra]

    @property
    def master_url_file(self) -> Path:
        """Holds the ``spark://host:port`` URL while the cluster runs."""
        return self._dir / "master"

    @property
    def webui_file(self) -> Path:
        return self._dir / "webui"

    # -- status -----------------------------------------------------------------------
    def _master_json(self, webui: str) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{webui}/json/", timeout=2.0) as resp:
                body: dict[str, Any] = json.loads(resp.read().decode())
                return body
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def status(self) -> ClusterStatus:
        """Pids alive? master UI answering? how many ALIVE workers?"""
        mpid = _read_pid(self.master_pid_file)
        wpid = _read_pid(self.worker_pid_file)
        mpid = mpid if mpid is not None and _pid_alive(mpid, MASTER_CLASS) else None
        wpid = wpid if wpid is not None and _pid_alive(wpid, WORKER_CLASS) else None
        url = self.master_url_file.read_text().strip() if self.master_url_file.exists() else None
        webui = self.webui_file.read_text().strip() if self.webui_file.exists() else None
        alive, cores = 0, 0
        if mpid is not None and webui:
            info = self._master_json(webui)
            if info is not None:
                workers = [w for w in info.get("workers", []) if w.get("state") == "ALIVE"]
                alive = len(workers)
                cores = sum(int(w.get("cores", 0)) for w in workers)
        return ClusterStatus(
            running=mpid is not None and alive > 0,
            master_url=url if mpid is not None else None,
            webui_url=webui if mpid is not None else None,
            workers_alive=alive,
            cores=cores,
            master_pid=mpid,
            worker_pid=wpid,
        )

    # -- up -----------------------------------------------------------------------------
    def up(self) -> ClusterStatus:
        """Start master and worker (idempotent) and wait until the worker registered."""
        current = self.status()
        if current.running:
            log.info("spark cluster already running", master=current.master_url)
            return current
        self.down()  # clear half-started leftovers (one daemon dead, stale pid files)
        cfg = self.config
        self._dir.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        java = java_binary(cfg.java_home)
        used: set[int] = set()
        mport = pick_port(cfg.host, cfg.master_port, used)
        used.add(mport)
        uport = pick_port(cfg.host, cfg.webui_port, used)
        used.add(uport)
        master_url = f"spark://{cfg.host}:{mport}"
        webui = f"http://{cfg.host}:{uport}"
        env = self._env(home)
        classpath = f"{home / 'jars'}/*"
        master_cmd = [
            java, f"-Xmx{cfg.daemon_heap}", "-cp", classpath, MASTER_CLASS,
            "--host", cfg.host, "--port", str(mport), "--webui-port", str(uport),
        ]
        self._spawn(master_cmd, env, "master")
        self.master_url_file.write_text(master_url + "\n")
        self.webui_file.write_text(webui + "\n")
        self._wait(lambda: self._master_json(webui) is not None, "master web UI", "master")
        for n in range(1, cfg.workers + 1):
            role = self.worker_role(n)
            wport = pick_port(cfg.host, cfg.worker_webui_port + n - 1, used)
            used.add(wport)
            work_dir = self._dir / ("work" if n == 1 else f"work-{n}")
            work_dir.mkdir(exist_ok=True)
            worker_cmd = [
                java, f"-Xmx{cfg.daemon_heap}", "-cp", classpath, WORKER_CLASS,
                "--host", cfg.host, "--webui-port", str(wport),
                "--cores", str(cfg.worker_cores), "--memory", cfg.worker_memory,
                "--work-dir", str(work_dir), master_url,
            ]
            self._spawn(worker_cmd, env, role)
            self._wait(self._workers_alive(n), "worker registration", role)
        result = self.status()
        log.info("spark cluster up", master=master_url, webui=webui, cores=result.cores)
        return result

    def _workers_alive(self, n: int) -> Callable[[], bool]:
        return lambda: self.status().workers_alive >= n

    def _env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["SPARK_HOME"] = str(home)
        # the launcher's classpath builder needs it outside a source build (no RELEASE file)
        env["SPARK_SCALA_VERSION"] = scala_version(home)
        env["PYSPARK_PYTHON"] = self.config.python
        env["SPARK_LOG_DIR"] = str(self._dir)
        if self.config.java_home is not None:
            env["JAVA_HOME"] = str(self.config.java_home)
        return env

    def _spawn(self, cmd: list[str], env: dict[str, str], role: str) -> None:
        log_path = self._dir / f"{role}.log"
        with log_path.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self._dir,
                start_new_session=True,
            )
        (self._dir / f"{role}.pid").write_text(f"{proc.pid}\n")
        log.info("spark daemon started", role=role, pid=proc.pid, log=str(log_path))

    def _wait(self, ready: Callable[[], bool], what: str, role: str) -> None:
        deadline = self._clock() + self.config.timeout_s
        last_note = self._clock()
        pid_file = self._dir / f"{role}.pid"
        needle = MASTER_CLASS if role == "master" else WORKER_CLASS
        while self._clock() < deadline:
            if ready():
                return
            pid = _read_pid(pid_file)
            if pid is None or not _pid_alive(pid, needle):
                tail = self._tail(self._dir / f"{role}.log")
                self.down()
                raise InfraError(f"spark {role} exited during start-up; log tail:\n{tail}")
            if self._clock() - last_note >= 5.0:
                log.info("waiting for spark", what=what)
                last_note = self._clock()
            time.sleep(0.5)
        tail = self._tail(self._dir / f"{role}.log")
        self.down()
        raise InfraError(
            f"spark {what} not ready after {self.config.timeout_s:.0f}s; log tail:\n{tail}"
        )

    @staticmethod
    def _tail(path: Path, lines: int = 15) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- down ---------------------------------------------------------------------------
    def down(self, grace_s: float = 15.0) -> bool:
        """Stop worker then master (SIGTERM, then SIGKILL after ``grace_s``).
        Returns whether anything was running."""
        stopped = False
        roles = [(r, WORKER_CLASS) for r in self._worker_roles()] + [("master", MASTER_CLASS)]
        for role, needle in roles:
            pid_file = self._dir / f"{role}.pid"
            pid = _read_pid(pid_file)
            if pid is not None and _pid_alive(pid, needle):
                stopped = True
                self._terminate(pid, needle, grace_s)
                log.info("spark daemon stopped", role=role, pid=pid)
            pid_file.unlink(missing_ok=True)
        self.master_url_file.unlink(missing_ok=True)
        self.webui_file.unlink(missing_ok=True)
        return stopped

    def _terminate(self, pid: int, needle: str, grace_s: float) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = self._clock() + grace_s
        while self._clock() < deadline and _pid_alive(pid, needle):
            time.sleep(0.2)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        if _pid_alive(pid, needle):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)

