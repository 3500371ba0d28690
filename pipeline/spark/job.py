"""The Structured Streaming job: its config, its stages derived once, assembled once.

Dataflow (ARCHITECTURE §1; each stage in :mod:`pipeline.spark.stages`)::

    read (P.in.<workload>.<stream> or the [inputs] topics, earliest)
      → decode (header check + from_avro PERMISSIVE; [inputs]: avro | avro-raw | json)
      → validate ─ rejected ─→ dead_letter → P.deadletter
          passthrough: re-encode → P.results
          join: envelope → route (hash | ATR, Gu et al. §2; Spark SQL, explode replicas)
                + ticks → join (groupBy(route_key).transformWithStateInPandas(JoinProcessor))
                → encode: kind=result → join_result → P.results ;
                          kind=metric → operator_metrics → P.metrics
      → sink

:func:`job_stages` is the one place that reads the whole :class:`JobConfig`: it derives
each stage's small frozen config from the spec and settings, once; :func:`assemble` wires
the stages with them and :func:`start_job` starts the sink.

One query, one checkpoint, one Kafka sink with a computed ``topic`` column: a micro-batch's
outputs of every kind commit together. ``[output] delivery = "at-least-once"`` (default):
Spark's Kafka sink; after a restart the last micro-batch may be written again, and result
ids (ARCHITECTURE §4) make those duplicates removable (the consumer/evaluator dedups by
id). ``"exactly-once"``: one Kafka transaction per micro-batch with its batch id
(:mod:`pipeline.spark.exactly_once`), so read_committed consumers see each result once.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from connectors.io.confluent import wire_header
from connectors.io.serde import AvroSerde
from connectors.io.topics import input_topic, schema_for, validate_topic
from pipeline.diffusion.batches import BatchConfig
from pipeline.diffusion.routing import RouterConfig
from pipeline.runtime.inputs import InputPlan
from pipeline.runtime.instance import InstanceConfig
from pipeline.spark.decode import DecodeConfig
from pipeline.spark.exactly_once import BatchWriter, ExactlyOnceConfig, commits_topic
from pipeline.spark.inputs import attribute_names, envelope_columns, payload_schemas
from pipeline.spark.processor import ProcessorConfig, fail_task_batch
from pipeline.spark.route_log import RouteStore
from pipeline.spark.stages import (
    DecodeStage,
    EncodeConfig,
    EnvelopeConfig,
    PassthroughConfig,
    ReadConfig,
    RouteConfig,
    SingleObject,
    SinkConfig,
    decoded,
    encoded,
    envelope,
    joined,
    passthrough,
    read,
    route,
    start_sink,
    validated,
)
from pipeline.spec.model import Spec

Mode = Literal["passthrough", "join"]
#: query id → the exactly-once writer of a running query (its transactions, for the bench)
WRITERS: dict[str, BatchWriter] = {}


@dataclass(frozen=True)
class JobConfig:
    """Everything one run of the job needs, resolved from spec + settings + CLI overrides."""

    spec: Spec
    mode: Mode
    bootstrap: str
    topic_prefix: str
    workload: str
    checkpoint: str
    client_options: Mapping[str, str]
    idle_flush_ms: int
    #: the inputs checked against their schema files, and the result schema
    plan: InputPlan | None = None
    #: librdkafka security settings of the driver's own clients (the exactly-once sink)
    driver_client_config: Mapping[str, str] = field(default_factory=dict)
    #: ``[output] format = "avro-confluent"``: the registry ids of the result, metrics
    #: and dead-letter schemas (their records carry the Confluent header)
    output_ids: tuple[int, int, int] | None = None
    #: the spec's name (``harvest submit``: its file's stem), first in the query's name
    name: str = "harvest"

    @property
    def query_name(self) -> str:
        """``<name>-<mode>-<prefix>``: the streaming query's name in the Spark UI."""
        return f"{self.name}-{self.mode}-{self.topic_prefix}"

    @property
    def foreign(self) -> bool:
        """Reads the user's ``[inputs]`` topics (not harvest's own)."""
        return self.plan is not None and self.plan.foreign

    @property
    def input_topics(self) -> tuple[str, ...]:
        """The ``[inputs]`` topics, else ``P.in.<workload>.<stream>`` per stream."""
        if self.plan is not None and self.plan.foreign:
            return self.plan.topics
        return tuple(input_topic(self.topic_prefix, self.workload, s)
                     for s in self.spec.join.streams)

    @property
    def output_topics(self) -> tuple[str, str, str]:
        """``(results, metrics, deadletter)``: ``[output]``'s, by default ``P.results``,
        ``P.metrics``, ``P.deadletter``."""
        results, metrics, dead = self.spec.output.topics(self.topic_prefix)
        return validate_topic(results), validate_topic(metrics), validate_topic(dead)

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (logged at start)."""
        return {"name": self.name, "query": self.query_name, "mode": self.mode,
                "bootstrap": self.bootstrap,
                "topic_prefix": self.topic_prefix, "workload": self.workload,
                "checkpoint": self.checkpoint, "idle_flush_ms": self.idle_flush_ms,
                "inputs": list(self.input_topics), "spec": self.spec.model_dump(mode="json")}


def decode_config(cfg: JobConfig, serde: AvroSerde) -> DecodeConfig:
    """The input schema (by workload) and stream topics of ``cfg``."""
    name = schema_for(cfg.workload)
    return DecodeConfig(name, serde.schema_json(name), serde.fingerprint(name),
                        cfg.spec.join.streams, cfg.input_topics,
                        finite=predicate_attributes(cfg.spec))


def predicate_attributes(spec: Spec) -> tuple[str, ...]:
    """The record fields the join predicate reads (``[join] attribute``, or ``x``/``y``
    for ``distance``)."""
    join = spec.join
    if join.predicate == "distance":
        return (join.x, join.y)
    return (join.attribute,) if join.attribute else ()


def _kept_attributes(spec: Spec, instance: InstanceConfig) -> set[str]:
    """The attributes the join stage reads: the predicate's and the hash routing key."""
    router = RouterConfig.from_spec(spec)
    keep = set(instance.engine.predicate.attributes)
    if router.mode == "hash" and router.key_attribute:
        keep.add(router.key_attribute)
    return keep


