"""The local single-node Kafka broker (Apache Kafka 4.x, KRaft, combined broker+controller).

`harvest kafka up|down|status` and the tests' ``kafka_bootstrap`` fixture use
:class:`LocalKafka`. Everything lives under ``Settings.kafka_dir`` (``.cache/kafka``)::

    data/              KRaft metadata + topic logs (formatted once, reused afterwards)
    logs/server.log    the broker's log4j2 log;  logs/console.log  JVM stdout/stderr
    server.properties  rendered from infra/kafka/server.properties.template
    kafka.pid          pid of the running JVM
    ports.json         the listener ports last used (reused when still free)
    bootstrap          host:port of the running broker (read by Settings.resolved_bootstrap)

The JVM runs detached (own session), so it outlives the command that started it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from connectors.io.admin import wait_for_broker
from connectors.launch.broker_config import (
    BrokerConfig,
    Ports,
    java_command,
    new_cluster_id,
    pick_ports,
    render_properties,
)
from connectors.launch.jars import check_java, find_java, kafka_jars
from pipeline.core.errors import InfraError, KafkaUnavailableError
from pipeline.core.logging import get_logger
from pipeline.core.procs import process_runs

log = get_logger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class BrokerStatus:
    """What `harvest kafka status` reports."""

    running: bool
    bootstrap: str | None
    pid: int | None
    log_file: Path
    started: bool = False
    startup_s: float | None = None
    answering: bool = False

    def describe(self) -> str:
        """One human-readable line."""
        if not self.running:
            return f"kafka: stopped (log {self.log_file})"
        state = "started" if self.started else "running"
        took = f" in {self.startup_s:.1f} s" if self.startup_s is not None else ""
        health = "" if self.answering else " but NOT answering metadata requests"
        return (
            f"kafka: {state}{took} at {self.bootstrap} (pid {self.pid}){health}; "
            f"log {self.log_file}"
        )


def read_pid(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` (None when missing or unreadable)."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def is_broker_process(pid: int) -> bool:
    """True when ``pid`` is a live (not zombie) JVM running ``kafka.Kafka``."""
    return process_runs(pid, b"kafka.Kafka")


def log_tail(*paths: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of each existing file, labelled, for error messages."""
    parts = []
    for path in paths:
        if path.exists():
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- last {len(text)} lines of {path} ---\n" + "\n".join(text))
    return "\n".join(parts) if parts else "(no log written)"


