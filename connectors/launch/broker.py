"""The local single-node Kafka broker (Apache Kafka 4.x, KRaft, combined broker+controller).

`harvest kafka up|down|status` and the tests' ``kafka_bootstrap`` fixture use
:class:`LocalKafka`. Everything lives under ``Settings.kafka_dir`` (``.cache/kafka``)::

    data/              KRaft metadata + topic logs (formatted once, reused afterwards)
    logs/server.log    the broker's log4j2 log;  logs/console.log  JVM stdout/stderr
    server.properties  rendered from infra/kafka/server.properties.template
    kafka.pid          pid of the running JVM
    mode               ``plaintext`` or ``secure``: how the running broker was started
    ports.json         the listener ports last used (reused when still free)
    bootstrap          host:port of the running broker (read by Settings.resolved_bootstrap)
    secure/, clients/  the secure mode's own data directory, TLS material and client files
                       (`harvest kafka up --secure`, see connectors.launch.secure)

One broker runs at a time: starting one mode while the other runs is refused. The JVM
runs detached (own session), so it outlives the command that started it.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from connectors.io.admin import create_acls, wait_for_broker
from connectors.launch import secure as sec
from connectors.launch.broker_config import (
    BrokerConfig,
    Ports,
    java_command,
    new_cluster_id,
    pick_ports,
    render_properties,
)
from connectors.launch.cluster_layout import cluster_is_up
from connectors.launch.jars import check_java, find_java, kafka_jars
from connectors.launch.service import Clock, ServiceProcess, locked, log_tail, read_int
from pipeline.core.errors import InfraError, KafkaUnavailableError
from pipeline.core.logging import get_logger
from pipeline.core.procs import process_runs
from pipeline.core.secrets import ClientOptions

log = get_logger(__name__)
#: the broker's command line contains this (a reused pid is not taken for it)
MARKER = b"kafka.Kafka"


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
    secure: bool = False
    #: secure mode: where the per-principal client files are
    clients_dir: Path | None = None

    def describe(self) -> str:
        """One human-readable line."""
        if not self.running:
            return f"kafka: stopped (log {self.log_file})"
        state = "started" if self.started else "running"
        took = f" in {self.startup_s:.1f} s" if self.startup_s is not None else ""
        health = "" if self.answering else " but NOT answering metadata requests"
        mode = (f"secure: {sec.PROTOCOL} {sec.MECHANISM} + ACLs, client settings in "
                f"{self.clients_dir}/<principal>.env" if self.secure else "plaintext")
        return (
            f"kafka: {state}{took} at {self.bootstrap} (pid {self.pid}){health}; "
            f"mode {mode}; log {self.log_file}"
        )


def is_broker_process(pid: int) -> bool:
    """True when ``pid`` is a live (not zombie) JVM running ``kafka.Kafka``."""
    return process_runs(pid, MARKER)


def local_broker(config: BrokerConfig) -> LocalKafka:
    """The local broker of ``config`` in the mode that runs (or ran last) under its
    directory — for orchestrators (the demo) that use whichever broker is there."""
    secure = LocalKafka(config).running_secure()
    return LocalKafka(dataclasses.replace(config, secure=secure))


class LocalKafka:
    """Start, stop and inspect the local broker described by a :class:`BrokerConfig`."""

    def __init__(self, config: BrokerConfig, clock: Clock = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._jvm = ServiceProcess("kafka", MARKER, clock)

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

    def _clear_runtime_files(self) -> None:
        for path in (self.config.pid_file, self.config.bootstrap_file, self.config.mode_file):
            path.unlink(missing_ok=True)

    def running_secure(self) -> bool:
        """True when the recorded mode of the running broker is ``secure`` (a broker
        started before modes were recorded is plaintext)."""
        try:
            return self.config.mode_file.read_text().strip() == "secure"
        except OSError:
            return False

    def client_env(self, principal: str) -> dict[str, str]:
        """The ``HARVEST_*`` settings of ``principal`` from ``clients/<principal>.env``
        (written by ``up`` in secure mode); :class:`InfraError` when there is none."""
        path = self.config.secure_layout.client_file(principal)
        try:
            return sec.read_env_file(path)
        except OSError as exc:
            raise InfraError(f"no client settings for {principal!r}: {exc}; start the secure "
                             "broker with `harvest kafka up --secure`") from exc

    def _credentials(self) -> sec.Credentials:
        return sec.Credentials.load(self.config.secure_layout.credentials_file)

    def admin_options(self, secure: bool | None = None) -> ClientOptions:
        """Client settings the launcher itself uses: none for plaintext, ``admin`` over
        SASL_SSL for the secure broker (``secure`` None: the running broker's mode)."""
        if not (self.running_secure() if secure is None else secure):
            return ClientOptions()
        return sec.client_options(self.config.secure_layout, self._credentials(), "admin")

    def _status(self, pid: int, bootstrap: str | None, **kw: object) -> BrokerStatus:
        secure = self.running_secure()
        clients = self.config.secure_layout.clients_dir if secure else None
        return BrokerStatus(True, bootstrap, pid, self.config.server_log, secure=secure,
                            clients_dir=clients, **kw)  # type: ignore[arg-type]

    # -- public API ------------------------------------------------------------------
    def status(self, probe_timeout: float = 3.0) -> BrokerStatus:
        """Running (pid alive) or stopped, the address, and whether it answers metadata."""
        pid = read_int(self.config.pid_file)
        if pid is None or not is_broker_process(pid):
            return BrokerStatus(False, None, None, self.config.server_log)
        bootstrap = self._bootstrap()
        answering = False
        if bootstrap:
            try:
                wait_for_broker(bootstrap, timeout=probe_timeout, probe_timeout=probe_timeout,
                                client_config=self.admin_options())
                answering = True
            except (KafkaUnavailableError, InfraError):
                answering = False
        return self._status(pid, bootstrap, answering=answering)

    def up(self, timeout: float | None = None) -> BrokerStatus:
        """Start the broker unless it already runs; return once it answers metadata.

        Raises :class:`InfraError` for missing Java/jars or a failed format, or when a
        broker of the other mode (plaintext / ``secure``) already runs, and
        :class:`KafkaUnavailableError` (with the log tail) when the JVM exits early or
        does not answer within ``timeout`` (default ``start_timeout_s``, 60 s).
        """
        limit = self.config.start_timeout_s if timeout is None else timeout
        java = find_java(self.config.java_home)
        kafka_jars(self.config.jars_dir)
        cluster = None if self.config.voters else cluster_is_up(self.config.kafka_dir)
        if cluster is not None:
            raise InfraError(
                f"a {cluster.nodes}-node cluster runs under {self.config.kafka_dir} at "
                f"{cluster.bootstrap}; one broker or cluster runs at a time: stop it with "
                "`harvest kafka down` first")
        with locked(self.config.lock_file):
            pid = read_int(self.config.pid_file)
            if pid is not None and is_broker_process(pid):
                running = "secure" if self.running_secure() else "plaintext"
                if running != self.config.mode:
                    raise InfraError(
                        f"a {running} broker already runs under {self.config.kafka_dir} "
                        f"(pid {pid} at {self._bootstrap()}); one broker runs at a time: stop "
                        f"it with `harvest kafka down`, then start the {self.config.mode} one"
                    )
                return self._await_existing(pid, limit)
            self._clear_runtime_files()
            check_java(java)
            return self._start(java, limit)

    def down(self) -> bool:
        """Stop the broker: SIGTERM, wait ``stop_timeout_s``, then SIGKILL. True if it ran."""
        with locked(self.config.lock_file):
            pid = read_int(self.config.pid_file)
            running = pid is not None and is_broker_process(pid)
            if running:
                assert pid is not None
                self._jvm.terminate(pid, self.config.stop_timeout_s)
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
            wait_for_broker(bootstrap, timeout=limit, client_config=self.admin_options())
        except KafkaUnavailableError as exc:
            raise KafkaUnavailableError(
                f"broker pid {pid} at {bootstrap} does not answer: {exc}; "
                f"try `harvest kafka down` then `up`\n{self._tail()}"
            ) from exc
        if self.config.secure:  # the bootstrap address may be new to the files
            sec.write_client_files(self.config.secure_layout, self._credentials(), bootstrap)
        return self._status(pid, bootstrap, answering=True)

    def _tail(self) -> str:
        return log_tail(self.config.server_log, self.config.console_log)

    def _formatted(self) -> bool:
        return (self.config.data_dir / "meta.properties").exists()

    def _format_storage(self, java: Path, creds: sec.Credentials | None = None) -> None:
        """Format the KRaft metadata directory once (``StorageTool format --standalone``);
        secure mode adds every principal's SCRAM credential (``--add-scram``) through a
        0600 Java argument file, so no password appears on a command line."""
        if self._formatted():
            return
        cluster_id = self.config.cluster_id or new_cluster_id()
        quorum = [] if self.config.voters else ["--standalone"]
        args = ["format", *quorum, "--ignore-formatted", "-t", cluster_id,
                "-c", str(self.config.properties_file)]
        argfile = self.config.kafka_dir / ".format.args"
        if creds is not None:
            quoted = " ".join(f'"{a}"' for a in ["kafka.tools.StorageTool", *args,
                                                  *sec.scram_format_args(creds)])
            sec.write_private(argfile, quoted + "\n")
            cmd = java_command(self.config, java, f"@{argfile}")
        else:
            cmd = java_command(self.config, java, "kafka.tools.StorageTool", *args)
        log.info("formatting kafka storage", data_dir=str(self.config.data_dir),
                 cluster_id=cluster_id, scram_users=len(sec.PRINCIPALS) + 1 if creds else 0)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InfraError(f"kafka storage format failed to run: {exc}") from exc
        finally:
            argfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise InfraError(
                f"kafka storage format exited with code {done.returncode} for "
                f"{self.config.data_dir}:\n{done.stderr[-3000:]}"
            )

    def _prepare_secure(self, java: Path) -> sec.Credentials:
        return prepare_secure(java, self.config.secure_layout, fresh=not self._formatted())

    def _render(self, ports: Ports, creds: sec.Credentials | None) -> None:
        cfg = self.config
        text = render_properties(cfg.template.read_text(), ports, cfg.data_dir,
                                 node_id=cfg.node_id, voters=cfg.voters)
        if creds is None:
            cfg.properties_file.write_text(text)
            return
        if not cfg.secure_template.is_file():
            raise InfraError(f"secure broker template missing: {cfg.secure_template}")
        extra = sec.render_secure_overlay(cfg.secure_template.read_text(), cfg.secure_layout,
                                          creds, ports.broker, ports.controller)
        sec.write_private(cfg.properties_file, sec.overlay_properties(text, extra))

    def grant(self, bootstrap: str, creds: sec.Credentials) -> None:
        """The ACLs of :data:`connectors.launch.secure.ACLS` (as admin) and client files."""
        layout = self.config.secure_layout
        admin = sec.client_options(layout, creds, "admin")
        count = create_acls(bootstrap, sec.ACLS, client_config=admin)
        files = sec.write_client_files(layout, creds, bootstrap)
        log.info("acls granted; client files written", acls=count,
                 clients=str(layout.clients_dir), principals=list(sec.PRINCIPALS),
                 files=len(files))

    def _start(self, java: Path, limit: float) -> BrokerStatus:
        cfg = self.config
        start = self._clock()
        creds = self._prepare_secure(java) if cfg.secure else None
        ports = pick_ports(cfg.preferred_port, self._previous_ports(), cfg.host)
        if ports.broker != cfg.preferred_port:
            log.warning("preferred kafka port busy; using another",
                        preferred=cfg.preferred_port, port=ports.broker)
        pid = self.launch(java, ports, creds)
        bootstrap = f"{cfg.host}:{ports.broker}"
        self.await_started(pid, start, limit)
        if creds is not None:
            try:
                self.grant(bootstrap, creds)
            except Exception:
                self._jvm.terminate(pid, self.config.stop_timeout_s)
                self._clear_runtime_files()
                raise
        cfg.bootstrap_file.write_text(bootstrap + "\n")
        took = self._clock() - start
        log.info("kafka ready", bootstrap=bootstrap, pid=pid, mode=cfg.mode,
                 seconds=round(took, 1))
        return self._status(pid, bootstrap, started=True, startup_s=took, answering=True)

    def launch(self, java: Path, ports: Ports, creds: sec.Credentials | None) -> int:
        """Render the properties for ``ports``, format the storage on first use and start
        the JVM without waiting for it (a cluster starts every node, then waits); its pid.
        Also how `harvest kafka start-node` starts one node of a cluster."""
        cfg = self.config
        for directory in (cfg.data_dir, cfg.logs_dir):
            directory.mkdir(parents=True, exist_ok=True)
        if not cfg.template.is_file():
            raise InfraError(f"broker config template missing: {cfg.template}")
        self._render(ports, creds)
        cfg.ports_file.write_text(
            json.dumps({"broker": ports.broker, "controller": ports.controller})
        )
        self._format_storage(java, creds)
        cmd = java_command(cfg, java, "kafka.Kafka", str(cfg.properties_file))
        pid = self._jvm.launch(cmd, cfg.console_log, cfg.kafka_dir)
        cfg.pid_file.write_text(f"{pid}\n")
        cfg.mode_file.write_text(cfg.mode + "\n")
        log.info("kafka starting", pid=pid, node=cfg.node_id, port=ports.broker,
                 mode=cfg.mode, log=str(cfg.server_log))
        return pid

    def await_started(self, pid: int, start: float, limit: float) -> None:
        """Wait until the JVM :meth:`launch` started answers metadata requests on its own
        port (see :meth:`_wait_started`)."""
        ports = self._previous_ports()
        if ports is None:
            raise InfraError(f"{self.config.ports_file}: no ports recorded for pid {pid}")
        probe = self.admin_options(self.config.secure)
        self._wait_started(pid, f"{self.config.host}:{ports.broker}", start, limit, probe)

    def stop(self, kill: bool = False) -> bool:
        """Stop the JVM: :meth:`down`, or SIGKILL at once with ``kill`` (fault injection:
        `harvest kafka stop-node --kill`). True if it ran."""
        if not kill:
            return self.down()
        with locked(self.config.lock_file):
            pid = read_int(self.config.pid_file)
            running = pid is not None and is_broker_process(pid)
            if running:
                assert pid is not None
                self._jvm.kill(pid)
            self._clear_runtime_files()
            return running

    def signal_stop(self) -> None:
        """SIGTERM to the JVM without waiting (a cluster stops all its nodes at once)."""
        pid = read_int(self.config.pid_file)
        if pid is not None and is_broker_process(pid):
            self._jvm.term(pid)

    def wait_stopped(self, pid: int, seconds: float) -> bool:
        """True once ``pid`` has exited, False when it still runs after ``seconds``."""
        return self._jvm.wait_gone(pid, seconds)

    def _wait_started(self, pid: int, bootstrap: str, start: float, limit: float,
                      probe: ClientOptions | None = None) -> None:
        next_report = 5.0
        while True:
            elapsed = self._clock() - start
            code = self._jvm.exit_code()
            if code is not None:
                self._clear_runtime_files()
                raise KafkaUnavailableError(
                    f"kafka (pid {pid}) exited with code {code} during start-up\n{self._tail()}"
                )
            if elapsed >= limit:
                self._jvm.terminate(pid, self.config.stop_timeout_s)
                self._clear_runtime_files()
                raise KafkaUnavailableError(
                    f"kafka at {bootstrap} did not answer within {limit:g} s; stopped it\n"
                    f"{self._tail()}"
                )
            try:
                wait_for_broker(bootstrap, timeout=min(2.0, limit - elapsed), probe_timeout=1.0,
                                client_config=probe)
                return
            except KafkaUnavailableError:
                if elapsed >= next_report:
                    log.info("waiting for kafka", bootstrap=bootstrap,
                             elapsed_s=round(elapsed), timeout_s=limit)
                    next_report += 5.0


def prepare_secure(java: Path, layout: sec.SecureLayout, *, fresh: bool) -> sec.Credentials:
    """Credentials (new with a new data directory: ``fresh``) and TLS material (made when
    missing) of the secure mode; a cluster prepares them once for all its nodes."""
    layout.secure_dir.mkdir(parents=True, exist_ok=True)
    layout.secure_dir.chmod(0o700)
    if fresh:  # a new data directory: new passwords, and keystores locked with them
        creds = sec.Credentials.generate()
        creds.save(layout.credentials_file)
    else:
        creds = sec.Credentials.load(layout.credentials_file)
    if fresh or not (layout.keystore.is_file() and layout.ca_pem.is_file()):
        sec.make_certificates(sec.keytool_for(java), layout, creds.keystore_password)
    return creds