def _instance_config(cfg: JobConfig, attributes: tuple[str, ...]) -> InstanceConfig:
    """What every instance needs: with payload, with coordinates derived from seq?"""
    plan = cfg.plan
    assert plan is not None
    offset_ids = plan.foreign and all(s.id_field is None for s in plan.streams)
    return InstanceConfig.from_spec(
        cfg.spec, attributes, payload=plan.has_payload,
        payload_separator=b"," if plan.output_format == "json" else b"",
        offset_ids=offset_ids, topics=cfg.input_topics)


def _single_object(serde: AvroSerde, name: str, schema_id: int | None = None
                   ) -> SingleObject:
    """How records of ``name`` are written: single-object, or with the Confluent header
    of ``schema_id``."""
    header = serde.header(name) if schema_id is None else wire_header(schema_id)
    return SingleObject(header, serde.schema_json(name))


def _output_records(cfg: JobConfig, serde: AvroSerde
                    ) -> tuple[SingleObject, SingleObject, SingleObject]:
    """The result, metrics and dead-letter records' headers and schemas."""
    ids: tuple[int | None, ...] = cfg.output_ids or (None, None, None)
    names = ("join_result", "operator_metrics", "dead_letter")
    result, metrics, dead = (_single_object(serde, n, i) for n, i in zip(names, ids,
                                                                          strict=True))
    return result, metrics, dead


def exactly_once_config(cfg: JobConfig) -> ExactlyOnceConfig:
    """The transactional sink of ``[output] delivery = "exactly-once"``."""
    return ExactlyOnceConfig(
        bootstrap=cfg.bootstrap, commits_topic=commits_topic(cfg.output_topics[0]),
        transaction_timeout_ms=cfg.spec.output.transaction_timeout_ms,
        client_config=cfg.driver_client_config)


def sink_config(cfg: JobConfig) -> SinkConfig:
    """The sink stage: Kafka sink, or transactions for ``delivery = "exactly-once"``."""
    exactly_once = (exactly_once_config(cfg) if cfg.spec.output.delivery == "exactly-once"
                    else None)
    return SinkConfig(
        topics=cfg.output_topics, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.spec.job.trigger_ms, client_options=cfg.client_options,
        query_name=cfg.query_name, exactly_once=exactly_once)


@dataclass(frozen=True)
class JoinStages:
    """The stages between validation and the sink in join mode."""

    envelope: EnvelopeConfig
    route: RouteConfig
    join: ProcessorConfig
    encode: EncodeConfig


@dataclass(frozen=True)
class JobStages:
    """Every stage's config; exactly one of ``passthrough`` and ``join`` is set."""

    read: ReadConfig
    decode: DecodeStage
    validate: SingleObject
    passthrough: PassthroughConfig | None
    join: JoinStages | None
    sink: SinkConfig


def _envelope_config(cfg: JobConfig, dcfg: DecodeConfig | None,
                     instance: InstanceConfig, attributes: tuple[str, ...]) -> EnvelopeConfig:
    """The join stage's columns: harvest's own topics (``dcfg``) or ``[inputs]``."""
    plan = cfg.plan
    assert plan is not None
    keep = frozenset(_kept_attributes(cfg.spec, instance))
    if dcfg is None:
        return EnvelopeConfig(own=False, fields=envelope_columns(plan),
                              attributes=attributes, keep=keep)
    fields = plan.streams[0].payload
    # the same payload fields, so the same payload schema, for every stream
    schema = next(iter(payload_schemas(plan).values())) if fields else {}
    return EnvelopeConfig(own=True, fields=dcfg.field_names, attributes=attributes,
                          keep=keep, payload_fields=fields, payload_schema=schema,
                          output_format=plan.output_format)


