"""Run the job: resolve its config, start the query, watch progress, stop when idle.

``--until-idle S`` stops the query once no micro-batch has read input for S seconds —
and, in join mode, once a micro-batch has run at least ``idle_flush_ms`` after the last
input, i.e. once the idle-flush timers have fired and their results are in Kafka.
Progress is logged every ``log_every_s`` seconds (batches, input rows, outputs by kind).
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from connectors.io.admin import ensure_topics, list_topic_names
from connectors.io.confluent import FORMAT as CONFLUENT
from connectors.io.registry_client import SchemaRegistry, value_subject
from connectors.io.serde import AvroSerde
from pipeline.core.errors import ConfigError, JobFailedError, KafkaUnavailableError, TopicError
from pipeline.core.logging import get_logger
from pipeline.core.secrets import ClientOptions, scrub
from pipeline.core.settings import Settings
from pipeline.runtime.inputs import (
    default_checkpoint,
    refresh_writers,
    resolve_inputs,
    spec_registry,
)
from pipeline.spark.inputs import NEW_SCHEMA_ID
from pipeline.spark.job import JobConfig, Mode, start_job
from pipeline.spec.model import Spec

log = get_logger(__name__)


@dataclass
class JobReport:
    """What one run did (printed as JSON by ``harvest submit``)."""

    batches: int = 0
    input_rows: int = 0
    results: int = 0
    metrics: int = 0
    deadletters: int = 0
    #: records dropped at the source as stale (``[job] max_staleness_ms``)
    stale: int = 0
    seconds: float = 0.0
    stopped: str = "running"
    #: wall milliseconds of each micro-batch that read input (``triggerExecution``)
    batch_ms: list[float] = field(default_factory=list)
    #: Spark's per-phase wall milliseconds of those batches (``durationMs``: addBatch,
    #: walCommit, queryPlanning, ...), to see where a batch's time goes
    phase_ms: dict[str, list[float]] = field(default_factory=dict)
    #: how often ``--max-restarts`` restarted the job from its checkpoint
    restarts: int = 0

    def add(self, other: JobReport) -> None:
        """Fold a later run's report (after a restart) into this one."""
        self.batches += other.batches
        self.input_rows += other.input_rows
        self.results += other.results
        self.metrics += other.metrics
        self.deadletters += other.deadletters
        self.stale += other.stale
        self.seconds = round(self.seconds + other.seconds, 2)
        self.stopped = other.stopped
        self.batch_ms += other.batch_ms
        for phase, values in other.phase_ms.items():
            self.phase_ms.setdefault(phase, []).extend(values)

    def to_json(self) -> dict[str, Any]:
        """Plain dict; batch durations summarized as p50/max, phases as p50."""
        data = asdict(self)
        durations = data.pop("batch_ms")
        data["batch_ms_p50"] = _p50(durations)
        data["batch_ms_max"] = max(durations) if durations else None
        phases = data.pop("phase_ms")
        data["phase_ms_p50"] = {k: _p50(v) for k, v in sorted(phases.items()) if v}
        return data


