"""The Structured Streaming job: Kafka → decode → (pass-through | route → join) → Kafka.

Dataflow (ARCHITECTURE §1)::

    readStream kafka (P.in.<workload>.<stream> or the [inputs] topics, earliest)
      → decode (header check + from_avro PERMISSIVE; [inputs]: avro | avro-raw | json,
        pipeline.spark.inputs)  ─ rejected ─→ dead_letter → P.deadletter
      → valid envelope rows
          passthrough: re-encode → P.results
          join: route (hash | ATR, Gu et al. §2; Spark SQL, explode replicas) + ticks
                → groupBy(route_key).transformWithStateInPandas(JoinProcessor)
                → kind=result → join_result → P.results ; kind=metric → operator_metrics → P.metrics

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

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import IntegerType

from connectors.io.serde import AvroSerde
from connectors.io.topics import input_topic, schema_for, validate_topic
from pipeline.diffusion.routing import RouterConfig
from pipeline.runtime.frames import DEADLETTER_KEY, OUTPUT_DDL
from pipeline.runtime.inputs import InputPlan
from pipeline.runtime.instance import InstanceConfig
from pipeline.spark.decode import DecodeConfig, decode, kafka_source
from pipeline.spark.exactly_once import (
    BatchWriter,
    ExactlyOnceConfig,
    commits_topic,
    start_exactly_once_sink,
)
from pipeline.spark.inputs import (
    attribute_names,
    decode_inputs,
    envelope_columns,
    payload_column,
    payload_schemas,
)
from pipeline.spark.placement import checkpoint_placement
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from pipeline.spark.results import result_value
from pipeline.spark.routing import routed
from pipeline.spark.sinks import (
    dead_letter_value,
    passthrough_rows,
    rejected_value,
    single_object,
    start_kafka_sink,
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
        return {"mode": self.mode, "bootstrap": self.bootstrap,
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


def _routed(valid: DataFrame, spec: Spec, keys: tuple[int, ...] | None = None) -> DataFrame:
    """Rows with their ``route_key`` (rejected rows: :data:`DEADLETTER_KEY`); instance
    ``i`` gets key ``keys[i]`` (:func:`pipeline.spark.placement.checkpoint_placement`).

    Routing is a Spark SQL expression (:mod:`pipeline.spark.routing`: ATR's segment
    range or the key's hash, exploded into one row per copy), so the rows never leave
    the JVM; only the liveness ticks read two narrow columns in a pandas UDF. With one
    group every routing sends each row once to key 0 (``Router.route_batch`` with
    G = 1), so the key is a literal; the one key sees all input, so it needs no
    liveness ticks. (A run of batches holding only rejected records then does not
    re-arm its idle timer; with G > 1 their ticks do.)"""
    router = RouterConfig.from_spec(spec)
    if router.groups == 1:
        key = sf.when(sf.col("dl_value").isNotNull(), sf.lit(DEADLETTER_KEY)).otherwise(
            sf.lit(0))
        return valid.withColumn("route_key", key.cast(IntegerType()))
    return routed(valid, router, keys if keys is not None else tuple(range(router.groups)))


def _encode_outputs(out: DataFrame, cfg: JobConfig, serde: AvroSerde) -> DataFrame:
    """Processor rows → Kafka rows: results as join_result (+ payload; or JSON), metrics
    as operator_metrics."""
    assert cfg.plan is not None
    results, metrics, deadletters = cfg.output_topics
    kind = sf.col("kind")
    is_result = kind == "result"
    metric_rec = sf.struct(
        sf.col("time"), sf.col("wall_time"), sf.col("instance"), sf.col("z"),
        sf.from_json(sf.col("harvest_fractions"), "array<double>").alias("harvest_fractions"),
        sf.col("k_ms"), sf.col("recall_target"), sf.col("instant_recall_target"),
        sf.col("estimated_recall"), sf.col("measured_recall"), sf.col("rate_in"),
        sf.col("rate_out"), sf.col("queue_drops"), sf.col("state_size"),
        sf.from_json(sf.col("extra"), "map<string,double>").alias("extra"),
    )
    value: Column = (
        sf.when(is_result, result_value(cfg.plan, serde.schema_json("join_result")))
        .when(kind == "metric", single_object(metric_rec, serde.header("operator_metrics"),
                                              serde.schema_json("operator_metrics")))
        .otherwise(sf.coalesce(sf.col("dl_value"), rejected_value(
            serde.header("dead_letter"), serde.schema_json("dead_letter"))))
    )
    return out.select(
        sf.when(is_result, sf.lit(results)).when(kind == "metric", sf.lit(metrics))
        .otherwise(sf.lit(deadletters)).alias("topic"),
        sf.when(is_result, sf.col("id").cast("binary"))
        .when(kind == "metric", sf.col("instance").cast("binary"))
        .otherwise(sf.col("dl_key")).alias("key"),
        value.alias("value"),
    )


def _dead_letters(decoded: DataFrame, serde: AvroSerde) -> DataFrame:
    """``dl_key, dl_value``: the dead-letter record of a rejected row (null when valid)."""
    return decoded.select(
        "*", sf.col("key").alias("dl_key"),
        dead_letter_value(serde.header("dead_letter"), serde.schema_json("dead_letter"))
        .alias("dl_value"),
    )


def _own_envelope(decoded: DataFrame, dcfg: DecodeConfig, plan: InputPlan) -> DataFrame:
    """harvest's own topics: the envelope + the record's Kafka coordinates + payload."""
    fields = plan.streams[0].payload
    payload = sf.lit(None).cast("binary")
    if fields:
        struct = sf.struct(*[sf.col(f) for f in fields])
        schema = next(iter(payload_schemas(plan).values()))  # same fields for every stream
        payload = sf.when(sf.col("reason").isNull(), payload_column(
            struct, sf.col("stream"), schema, plan.output_format))
    return decoded.select(
        "stream_idx", *dcfg.field_names, sf.col("partition").cast("int").alias("partition"),
        sf.col("offset").cast("long").alias("offset"), payload.alias("payload"), "kafka_ms",
        "raw", "dl_key", "dl_value")


def _narrowed(env: DataFrame, attributes: tuple[str, ...], keep: set[str]) -> DataFrame:
    """``env`` without the columns no stage after it reads: ``stream`` (the instance
    uses ``stream_idx``) and each workload attribute outside ``keep`` (the predicate's
    attributes and the hash router's key). The rows then cross routing, the shuffle and
    the Arrow hand-over to Python narrower; the payload was built before, and
    :func:`pipeline.runtime.frames.events_of` reads only the predicate's
    attributes."""
    dropped = {"stream", *(a for a in attributes if a not in keep)}
    return env.select(*[c for c in env.columns if c not in dropped])


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


def build_output(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                 max_offsets_per_trigger: int | None) -> DataFrame:
    """The job's output rows ``(topic, key, value)`` — the whole dataflow above."""
    if cfg.plan is None:
        raise ValueError("JobConfig.plan: resolve the inputs first (submit.job_config)")
    raw = kafka_source(spark, cfg.bootstrap, cfg.input_topics, max_offsets_per_trigger,
                       cfg.client_options)
    results, _, deadletters = cfg.output_topics
    if cfg.foreign:
        decoded = _dead_letters(decode_inputs(raw, cfg.plan), serde)
        attributes = attribute_names(cfg.plan)
        env = decoded.select(*envelope_columns(cfg.plan), "raw", "dl_key", "dl_value")
    else:
        dcfg = decode_config(cfg, serde)
        decoded = _dead_letters(decode(raw, dcfg), serde)
        if cfg.mode == "passthrough":
            return passthrough_rows(decoded, dcfg.field_names, (results, deadletters),
                                    serde.header(dcfg.schema_name), dcfg.schema_json)
        attributes = dcfg.attribute_names
        env = _own_envelope(decoded, dcfg, cfg.plan)
    icfg = _instance_config(cfg, attributes)
    pconf = ProcessorConfig(icfg, idle_flush_ms=cfg.idle_flush_ms, run_token=uuid.uuid4().hex)
    env = _narrowed(env, attributes, _kept_attributes(cfg.spec, icfg))
    keys = checkpoint_placement(spark, cfg.checkpoint, cfg.spec.job.groups).keys
    joined = _routed(env, cfg.spec, keys).groupBy("route_key") \
        .transformWithStateInPandas(JoinProcessor(pconf), OUTPUT_DDL, "Append", "ProcessingTime")
    return _encode_outputs(joined, cfg, serde)


def observed(rows: DataFrame, cfg: JobConfig) -> DataFrame:
    """Count output rows per topic in the query progress (``observedMetrics['out']``)."""
    results, metrics, deadletters = cfg.output_topics
    return rows.observe(
        "out",
        sf.count(sf.when(sf.col("topic") == results, 1)).alias("results"),
        sf.count(sf.when(sf.col("topic") == metrics, 1)).alias("metrics"),
        sf.count(sf.when(sf.col("topic") == deadletters, 1)).alias("deadletters"),
    )


def exactly_once_config(cfg: JobConfig) -> ExactlyOnceConfig:
    """The transactional sink of ``[output] delivery = "exactly-once"``."""
    return ExactlyOnceConfig(
        bootstrap=cfg.bootstrap, commits_topic=commits_topic(cfg.output_topics[0]),
        transaction_timeout_ms=cfg.spec.output.transaction_timeout_ms,
        client_config=cfg.driver_client_config)


def start_job(spark: SparkSession, cfg: JobConfig, serde: AvroSerde) -> StreamingQuery:
    """Build the dataflow and start the query writing to Kafka: Spark's Kafka sink
    (at-least-once), or one Kafka transaction per micro-batch (exactly-once,
    :mod:`pipeline.spark.exactly_once`)."""
    rows = observed(build_output(spark, cfg, serde, cfg.spec.job.max_offsets_per_trigger), cfg)
    if cfg.spec.output.delivery == "exactly-once":
        query, writer = start_exactly_once_sink(
            rows, checkpoint=cfg.checkpoint, trigger_ms=cfg.spec.job.trigger_ms,
            query_name=f"harvest-{cfg.mode}-{cfg.topic_prefix}",
            config=exactly_once_config(cfg))
        WRITERS[str(query.id)] = writer
        return query
    return start_kafka_sink(
        rows, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.spec.job.trigger_ms, client_options=cfg.client_options,
        query_name=f"harvest-{cfg.mode}-{cfg.topic_prefix}",
    )
