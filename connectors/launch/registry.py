"""The local Schema Registry: Apicurio Registry, in memory, on 127.0.0.1.

`harvest registry up|down|status` and the tests' ``schema_registry`` fixture use
:class:`LocalRegistry`. It serves the Confluent-compatible API under
``/apis/ccompat/v7``, which is what harvest (and confluent-kafka's clients) talk to.
Everything lives under ``Settings.registry_dir`` (``.cache/registry``)::

    downloads/                     the distribution as fetched from Maven Central
    apicurio-registry-<version>/   the unpacked distribution (connectors.launch.registry_dist)
    logs/console.log               the JVM's output
    registry.pid                   pid of the running JVM
    port                           the HTTP port last used (reused when still free)
    url                            the Confluent-compatible base URL of the running registry
                                   (read by Settings.resolved_schema_registry_url)

Storage is in memory (H2): schemas live as long as the JVM. On start the global
compatibility level is set to ``BACKWARD``, Confluent's default (Apicurio's is none), so
an incompatible new version is refused with HTTP 409 as a team's registry would. The JVM
runs detached (own session), so it outlives the command that started it.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from connectors.launch.ports import LOOPBACK, choose_port
from connectors.launch.registry_dist import LAUNCHER, fetch_distribution, find_java21
from connectors.launch.service import Clock, ServiceProcess, locked, log_tail, read_int
from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)
API_PATH = "/apis/ccompat/v7"
#: Confluent Schema Registry's port, tried first
PREFERRED_PORT = 8081
#: the registry's command line contains this (a reused pid is not taken for it)
MARKER = b"apicurio-registry"
JVM_OPTIONS = ("-Xms32m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
DEFAULT_COMPATIBILITY = "BACKWARD"


@dataclass(frozen=True)
class RegistryConfig:
    """Where the local registry lives and how long start and stop may take."""

    registry_dir: Path
    java_home: Path | None = None
    host: str = LOOPBACK
    preferred_port: int = PREFERRED_PORT
    start_timeout_s: float = 120.0
    stop_timeout_s: float = 20.0

    @classmethod
    def from_settings(cls, settings: Settings) -> RegistryConfig:
        """The registry under ``HARVEST_CACHE_DIR/registry`` with ``HARVEST_JAVA_HOME``."""
        return cls(registry_dir=settings.registry_dir, java_home=settings.java_home)

    @property
    def pid_file(self) -> Path:
        return self.registry_dir / "registry.pid"

    @property
    def url_file(self) -> Path:
        return self.registry_dir / "url"

    @property
    def port_file(self) -> Path:
        return self.registry_dir / "port"

    @property
    def console_log(self) -> Path:
        return self.registry_dir / "logs" / "console.log"


@dataclass(frozen=True)
class RegistryStatus:
    """What `harvest registry status` reports."""

    running: bool
    url: str | None
    pid: int | None
    log_file: Path
    started: bool = False
    startup_s: float | None = None
    answering: bool = False

    def describe(self) -> str:
        """One human-readable line."""
        if not self.running:
            return f"registry: stopped (log {self.log_file})"
        state = "started" if self.started else "running"
        took = f" in {self.startup_s:.1f} s" if self.startup_s is not None else ""
        health = "" if self.answering else " but NOT answering"
        return (f"registry: {state}{took} at {self.url} (pid {self.pid}){health}; "
                f"log {self.log_file}")


def answers(url: str, timeout: float = 2.0) -> bool:
    """True when ``GET <url>/subjects`` returns 200 (the Confluent API is up)."""
    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def set_compatibility(url: str, level: str = DEFAULT_COMPATIBILITY, timeout: float = 10.0
                      ) -> None:
    """``PUT <url>/config {"compatibility": level}``: the registry's global level."""
    request = urllib.request.Request(
        f"{url}/config", method="PUT", data=json.dumps({"compatibility": level}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except (OSError, ValueError) as exc:
        raise InfraError(f"cannot set compatibility {level} on the registry at {url}: {exc}"
                         ) from exc


class LocalRegistry:
    """Start, stop and inspect the local Apicurio registry of a :class:`RegistryConfig`."""

    def __init__(self, config: RegistryConfig, clock: Clock = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._jvm = ServiceProcess("the schema registry", MARKER, clock)

    def _url(self) -> str | None:
        try:
            return self.config.url_file.read_text().strip() or None
        except OSError:
            return None

    def _running_pid(self) -> int | None:
        pid = read_int(self.config.pid_file)
        return pid if pid is not None and self._jvm.runs(pid) else None

    def _clear_runtime_files(self) -> None:
        for path in (self.config.pid_file, self.config.url_file):
            path.unlink(missing_ok=True)

    def status(self, probe_timeout: float = 3.0) -> RegistryStatus:
        """Running (pid alive) or stopped, its URL, and whether it answers."""
        pid = self._running_pid()
        if pid is None:
            return RegistryStatus(False, None, None, self.config.console_log)
        url = self._url()
        ok = url is not None and answers(url, probe_timeout)
        return RegistryStatus(True, url, pid, self.config.console_log, answering=ok)

    def up(self, timeout: float | None = None) -> RegistryStatus:
        """Start the registry unless it runs; return once its Confluent API answers.

        Fetches the distribution on first use. Raises :class:`InfraError` for a missing
        Java 21+, a failed download, a JVM that exits early or does not answer within
        ``timeout`` (default ``start_timeout_s``), with the log tail.
        """
        limit = self.config.start_timeout_s if timeout is None else timeout
        java = find_java21(self.config.java_home)
        home = fetch_distribution(self.config.registry_dir)
        with locked(self.config.registry_dir / ".lock"):
            pid = self._running_pid()
            if pid is not None:
                return self._await_existing(pid, limit)
            self._clear_runtime_files()
            return self._start(java, home, limit)

    def down(self) -> bool:
        """Stop the registry: SIGTERM, wait ``stop_timeout_s``, then SIGKILL. True if it ran."""
        with locked(self.config.registry_dir / ".lock"):
            pid = self._running_pid()
            if pid is not None:
                self._jvm.terminate(pid, self.config.stop_timeout_s)
            self._clear_runtime_files()
            return pid is not None

    def _await_existing(self, pid: int, limit: float) -> RegistryStatus:
        url = self._url()
        deadline = self._clock() + limit
        while url is not None and self._clock() < deadline:
            if answers(url):
                return RegistryStatus(True, url, pid, self.config.console_log, answering=True)
            time.sleep(0.5)
        raise InfraError(f"a registry runs with pid {pid} but does not answer at {url}; "
                         "run `harvest registry down` and `harvest registry up` again\n"
                         f"{log_tail(self.config.console_log)}")

    def command(self, java: Path, home: Path, port: int, management_port: int) -> list[str]:
        """The JVM command line: Quarkus on ``host:port`` (its management interface, built
        in, on another port of the same host), H2 in memory."""
        props = {
            "quarkus.http.host": self.config.host,
            "quarkus.http.port": str(port),
            "quarkus.management.host": self.config.host,
            "quarkus.management.port": str(management_port),
            "quarkus.http.access-log.enabled": "false",
            "apicurio.storage.kind": "sql",
            "apicurio.storage.sql.kind": "h2",
        }
        return [str(java), *JVM_OPTIONS, *(f"-D{k}={v}" for k, v in props.items()),
                "-jar", str(home / LAUNCHER)]

    def _start(self, java: Path, home: Path, limit: float) -> RegistryStatus:
        cfg = self.config
        start = self._clock()
        cfg.console_log.parent.mkdir(parents=True, exist_ok=True)
        port = choose_port([read_int(cfg.port_file), cfg.preferred_port], cfg.host)
        cfg.port_file.write_text(f"{port}\n")
        management = choose_port([], cfg.host, exclude=[port])
        url = f"http://{cfg.host}:{port}{API_PATH}"
        pid = self._jvm.launch(self.command(java, home, port, management), cfg.console_log,
                               cfg.registry_dir)
        cfg.pid_file.write_text(f"{pid}\n")
        log.info("schema registry starting", pid=pid, url=url, java=str(java))
        self._wait_started(pid, url, start, limit)
        try:
            set_compatibility(url)
        except InfraError:
            self._jvm.terminate(pid, self.config.stop_timeout_s)
            self._clear_runtime_files()
            raise
        cfg.url_file.write_text(url + "\n")
        took = self._clock() - start
        log.info("schema registry ready", url=url, pid=pid, seconds=round(took, 1))
        return RegistryStatus(True, url, pid, cfg.console_log, started=True, startup_s=took,
                              answering=True)

    def _wait_started(self, pid: int, url: str, start: float, limit: float) -> None:
        next_report = 5.0
        while not answers(url, timeout=1.0):
            elapsed = self._clock() - start
            code = self._jvm.exit_code()
            if code is not None:
                self._clear_runtime_files()
                raise InfraError(f"the schema registry (pid {pid}) exited with code "
                                 f"{code} during start-up\n"
                                 f"{log_tail(self.config.console_log)}")
            if elapsed >= limit:
                self._jvm.terminate(pid, self.config.stop_timeout_s)
                self._clear_runtime_files()
                raise InfraError(f"the schema registry at {url} did not answer within "
                                 f"{limit:g} s; stopped it\n{log_tail(self.config.console_log)}")
            if elapsed >= next_report:
                log.info("waiting for the schema registry", url=url, elapsed_s=round(elapsed))
                next_report += 5.0
            time.sleep(0.5)