def _p50(values: list[float]) -> float | None:
    """The upper median (None for no values)."""
    return sorted(values)[len(values) // 2] if values else None


def _jaas_quote(text: str) -> str:
    """A JAAS option value in double quotes (backslash and quote escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_options(settings: Settings) -> ClientOptions:
    """Kafka Java-client security options (``kafka.``-prefixed by the caller).

    The password reaches Spark only inside ``sasl.jaas.config``, a per-query Kafka source
    and sink option: Spark keeps those options out of the checkpoint and redacts them in
    plans, and the returned mapping masks it in any ``repr`` (JobConfig's included). The CA
    of ``HARVEST_SSL_CA_LOCATION`` becomes a PEM truststore (Kafka clients >= 2.7).
    """
    settings.check_credentials()
    opts: dict[str, str | SecretStr] = {}
    if settings.security_protocol != "PLAINTEXT":
        opts["security.protocol"] = settings.security_protocol
    if settings.sasl_mechanism:
        opts["sasl.mechanism"] = settings.sasl_mechanism
    if settings.sasl_username and settings.sasl_password is not None:
        module = ("org.apache.kafka.common.security.scram.ScramLoginModule"
                  if (settings.sasl_mechanism or "").upper().startswith("SCRAM")
                  else "org.apache.kafka.common.security.plain.PlainLoginModule")
        opts["sasl.jaas.config"] = SecretStr(
            f"{module} required username={_jaas_quote(settings.sasl_username)} "
            f"password={_jaas_quote(settings.sasl_password.get_secret_value())};"
        )
    if settings.ssl_ca_location is not None:
        opts["ssl.truststore.type"] = "PEM"
        opts["ssl.truststore.location"] = str(Path(settings.ssl_ca_location).absolute())
    return ClientOptions(opts)


def check_spark_routing(spec: Spec) -> None:
    """What the Spark job cannot route (exit 2 naming the key): coordinated tuple routing
    (``job.routing = "ctr"``, it ships intermediate results between hosts), which runs in
    ``harvest bench diffusion``'s virtual cluster only (docs/NOTES.md, 'Load diffusion').
    Adaptive ATR runs in the job (:mod:`pipeline.spark.route_log`)."""
    if spec.job.routing == "ctr":
        raise ConfigError("job.routing: 'ctr' runs only in `harvest bench diffusion`'s "
                          "virtual cluster; the Spark job routes 'hash' or 'atr'")


def job_config(spec: Spec, settings: Settings, *, mode: Mode | None = None,
               checkpoint: str | None = None, topic_prefix: str | None = None,
               workload: str | None = None, name: str = "harvest") -> JobConfig:
    """Resolve spec ``[job]`` + settings + CLI overrides (CLI > spec > settings);
    ``name`` (the spec's) names the streaming query."""
    check_spark_routing(spec)
    prefix = topic_prefix or spec.job.topic_prefix
    if topic_prefix is None and spec.job.topic_prefix == "harvest":
        prefix = settings.topic_prefix
    resolved_mode: Mode = mode or spec.job.mode
    ck = checkpoint or spec.job.checkpoint or str(
        default_checkpoint(spec, settings.cache_dir, prefix, resolved_mode))
    if spec.inputs is not None and resolved_mode == "passthrough":
        raise ConfigError("--passthrough: re-encodes harvest's own input topics; "
                          "it does not apply to a spec with [inputs]")
    resolved_workload = workload or spec.job.workload
    cfg = JobConfig(
        spec=spec, mode=resolved_mode, bootstrap=settings.resolved_bootstrap(),
        topic_prefix=prefix, workload=resolved_workload,
        checkpoint=str(Path(ck).absolute()),
        client_options=java_client_options(settings),
        driver_client_config=settings.kafka_client_config(),
        idle_flush_ms=spec.job.idle_flush_ms, name=name,
        # the spec against its schema files: a ConfigError naming the key (exit 2)
        plan=resolve_inputs(spec, settings.schemas_dir, prefix=prefix,
                            workload=resolved_workload,
                            registry=spec_registry(spec, settings)),
    )
    _ = cfg.input_topics, cfg.output_topics  # ConfigError naming a bad prefix or workload
    if spec.output.format == CONFLUENT:
        registry = spec_registry(spec, settings)
        assert registry is not None
        cfg = dataclasses.replace(cfg, output_ids=register_outputs(cfg, registry, settings))
    return cfg


def register_outputs(cfg: JobConfig, registry: SchemaRegistry, settings: Settings
                     ) -> tuple[int, int, int]:
    """``[output] format = "avro-confluent"``: the result, ``operator_metrics`` and
    ``dead_letter`` schemas registered under ``<topic>-value`` of the results, metrics
    and dead-letter topics; their schema ids."""
    assert cfg.plan is not None
    serde = AvroSerde.from_dir(settings.schemas_dir)
    schemas = (cfg.plan.output_schema_json, serde.schema_json("operator_metrics"),
               serde.schema_json("dead_letter"))
    results, metrics, dead = (registry.register(value_subject(topic), schema)
                              for topic, schema in zip(cfg.output_topics, schemas, strict=True))
    return results, metrics, dead


def check_until_idle(cfg: JobConfig, until_idle_s: float | None) -> None:
    """``--until-idle`` must leave room for the idle flush (join mode)."""
    if until_idle_s is None or cfg.mode != "join":
        return
    need = (cfg.idle_flush_ms + cfg.spec.job.trigger_ms) / 1000.0
    if until_idle_s <= need:
        raise ConfigError(
            f"--until-idle: {until_idle_s:g} s must exceed job.idle_flush_ms + job.trigger_ms "
            f"= {need:g} s, or the idle flush would be cut off"
        )


def _ts_ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000.0


class ProgressWatch:
    """Accumulates query progress events (each batch once) into a :class:`JobReport`."""

    def __init__(self, report: JobReport) -> None:
        self.report = report
        self.seen: set[int] = set()
        self.last_input_ms: float | None = None  # wall end of the last batch with input
        self.last_batch_ms: float | None = None  # timestamp of the newest completed batch

    def update(self, progresses: list[Any]) -> bool:
        """Fold new progress events in; True if one of them read input."""
        got_input = False
        for p in progresses:
            if p.batchId in self.seen:
                continue
            self.seen.add(p.batchId)
            r = self.report
            r.batches += 1
            r.input_rows += int(p.numInputRows)
            out: Mapping[str, Any] = p.observedMetrics.get("out") or {}
            if out:
                r.results += int(out["results"])
                r.metrics += int(out["metrics"])
                r.deadletters += int(out["deadletters"])
            source = p.observedMetrics.get("source")  # a Row: no .get
            if source is not None:
                r.stale += int(source["stale"])
            ts = _ts_ms(p.timestamp)
            self.last_batch_ms = max(self.last_batch_ms or ts, ts)
            if int(p.numInputRows) > 0:
                got_input = True
                r.batch_ms.append(float(p.batchDuration))
                for phase, ms in (getattr(p, "durationMs", None) or {}).items():
                    r.phase_ms.setdefault(str(phase), []).append(float(ms))
                end = ts + float(p.batchDuration)
                self.last_input_ms = max(self.last_input_ms or end, end)
        return got_input

    def flushed(self, idle_flush_ms: int) -> bool:
        """A batch started at least ``idle_flush_ms`` after the last batch with input ended
        (so the processors' idle-flush timers were due in it)."""
        if self.last_input_ms is None or self.last_batch_ms is None:
            return True
        return self.last_batch_ms >= self.last_input_ms + idle_flush_ms


def watch(query: StreamingQuery, cfg: JobConfig, until_idle_s: float | None, *,
          clock: Callable[[], float] = time.monotonic, poll_s: float = 0.5,
          log_every_s: float = 10.0, max_s: float | None = None) -> JobReport:
    """Poll the query until it fails, is stopped, (``until_idle_s``) goes idle, or
    (``max_s``) has been watched that long."""
    report = JobReport()
    w = ProgressWatch(report)
    start = clock()
    idle_since: float | None = None
    next_log = start + log_every_s
    try:
        while query.isActive:
            now = clock()
            progresses = list(query.recentProgress)
            # the idle clock starts with the first batch and restarts on every input
            if progresses and (w.update(progresses) or idle_since is None):
                idle_since = now
            status = query.status
            if idle_since is not None and status.get("isTriggerActive") and status.get(
                    "isDataAvailable"):
                idle_since = now  # a micro-batch with input is still running: not idle
            if now >= next_log:
                log.info("job progress", **report.to_json(), idle_s=round(
                    now - idle_since, 1) if idle_since is not None else None)
                next_log = now + log_every_s
            if max_s is not None and now - start >= max_s:
                report.stopped = f"deadline of {max_s:g} s"
                break
            if (until_idle_s is not None and idle_since is not None
                    and now - idle_since >= until_idle_s
                    and (cfg.mode != "join" or w.flushed(cfg.idle_flush_ms))):
                report.stopped = f"idle for {until_idle_s:g} s"
                break
            time.sleep(poll_s)
        else:
            report.stopped = "query terminated"
    except KeyboardInterrupt:
        report.stopped = "interrupted"
    finally:
        exc = query.exception()
        query.stop()
        w.update(list(query.recentProgress))
        report.seconds = round(clock() - start, 2)
    if exc is not None:
        secrets = cfg.client_options.secrets() if isinstance(
            cfg.client_options, ClientOptions) else []
        failed = JobFailedError(scrub(f"streaming query {query.name!r} failed: {exc}", secrets))
        failed.report = report  # type: ignore[attr-defined]  # what it did before (supervise)
        raise failed
    return report


def prepare_topics(cfg: JobConfig, settings: Settings, *, inputs_timeout_s: float = 30.0,
                   clock: Callable[[], float] = time.monotonic) -> None:
    """Create the output topics (and harvest's own input topics) that do not exist yet
    (one partition each). The user's ``[inputs]`` topics are never created: one still
    missing after ``inputs_timeout_s`` raises :class:`TopicError` naming it."""
    client = settings.kafka_client_config()
    if cfg.foreign:
        wait_for_inputs(cfg, client, inputs_timeout_s, clock)
        ensure_topics(cfg.bootstrap, cfg.output_topics, client_config=client)
        return
    ensure_topics(cfg.bootstrap, [*cfg.input_topics, *cfg.output_topics],
                  client_config=client)


def wait_for_inputs(cfg: JobConfig, client: Mapping[str, Any], timeout_s: float,
                    clock: Callable[[], float] = time.monotonic) -> None:
    """Wait until every input topic exists; :class:`TopicError` naming the missing ones."""
    deadline = clock() + timeout_s
    while True:
        present = list_topic_names(cfg.bootstrap, client, timeout=max(1.0, min(
            10.0, deadline - clock())))
        missing = [t for t in cfg.input_topics if t not in present]
        if not missing:
            return
        if clock() >= deadline:
            raise TopicError(
                f"input topic(s) {missing} of [inputs] do not exist on {cfg.bootstrap} "
                f"after {timeout_s:g} s; harvest never creates them — create them or fix "
                "inputs.<stream>.topic")
        time.sleep(0.5)


def submit(spark: SparkSession, cfg: JobConfig, settings: Settings,
           until_idle_s: float | None) -> JobReport:
    """Create topics, start the job and watch it; returns the run's report."""
    check_until_idle(cfg, until_idle_s)
    serde = AvroSerde.from_dir(settings.schemas_dir)
    prepare_topics(cfg, settings)
    log.info("job starting", **{k: v for k, v in cfg.snapshot().items() if k != "spec"})
    query = start_job(spark, cfg, serde)
    report = watch(query, cfg, until_idle_s)
    log.info("job stopped", **report.to_json())
    return report


#: the first wait before a restart; it doubles with every further failure, up to the cap
RESTART_BACKOFF_S = 2.0
RESTART_BACKOFF_MAX_S = 60.0
#: what a restart recovers from: the query failed (a broker outage the Kafka source or
#: sink could not ride out, a lost executor, ...), or the broker did not answer the
#: restarted job's topic set-up
RESTARTABLE: tuple[type[Exception], ...] = (JobFailedError, KafkaUnavailableError)


def supervise(run_once: Callable[[], JobReport], max_restarts: int, *,
              backoff_s: float = RESTART_BACKOFF_S,
              max_backoff_s: float = RESTART_BACKOFF_MAX_S,
              sleep: Callable[[float], None] = time.sleep) -> JobReport:
    """Run the job; after a failure start it again from its checkpoint (``run_once``
    builds a new query on the same checkpoint), waiting ``backoff_s``, then twice as long
    after each further failure (at most ``max_backoff_s``), logging each restart. The
    ``max_restarts + 1``-th failure is raised (:class:`JobFailedError`, exit 1)."""
    total = JobReport()
    failures = 0
    while True:
        try:
            report = run_once()
        except RESTARTABLE as exc:
            partial = getattr(exc, "report", None)
            if isinstance(partial, JobReport):
                total.add(partial)
            failures += 1
            if failures > max_restarts:
                raise JobFailedError(
                    f"the job failed {failures} times, giving up (--max-restarts "
                    f"{max_restarts}); last failure: {exc}") from exc
            delay = min(max_backoff_s, backoff_s * 2 ** (failures - 1))
            log.warning("job restart", restart=failures, max_restarts=max_restarts,
                        backoff_s=delay, error=str(exc)[:2000])
            sleep(delay)
            continue
        total.add(report)
        total.restarts = failures
        return total


def new_schema_ids(failure: str) -> frozenset[int]:
    """The schema ids a failed query's error names as new (``avro-confluent`` inputs).

    >>> sorted(new_schema_ids("... harvest: new schema id 7 (topic t, subject t-value)"))
    [7]
    """
    return frozenset(int(m) for m in re.findall(re.escape(NEW_SCHEMA_ID) + r"(\d+)", failure))


@dataclass
class Evolving:
    """The job's config as its schema ids evolve, and the ids already re-planned."""

    cfg: JobConfig
    planned: set[int] = field(default_factory=set)


def submit_evolving(spark: SparkSession, state: Evolving, settings: Settings,
                    until_idle_s: float | None) -> JobReport:
    """:func:`submit`; a run that failed on schema ids its plan does not know restarts at
    once from its checkpoint with the registry re-read (:func:`refresh_writers`): the ids
    a subject has now decode, the others become dead letters. Such a planned restart does
    not count against ``--max-restarts``; an id already re-planned failing again does."""
    total = JobReport()
    while True:
        try:
            report = submit(spark, state.cfg, settings, until_idle_s)
        except JobFailedError as exc:
            ids = new_schema_ids(str(exc)) - state.planned
            registry = spec_registry(state.cfg.spec, settings)
            partial = getattr(exc, "report", None)
            if isinstance(partial, JobReport):
                total.add(partial)
            if not ids or registry is None or state.cfg.plan is None:
                exc.report = total  # type: ignore[attr-defined]  # every run's (supervise)
                raise
            state.planned |= ids
            state.cfg = dataclasses.replace(
                state.cfg, plan=refresh_writers(state.cfg.plan, registry, frozenset(ids)))
            log.warning("job restart: new schema ids, registry re-read", ids=sorted(ids))
            continue
        total.add(report)
        return total


def submit_supervised(spark: SparkSession, cfg: JobConfig, settings: Settings,
                      until_idle_s: float | None, max_restarts: int) -> JobReport:
    """:func:`submit_evolving` under :func:`supervise` (``harvest submit --max-restarts
    N``). A restarted run's ``--until-idle`` clock starts with its first micro-batch."""
    state = Evolving(cfg)
    return supervise(lambda: submit_evolving(spark, state, settings, until_idle_s),
                     max_restarts)


def report_line(report: JobReport) -> str:
    """The JSON line ``harvest submit`` prints on stdout."""
    return json.dumps(report.to_json(), sort_keys=True)