def route_store(cfg: JobConfig) -> RouteStore | None:
    """Adaptive ATR over G > 1 (any of ``[job] segment_keys = "least-loaded"``,
    ``adapt_master``, ``adapt_segment``): its routing state files in the checkpoint."""
    job = cfg.spec.job
    if job.routing != "atr" or job.groups == 1 or not job.adaptive:
        return None
    return RouteStore(cfg.checkpoint, BatchConfig.from_spec(cfg.spec))


def _join_stages(cfg: JobConfig, serde: AvroSerde, dcfg: DecodeConfig | None) -> JoinStages:
    """Envelope, route, join and encode of join mode."""
    assert cfg.plan is not None
    attributes = attribute_names(cfg.plan) if dcfg is None else dcfg.attribute_names
    icfg = _instance_config(cfg, attributes)
    routes = route_store(cfg)
    return JoinStages(
        envelope=_envelope_config(cfg, dcfg, icfg, attributes),
        route=RouteConfig(RouterConfig.from_spec(cfg.spec), cfg.checkpoint, routes),
        join=ProcessorConfig(icfg, idle_flush_ms=cfg.idle_flush_ms,
                             run_token=uuid.uuid4().hex, fail_batch=fail_task_batch(),
                             routes=routes),
        encode=EncodeConfig(cfg.output_topics, cfg.plan, *_output_records(cfg, serde)),
    )


def _passthrough_config(cfg: JobConfig, serde: AvroSerde, dcfg: DecodeConfig
                        ) -> PassthroughConfig:
    """Passthrough mode: the input schema's fields and record, the results and
    dead-letter topics."""
    results, _, deadletters = cfg.output_topics
    return PassthroughConfig(dcfg.field_names, (results, deadletters),
                             SingleObject(serde.header(dcfg.schema_name), dcfg.schema_json))


def job_stages(cfg: JobConfig, serde: AvroSerde,
               max_offsets_per_trigger: int | None) -> JobStages:
    """Each stage's config, derived once from ``cfg`` (harvest's own topics: one schema by
    workload; ``[inputs]``: the resolved input plan)."""
    if cfg.plan is None:
        raise ValueError("JobConfig.plan: resolve the inputs first (submit.job_config)")
    dcfg = None if cfg.foreign else decode_config(cfg, serde)
    own_passthrough = dcfg is not None and cfg.mode == "passthrough"
    return JobStages(
        read=ReadConfig(cfg.bootstrap, cfg.input_topics, max_offsets_per_trigger,
                        cfg.client_options, cfg.spec.job.max_staleness_ms,
                        cfg.spec.job.fetch_max_wait_ms, cfg.spec.job.thin_after_ms,
                        cfg.spec.job.thin_slice_ms),
        decode=DecodeStage(dcfg, cfg.plan),
        validate=_output_records(cfg, serde)[2],
        passthrough=(_passthrough_config(cfg, serde, dcfg)
                     if dcfg is not None and own_passthrough else None),
        join=None if own_passthrough else _join_stages(cfg, serde, dcfg),
        sink=sink_config(cfg),
    )


def assemble(spark: SparkSession, stages: JobStages) -> DataFrame:
    """read → decode → validate → (passthrough | envelope → route → join → encode): the
    job's output rows ``(topic, key, value)``."""
    rows = validated(decoded(read(spark, stages.read), stages.decode), stages.validate)
    if stages.passthrough is not None:
        return passthrough(rows, stages.passthrough)
    assert stages.join is not None
    join = stages.join
    env = envelope(rows, join.envelope)
    return encoded(joined(route(spark, env, join.route), join.join), join.encode)


def build_output(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                 max_offsets_per_trigger: int | None) -> DataFrame:
    """The job's output rows ``(topic, key, value)`` — the whole dataflow above but the
    sink."""
    return assemble(spark, job_stages(cfg, serde, max_offsets_per_trigger))


def start_job(spark: SparkSession, cfg: JobConfig, serde: AvroSerde) -> StreamingQuery:
    """Build the dataflow and start the query writing to Kafka: Spark's Kafka sink
    (at-least-once), or one Kafka transaction per micro-batch (exactly-once,
    :mod:`pipeline.spark.exactly_once`)."""
    stages = job_stages(cfg, serde, cfg.spec.job.max_offsets_per_trigger)
    query, writer = start_sink(assemble(spark, stages), stages.sink)
    if writer is not None:
        WRITERS[str(query.id)] = writer
    return query