class LocalKafka:
    """Start, stop and inspect the local broker described by a :class:`BrokerConfig`."""

    def __init__(self, config: BrokerConfig, clock: Clock = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._proc: subprocess.Popen[bytes] | None = None

    # -- state on disk ----------------------------------------------------------------
    def _previous_ports(self) -> Ports | None:
        try:
            raw = json.loads(self.config.ports_file.read_text())
            return Ports(int(raw["broker"]), int(raw["controller"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _bootstrap(self) -> str | None:
        try:
            return self.config.bootstrap_file.read_text().strip() or None
        except OSError:
            return None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialize up/down across processes (parallel test sessions share the broker)."""
        self.config.kafka_dir.mkdir(parents=True, exist_ok=True)
        with self.config.lock_file.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _clear_runtime_files(self) -> None:
        for path in (self.config.pid_file, self.config.bootstrap_file):
            path.unlink(missing_ok=True)

    # -- public API ------------------------------------------------------------------
    def status(self, probe_timeout: float = 3.0) -> BrokerStatus:
        """Running (pid alive) or stopped, the address, and whether it answers metadata."""
        pid = read_pid(self.config.pid_file)
        if pid is None or not is_broker_process(pid):
            return BrokerStatus(False, None, None, self.config.server_log)
        bootstrap = self._bootstrap()
        answering = False
        if bootstrap:
            try:
                wait_for_broker(bootstrap, timeout=probe_timeout, probe_timeout=probe_timeout)
                answering = True
            except KafkaUnavailableError:
                answering = False
        return BrokerStatus(True, bootstrap, pid, self.config.server_log, answering=answering)

    def up(self, timeout: float | None = None) -> BrokerStatus:
        """Start the broker unless it already runs; return once it answers metadata.

        Raises :class:`InfraError` for missing Java/jars or a failed format, and
        :class:`KafkaUnavailableError` (with the log tail) when the JVM exits early or
        does not answer within ``timeout`` (default ``start_timeout_s``, 60 s).
        """
        limit = self.config.start_timeout_s if timeout is None else timeout
        java = find_java(self.config.java_home)
        kafka_jars(self.config.jars_dir)
        with self._locked():
            pid = read_pid(self.config.pid_file)
            if pid is not None and is_broker_process(pid):
                return self._await_existing(pid, limit)
            self._clear_runtime_files()
            check_java(java)
            return self._start(java, limit)

    def down(self) -> bool:
        """Stop the broker: SIGTERM, wait ``stop_timeout_s``, then SIGKILL. True if it ran."""
        with self._locked():
            pid = read_pid(self.config.pid_file)
            running = pid is not None and is_broker_process(pid)
            if running:
                assert pid is not None
                self._terminate(pid)
            self._clear_runtime_files()
            return running

    # -- internals -------------------------------------------------------------------
    def _await_existing(self, pid: int, limit: float) -> BrokerStatus:
        bootstrap = self._bootstrap()
        if bootstrap is None:
            raise KafkaUnavailableError(
                f"a broker runs with pid {pid} but {self.config.bootstrap_file} is missing; "
                "run `harvest kafka down` and `harvest kafka up` again"
            )
        try:
            wait_for_broker(bootstrap, timeout=limit)
        except KafkaUnavailableError as exc:
            raise KafkaUnavailableError(
                f"broker pid {pid} at {bootstrap} does not answer: {exc}; "
                f"try `harvest kafka down` then `up`\n{self._tail()}"
            ) from exc
        return BrokerStatus(True, bootstrap, pid, self.config.server_log, answering=True)

    def _tail(self) -> str:
        return log_tail(self.config.server_log, self.config.console_log)

    def _format_storage(self, java: Path) -> None:
        """Format the KRaft metadata directory once (``StorageTool format --standalone``)."""
        if (self.config.data_dir / "meta.properties").exists():
            return
        cluster_id = new_cluster_id()
        cmd = java_command(
            self.config, java, "kafka.tools.StorageTool", "format", "--standalone",
            "--ignore-formatted", "-t", cluster_id, "-c", str(self.config.properties_file),
        )
        log.info("formatting kafka storage", data_dir=str(self.config.data_dir),
                 cluster_id=cluster_id)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InfraError(f"kafka storage format failed to run: {exc}") from exc
        if done.returncode != 0:
            raise InfraError(
                f"kafka storage format exited with code {done.returncode} for "
                f"{self.config.data_dir}:\n{(done.stdout + done.stderr)[-3000:]}"
            )

    def _start(self, java: Path, limit: float) -> BrokerStatus:
        cfg = self.config
        start = self._clock()
        for directory in (cfg.data_dir, cfg.logs_dir):
            directory.mkdir(parents=True, exist_ok=True)
        if not cfg.template.is_file():
            raise InfraError(f"broker config template missing: {cfg.template}")
        ports = pick_ports(cfg.preferred_port, self._previous_ports(), cfg.host)
        if ports.broker != cfg.preferred_port:
            log.warning("preferred kafka port busy; using another",
                        preferred=cfg.preferred_port, port=ports.broker)
        cfg.properties_file.write_text(
            render_properties(cfg.template.read_text(), ports, cfg.data_dir)
        )
        cfg.ports_file.write_text(
            json.dumps({"broker": ports.broker, "controller": ports.controller})
        )
        self._format_storage(java)
        bootstrap = f"{cfg.host}:{ports.broker}"
        cmd = java_command(cfg, java, "kafka.Kafka", str(cfg.properties_file))
        with cfg.console_log.open("ab") as console:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                cwd=cfg.kafka_dir, start_new_session=True,
            )
        pid = self._proc.pid
        cfg.pid_file.write_text(f"{pid}\n")
        log.info("kafka starting", pid=pid, bootstrap=bootstrap, log=str(cfg.server_log))
        self._wait_started(pid, bootstrap, start, limit)
        cfg.bootstrap_file.write_text(bootstrap + "\n")
        took = self._clock() - start
        log.info("kafka ready", bootstrap=bootstrap, pid=pid, seconds=round(took, 1))
        return BrokerStatus(True, bootstrap, pid, cfg.server_log, started=True,
                            startup_s=took, answering=True)

    def _wait_started(self, pid: int, bootstrap: str, start: float, limit: float) -> None:
        next_report = 5.0
        while True:
            elapsed = self._clock() - start
            if self._proc is not None and self._proc.poll() is not None:
                code = self._proc.returncode
                self._clear_runtime_files()
                raise KafkaUnavailableError(
                    f"kafka (pid {pid}) exited with code {code} during start-up\n{self._tail()}"
                )
            if elapsed >= limit:
                self._terminate(pid)
                self._clear_runtime_files()
                raise KafkaUnavailableError(
                    f"kafka at {bootstrap} did not answer within {limit:g} s; stopped it\n"
                    f"{self._tail()}"
                )
            try:
                wait_for_broker(bootstrap, timeout=min(2.0, limit - elapsed), probe_timeout=1.0)
                return
            except KafkaUnavailableError:
                if elapsed >= next_report:
                    log.info("waiting for kafka", bootstrap=bootstrap,
                             elapsed_s=round(elapsed), timeout_s=limit)
                    next_report += 5.0

    def _terminate(self, pid: int) -> None:
        log.info("stopping kafka", pid=pid)
        self._signal(pid, signal.SIGTERM)
        if not self._wait_gone(pid, self.config.stop_timeout_s):
            log.warning("kafka ignored SIGTERM; killing", pid=pid,
                        waited_s=self.config.stop_timeout_s)
            self._signal(pid, signal.SIGKILL)
            if not self._wait_gone(pid, 10.0):
                raise InfraError(f"kafka pid {pid} survived SIGKILL")

    @staticmethod
    def _signal(pid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def _wait_gone(self, pid: int, seconds: float) -> bool:
        start = self._clock()
        while self._clock() - start < seconds:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    return True
            elif not is_broker_process(pid):
                return True
            time.sleep(0.2)
        return False
