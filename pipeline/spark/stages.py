"""The Structured Streaming job's stages, each a function of its input rows and its own
small frozen config (derived once from the spec and settings by
:func:`pipeline.spark.job.job_stages`, assembled by :func:`pipeline.spark.job.build_output`):

    read      Kafka source of the input topics                        :class:`ReadConfig`
    decode    header check + ``from_avro`` / ``[inputs]`` decoders     :class:`DecodeStage`
    validate  a rejected row gets its ``dead_letter`` record           :class:`SingleObject`
    envelope  the columns the join reads, nothing more                 :class:`EnvelopeConfig`
    route     route key per row (ATR | adaptive ATR | hash, Gu et al. §2)
              + ticks                                                  :class:`RouteConfig`
    join      ``transformWithStateInPandas(JoinProcessor)``            :class:`ProcessorConfig`
    encode    processor rows → ``(topic, key, value)`` Kafka rows      :class:`EncodeConfig`
    sink      Kafka sink or one transaction per micro-batch            :class:`SinkConfig`

Passthrough mode replaces envelope → encode by :class:`PassthroughConfig`'s re-encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import IntegerType

from pipeline.diffusion.routing import RouterConfig
from pipeline.runtime.frames import DEADLETTER_KEY, output_ddl
from pipeline.runtime.inputs import InputPlan
from pipeline.spark.decode import FETCH_MAX_WAIT_MS, DecodeConfig, decode, kafka_source
from pipeline.spark.exactly_once import BatchWriter, ExactlyOnceConfig, start_exactly_once_sink
from pipeline.spark.inputs import decode_inputs, payload_column
from pipeline.spark.placement import checkpoint_placement
from pipeline.spark.processor import (
    ARROW_BYTES_KEY,
    ARROW_ROWS_KEY,
    JoinProcessor,
    ProcessorConfig,
    output_limits,
    spark_bytes,
)
from pipeline.spark.results import result_value
from pipeline.spark.route_log import RouteStore
from pipeline.spark.routing import routed
from pipeline.spark.sinks import (
    dead_letter_value,
    passthrough_rows,
    rejected_value,
    single_object,
    start_kafka_sink,
)


@dataclass(frozen=True)
class SingleObject:
    """How one record type is written: its single-object header (``C3 01`` +
    fingerprint) and its writer schema."""

    header: bytes
    schema_json: str


# ---------------------------------------------------------------------- read
@dataclass(frozen=True)
class ReadConfig:
    """The input topics and how to read them."""

    bootstrap: str
    topics: tuple[str, ...]
    max_offsets_per_trigger: int | None
    client_options: Mapping[str, str]
    #: ``[job] max_staleness_ms`` (None: keep every record)
    max_staleness_ms: int | None = None
    #: ``[job] fetch_max_wait_ms``: the source consumers' ``fetch.max.wait.ms``
    fetch_max_wait_ms: int = FETCH_MAX_WAIT_MS
    #: ``[job] thin_after_ms`` / ``thin_slice_ms`` (None: no thinning)
    thin_after_ms: int | None = None
    thin_slice_ms: int = 2_000


def read(spark: SparkSession, cfg: ReadConfig) -> DataFrame:
    """A streaming read of the input topics from the earliest offset, stale records
    dropped (:func:`fresh`)."""
    return fresh(kafka_source(spark, cfg.bootstrap, cfg.topics, cfg.max_offsets_per_trigger,
                              cfg.client_options, cfg.fetch_max_wait_ms), cfg.max_staleness_ms,
                 cfg.thin_after_ms, cfg.thin_slice_ms)


def _older_than(ms: int) -> Column:
    return sf.col("timestamp") < (
        sf.current_timestamp() - sf.expr(f"INTERVAL {int(ms)} MILLISECONDS"))


def fresh(raw: DataFrame, max_staleness_ms: int | None, thin_after_ms: int | None = None,
          thin_slice_ms: int = 2_000) -> DataFrame:
    """Bounded staleness at the source (ours, issue 28): drop the Kafka records whose
    timestamp is more than ``max_staleness_ms`` older than the micro-batch, before they
    are decoded, and count what was read and dropped in the query progress
    (``observedMetrics['source']``: ``records``, ``stale``).

    A job whose per-record work (read, decode, routing, the Python worker's input,
    validation and K-slack) exceeds the trigger cannot catch up by shedding inside the
    join: every record still costs that much. Dropping the oldest records of a batch
    before decoding costs only the Kafka read, keeps contiguous stretches of the streams
    (which still join among themselves, unlike random thinning), and needs no feedback
    loop: the overload itself makes records stale. ``current_timestamp()`` is the batch
    timestamp Spark stores in its offset log, so a replayed batch drops the same
    records.

    With ``thin_after_ms`` (ours, graceful staleness) a record older than that but within
    the bound is dropped too when its Kafka timestamp falls in an odd slice of
    ``thin_slice_ms`` (epoch-aligned, so the same slices of every stream): a batch far
    behind keeps half of its oldest stretch, in slices that still join among themselves,
    and is shorter, so the next batch starts less far behind. Thinned records count as
    stale (``stale``) and on their own (``thinned``)."""
    stale = sf.lit(False) if max_staleness_ms is None else _older_than(max_staleness_ms)
    if thin_after_ms is None:
        thinned = sf.lit(False)
    else:
        odd = sf.pmod(sf.floor(sf.unix_millis(sf.col("timestamp")) / int(thin_slice_ms)),
                      sf.lit(2)) == 1
        thinned = ~stale & _older_than(thin_after_ms) & odd
    dropped = stale | thinned
    counted = raw.observe("source", sf.count(sf.lit(1)).alias("records"),
                          sf.count(sf.when(dropped, 1)).alias("stale"),
                          sf.count(sf.when(thinned, 1)).alias("thinned"))
    return counted if max_staleness_ms is None else counted.where(~dropped)


# ---------------------------------------------------------------------- decode
@dataclass(frozen=True)
class DecodeStage:
    """harvest's own topics (``own``: one schema, single-object Avro) or the user's
    ``[inputs]`` topics (``plan``, when ``own`` is None)."""

    own: DecodeConfig | None
    plan: InputPlan


def decoded(raw: DataFrame, cfg: DecodeStage) -> DataFrame:
    """Kafka rows → ``reason`` (null when valid) + the record's fields
    (:func:`pipeline.spark.decode.decode`, :func:`pipeline.spark.inputs.decode_inputs`)."""
    if cfg.own is not None:
        return decode(raw, cfg.own)
    return decode_inputs(raw, cfg.plan)


# ---------------------------------------------------------------------- validate
def validated(rows: DataFrame, dead_letter: SingleObject) -> DataFrame:
    """``dl_key, dl_value``: the dead-letter record of a rejected row (null when valid)."""
    return rows.select(
        "*", sf.col("key").alias("dl_key"),
        dead_letter_value(dead_letter.header, dead_letter.schema_json).alias("dl_value"),
    )


# ---------------------------------------------------------------------- passthrough
@dataclass(frozen=True)
class PassthroughConfig:
    """Passthrough mode: valid records re-encoded to the results topic, rejected ones to
    the dead-letter topic."""

    fields: tuple[str, ...]
    topics: tuple[str, str]
    record: SingleObject


def passthrough(rows: DataFrame, cfg: PassthroughConfig) -> DataFrame:
    """Validated rows → ``(topic, key, value)`` (:func:`pipeline.spark.sinks.passthrough_rows`)."""
    return passthrough_rows(rows, cfg.fields, cfg.topics, cfg.record.header,
                            cfg.record.schema_json)


# ---------------------------------------------------------------------- envelope
@dataclass(frozen=True)
class EnvelopeConfig:
    """The join stage's columns. harvest's own topics (``own``): ``stream_idx`` + the
    record's ``fields`` + its Kafka coordinates and payload, built here from
    ``payload_fields``; ``[inputs]``: the decoded envelope columns ``fields``. Then every
    workload ``attributes`` outside ``keep`` (what the predicate and the hash router read)
    and ``stream`` leave."""

    own: bool
    fields: tuple[str, ...]
    attributes: tuple[str, ...]
    keep: frozenset[str]
    payload_fields: tuple[str, ...] = ()
    payload_schema: Mapping[str, Any] = field(default_factory=dict)
    output_format: str = "avro"


def _own_envelope(rows: DataFrame, cfg: EnvelopeConfig) -> DataFrame:
    """harvest's own topics: the envelope + the record's Kafka coordinates + payload."""
    payload = sf.lit(None).cast("binary")
    if cfg.payload_fields:
        struct = sf.struct(*[sf.col(f) for f in cfg.payload_fields])
        payload = sf.when(sf.col("reason").isNull(), payload_column(
            struct, sf.col("stream"), dict(cfg.payload_schema), cfg.output_format))
    return rows.select(
        "stream_idx", *cfg.fields, sf.col("partition").cast("int").alias("partition"),
        sf.col("offset").cast("long").alias("offset"), payload.alias("payload"), "kafka_ms",
        "raw", "dl_key", "dl_value")


def narrowed(env: DataFrame, attributes: tuple[str, ...], keep: set[str] | frozenset[str]
             ) -> DataFrame:
    """``env`` without the columns no stage after it reads: ``stream`` (the instance
    uses ``stream_idx``) and each workload attribute outside ``keep`` (the predicate's
    attributes and the hash router's key). The rows then cross routing, the shuffle and
    the Arrow hand-over to Python narrower; the payload was built before, and
    :func:`pipeline.runtime.frames.events_of` reads only the predicate's attributes."""
    dropped = {"stream", *(a for a in attributes if a not in keep)}
    return env.select(*[c for c in env.columns if c not in dropped])


def envelope(rows: DataFrame, cfg: EnvelopeConfig) -> DataFrame:
    """Validated rows → the narrowed envelope the join stage takes."""
    if cfg.own:
        env = _own_envelope(rows, cfg)
    else:
        env = rows.select(*cfg.fields, "raw", "dl_key", "dl_value")
    return narrowed(env, cfg.attributes, cfg.keep)


# ---------------------------------------------------------------------- route
@dataclass(frozen=True)
class RouteConfig:
    """How rows reach instances, and the checkpoint keeping the instances' route keys;
    ``adaptive``: adaptive ATR's routing state files (in the same checkpoint)."""

    router: RouterConfig
    checkpoint: str
    adaptive: RouteStore | None = None


def route(spark: SparkSession, env: DataFrame, cfg: RouteConfig) -> DataFrame:
    """Rows with their ``route_key`` (rejected rows: :data:`DEADLETTER_KEY`); instance
    ``i`` gets key ``keys[i]`` (:func:`pipeline.spark.placement.checkpoint_placement`).

    Routing runs on each routing task's Arrow batches (:mod:`pipeline.spark.routing`:
    ATR's segment range or the key's hash, one row per copy, then the task's liveness
    ticks). With one group every routing sends each row once to key 0
    (``Router.route_batch`` with G = 1), so the key is a literal; the one key sees all
    input, so it needs no liveness ticks. (A run of batches holding only rejected
    records then does not re-arm its idle timer; with G > 1 their ticks do.)"""
    router = cfg.router
    keys = checkpoint_placement(spark, cfg.checkpoint, router.groups).keys
    if router.groups == 1:
        key = sf.when(sf.col("dl_value").isNotNull(), sf.lit(DEADLETTER_KEY)).otherwise(
            sf.lit(0))
        return env.withColumn("route_key", key.cast(IntegerType()))
    return routed(env, router, keys if keys is not None else tuple(range(router.groups)),
                  cfg.adaptive)


# ---------------------------------------------------------------------- join
def joined(rows: DataFrame, cfg: ProcessorConfig) -> DataFrame:
    """Routed rows → the processor's output rows (:func:`output_ddl`), one
    :class:`JoinProcessor` per route key, whose output frames stay within the session's
    Arrow batch settings (:func:`~pipeline.spark.processor.output_limits`)."""
    conf = rows.sparkSession.conf
    max_rows, max_bytes = output_limits(int(conf.get(ARROW_ROWS_KEY) or 0),
                                        spark_bytes(conf.get(ARROW_BYTES_KEY) or "0"))
    cfg = replace(cfg, max_output_rows=max_rows, max_output_bytes=max_bytes)
    return rows.groupBy("route_key").transformWithStateInPandas(
        JoinProcessor(cfg), output_ddl(len(cfg.instance.engine.streams)), "Append",
        "ProcessingTime")


# ---------------------------------------------------------------------- encode
@dataclass(frozen=True)
class EncodeConfig:
    """The output topics ``(results, metrics, deadletter)`` and how each kind of row is
    written: results under the job's result schema (``plan``: format and generated
    schema; ``result`` is ``join_result``'s schema, with the Confluent header when the
    output format is ``avro-confluent``), metrics as ``operator_metrics``, dead letters
    as ``dead_letter``."""

    topics: tuple[str, str, str]
    plan: InputPlan
    result: SingleObject
    metrics: SingleObject
    dead_letter: SingleObject


def _metric_record() -> Column:
    """The ``operator_metrics`` fields of a processor metric row."""
    return sf.struct(
        sf.col("time"), sf.col("wall_time"), sf.col("instance"), sf.col("z"),
        sf.from_json(sf.col("harvest_fractions"), "array<double>").alias("harvest_fractions"),
        sf.col("k_ms"), sf.col("recall_target"), sf.col("instant_recall_target"),
        sf.col("estimated_recall"), sf.col("measured_recall"), sf.col("rate_in"),
        sf.col("rate_out"), sf.col("queue_drops"), sf.col("state_size"),
        sf.from_json(sf.col("extra"), "map<string,double>").alias("extra"),
    )


def encoded(out: DataFrame, cfg: EncodeConfig) -> DataFrame:
    """Processor rows → Kafka rows: results as join_result (+ payload; or JSON), metrics
    as operator_metrics, dead letters as dead_letter."""
    results, metrics, deadletters = cfg.topics
    kind = sf.col("kind")
    is_result = kind == "result"
    value: Column = (
        sf.when(is_result, result_value(cfg.plan, cfg.result.schema_json,
                                         cfg.result.header))
        .when(kind == "metric", single_object(_metric_record(), cfg.metrics.header,
                                              cfg.metrics.schema_json))
        .otherwise(sf.coalesce(sf.col("dl_value"), rejected_value(
            cfg.dead_letter.header, cfg.dead_letter.schema_json)))
    )
    return out.select(
        sf.when(is_result, sf.lit(results)).when(kind == "metric", sf.lit(metrics))
        .otherwise(sf.lit(deadletters)).alias("topic"),
        sf.when(is_result, sf.col("id").cast("binary"))
        .when(kind == "metric", sf.col("instance").cast("binary"))
        .otherwise(sf.col("dl_key")).alias("key"),
        value.alias("value"),
    )


# ---------------------------------------------------------------------- sink
@dataclass(frozen=True)
class SinkConfig:
    """Where and how the query writes: ``exactly_once`` set for ``[output] delivery =
    "exactly-once"``, else Spark's Kafka sink (at-least-once); ``topics`` are the output
    topics ``(results, metrics, deadletter)`` the progress counts rows of."""

    topics: tuple[str, str, str]
    bootstrap: str
    checkpoint: str
    trigger_ms: int
    client_options: Mapping[str, str]
    query_name: str
    exactly_once: ExactlyOnceConfig | None = None


def observed(rows: DataFrame, topics: tuple[str, str, str]) -> DataFrame:
    """Count output rows per topic in the query progress (``observedMetrics['out']``)."""
    results, metrics, deadletters = topics
    return rows.observe(
        "out",
        sf.count(sf.when(sf.col("topic") == results, 1)).alias("results"),
        sf.count(sf.when(sf.col("topic") == metrics, 1)).alias("metrics"),
        sf.count(sf.when(sf.col("topic") == deadletters, 1)).alias("deadletters"),
    )


def start_sink(rows: DataFrame, cfg: SinkConfig) -> tuple[StreamingQuery, BatchWriter | None]:
    """Start the query writing ``rows`` to Kafka: Spark's Kafka sink (at-least-once), or
    one Kafka transaction per micro-batch (exactly-once, :mod:`pipeline.spark.exactly_once`,
    whose writer is returned too)."""
    rows = observed(rows, cfg.topics)
    if cfg.exactly_once is not None:
        return start_exactly_once_sink(
            rows, checkpoint=cfg.checkpoint, trigger_ms=cfg.trigger_ms,
            query_name=cfg.query_name, config=cfg.exactly_once)
    return start_kafka_sink(
        rows, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.trigger_ms, client_options=cfg.client_options,
        query_name=cfg.query_name,
    ), None
