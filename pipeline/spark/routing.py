"""Route keys on the routing tasks (ARCHITECTURE §6), equal to
:class:`pipeline.diffusion.routing.Router`'s:

* **ATR** (Gu et al. §2) and **hash** routing: :func:`route_arrow` over each task's
  rows as Arrow batches (``mapInArrow``: no pandas, no per-row Python): the copies of
  each row from :meth:`Router.route_batch` (ATR: the master segment range, capped at G
  copies; hash: ``stable_hash(key) mod G``, a null key hashed as NaN), taken with one
  ``take`` per batch, and after the task's last batch its ticks. One pass in the Python
  worker replaces what Spark SQL did in three: SplitMix64 in 32-bit halves, an exploded
  array of copies and an iterator pandas UDF for the ticks, ~9 µs of task time per row
  against ~2 µs more than a literal key (NOTES, issue 29, session 30);
* **adaptive ATR** (``[job] segment_keys = "least-loaded"``, ``adapt_master``,
  ``adapt_segment``): the routing epoch log changes from one micro-batch to the next, so
  an iterator pandas UDF reads ``stream_idx`` and ``event_time`` and routes them under
  the batch's :class:`~pipeline.diffusion.batches.BatchRouting` from the checkpoint
  (:mod:`pipeline.spark.route_log`), records what it saw for the next batch's, and the
  copies are an exploded array; its ticks come from the tick pandas UDF
  (:func:`tick_marks`), which marks the task's last row;
* rejected rows (``dl_value`` set): one copy to :data:`DEADLETTER_KEY`;
* liveness **ticks**: each routing task that had input sends every instance one row
  with ``stream_idx`` = :data:`TICK_STREAM` and the stream time the task's valid rows
  vouch for (:func:`~pipeline.operators.validation.batch_reference`, the upper edge of
  their bulk; 0 if it had none).

Instance ``i`` is sent as physical route key ``keys[i]``
(:mod:`pipeline.spark.placement`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StructField,
    StructType,
)

from pipeline.core.errors import ConfigError
from pipeline.diffusion.batches import observe_task
from pipeline.diffusion.routing import Router, RouterConfig, stable_hash_array
from pipeline.operators.validation import batch_reference
from pipeline.runtime.frames import DEADLETTER_KEY, TICK_STREAM
from pipeline.spark.route_log import RouteStore, running_batch

#: envelope columns a tick sets to 0 (the others are null; ``raw`` is empty bytes)
_TICK_ZEROS = ("seq", "event_time", "partition", "offset")
_COPY = "_harvest_copy"
_TICK = "_harvest_tick"
_ADAPTIVE = "_harvest_adaptive"


def adaptive_marks(store: RouteStore, batches: Iterator[tuple[pd.Series, pd.Series, pd.Series]]
                   ) -> Iterator[pd.Series]:
    """One routing task's ``(stream_idx, event_time, valid)`` batches → each row's
    instances under the micro-batch's routing state (none for a rejected row); at the
    end, the task's observation goes to the checkpoint (:class:`RouteStore`)."""
    batch, partition = running_batch()
    state = store.state(batch)
    streams: list[np.ndarray] = []
    times: list[np.ndarray] = []
    for stream, ts, ok in batches:
        mask = ok.fillna(False).to_numpy(bool)
        s = stream.fillna(0).to_numpy(np.int64)[mask]
        t = ts.fillna(0).to_numpy(np.int64)[mask]
        rows, keys = state.route(s, t)
        out: list[list[int]] = [[] for _ in range(len(mask))]
        for r, k in zip(np.flatnonzero(mask)[rows].tolist(), keys.tolist(), strict=True):
            out[r].append(k)
        streams.append(s)
        times.append(t)
        yield pd.Series(out)
    horizon = state.router.log.horizon if state.router is not None else None
    s_all = np.concatenate(streams) if streams else np.zeros(0, np.int64)
    t_all = np.concatenate(times) if times else np.zeros(0, np.int64)
    store.put_task(batch, partition, observe_task(store.config, state, s_all, t_all, horizon))


def _adaptive_udf(store: RouteStore) -> Callable[..., Column]:
    """:func:`adaptive_marks` as an iterator pandas UDF (nondeterministic: it reads and
    writes the checkpoint, so it must run once per row)."""
    def marks(batches: Iterator[tuple[pd.Series, pd.Series, pd.Series]]
              ) -> Iterator[pd.Series]:
        return adaptive_marks(store, batches)

    udf = sf.pandas_udf(marks, ArrayType(IntegerType()))  # type: ignore[call-overload]
    return udf.asNondeterministic()


# ---------------------------------------------------------------- liveness ticks
def tick_marks(batches: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
    """One routing task's ``(arrival_time, valid)`` batches → null for every row but the
    task's last, which gets the valid rows' reference arrival
    (:func:`~pipeline.operators.validation.batch_reference`; 0 if none). Each
    batch's output is held back only until the next non-empty batch arrives, so the JVM
    buffers at most two Arrow batches of the task's rows, not all of them."""
    arrivals: list[np.ndarray] = []
    held: int | None = None  # the size of the last non-empty batch, not yet answered
    for arrival, ok in batches:
        n = len(arrival)
        if n == 0:  # answers are matched to the rows in order, not batch by batch
            continue
        mask = ok.to_numpy(bool)
        if mask.any():
            arrivals.append(arrival[mask].to_numpy(np.int64))
        if held is not None:
            yield _nulls(held)
        held = n
    if held is not None:
        out = _nulls(held)
        out.iloc[held - 1] = batch_reference(np.concatenate(arrivals)) if arrivals else 0
        yield out


def _nulls(n: int) -> pd.Series:
    return pd.Series(pd.array([None] * n, dtype="Int64"))


_COPY_TYPE = ArrayType(StructType([StructField("key", IntegerType()),
                                     StructField("tick", LongType())]))


def _tick_udf() -> Callable[..., Column]:
    """:func:`tick_marks` as an iterator pandas UDF; nondeterministic, since its value
    depends on the whole task (so the optimizer never evaluates it twice)."""
    udf = sf.pandas_udf(tick_marks, LongType())  # type: ignore[call-overload]
    return udf.asNondeterministic()


def _tick_columns(df: DataFrame) -> dict[str, Column]:
    """Each envelope column of a tick row; the data row's value otherwise."""
    out = {}
    is_tick = sf.col(_COPY)["tick"].isNotNull()
    for f in df.schema.fields:
        if f.name == _COPY:
            continue
        if f.name == "stream_idx":
            value: Column = sf.lit(TICK_STREAM)
        elif f.name in _TICK_ZEROS:
            value = sf.lit(0)
        elif f.name == "arrival_time":
            value = sf.col(_COPY)["tick"]
        elif f.name == "raw":
            value = sf.lit(b"")
        else:
            value = sf.lit(None)
        out[f.name] = sf.when(is_tick, value.cast(f.dataType)).otherwise(sf.col(f.name))
    return out


# ---------------------------------------------------------------- routing in Arrow
def _key_hashes(column: pa.Array) -> np.ndarray:
    """:func:`~pipeline.diffusion.routing.stable_hash_array` of a key column as pandas
    would hand it over: integers as integers, a null as NaN."""
    if pa.types.is_integer(column.type) or pa.types.is_boolean(column.type):
        h = stable_hash_array(column.fill_null(0).to_numpy(zero_copy_only=False))
        missing = column.is_null().to_numpy(zero_copy_only=False)
        if missing.any():
            h[missing] = stable_hash_array(np.array([np.nan]))[0]
        return h
    return stable_hash_array(column.to_numpy(zero_copy_only=False))


def _copies(batch: pa.RecordBatch, router: Router) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(source row, instance)`` of each copy of ``batch``'s rows (rejected rows: one
    copy to instance −1), in row order, and the valid rows' arrivals."""
    rejected = batch.column("dl_value").is_valid().to_numpy(zero_copy_only=False)
    ok = np.flatnonzero(~rejected)
    valid = batch.take(pa.array(ok)) if len(ok) < batch.num_rows else batch
    streams = valid.column("stream_idx").to_numpy(zero_copy_only=False)
    times = valid.column("event_time").to_numpy(zero_copy_only=False)
    cfg = router.config
    if cfg.mode == "hash":  # Router.route_batch's hash routing, nulls hashed as NaN
        assert cfg.key_attribute is not None
        hashes = _key_hashes(valid.column(cfg.key_attribute))
        rows = np.arange(valid.num_rows, dtype=np.int64)
        instances = (hashes % np.uint64(cfg.groups)).astype(np.int64)
    else:
        rows, instances = router.route_batch(streams, times)
    arrivals = valid.column("arrival_time").to_numpy(zero_copy_only=False).astype(np.int64)
    if not rejected.any():
        return rows, instances, arrivals
    dead = np.flatnonzero(rejected)
    src = np.concatenate([ok[rows], dead])
    inst = np.concatenate([instances, np.full(len(dead), -1, np.int64)])
    order = np.argsort(src, kind="stable")
    return src[order], inst[order], arrivals


def _tick_batch(schema: pa.Schema, keys: np.ndarray, reference: int) -> pa.RecordBatch:
    """One tick row per physical key: ``stream_idx`` = :data:`TICK_STREAM`, the task's
    reference arrival, zeros in :data:`_TICK_ZEROS`, empty ``raw``, nulls elsewhere."""
    g = len(keys)
    arrays = []
    for f in schema:
        if f.name == "route_key":
            arrays.append(pa.array(keys, f.type))
        elif f.name == "stream_idx":
            arrays.append(pa.array([TICK_STREAM] * g, f.type))
        elif f.name in _TICK_ZEROS:
            arrays.append(pa.array([0] * g, f.type))
        elif f.name == "arrival_time":
            arrays.append(pa.array([reference] * g, f.type))
        elif f.name == "raw":
            arrays.append(pa.array([b""] * g, f.type))
        else:
            arrays.append(pa.nulls(g, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def route_arrow(batches: Iterable[pa.RecordBatch], router: Router, keys: Sequence[int]
                ) -> Iterator[pa.RecordBatch]:
    """One routing task's Arrow batches → its rows with ``route_key``, one row per
    (row, instance) copy (:meth:`Router.route_batch`; instance ``i`` as physical key
    ``keys[i]``), rejected rows once to :data:`DEADLETTER_KEY`; after its last batch,
    if it had rows, one tick per instance carrying the valid rows'
    :func:`~pipeline.operators.validation.batch_reference` (0 if none)."""
    physical = np.append(np.asarray(keys, np.int64), DEADLETTER_KEY)  # [-1] → dead letter
    arrivals: list[np.ndarray] = []
    schema: pa.Schema | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        src, inst, valid_arrivals = _copies(batch, router)
        arrivals.append(valid_arrivals)
        same = len(src) == batch.num_rows and bool((src == np.arange(len(src))).all())
        rows = batch if same else batch.take(pa.array(src))
        out = rows.append_column("route_key", pa.array(physical[inst], pa.int32()))
        schema = out.schema
        yield out
    if schema is not None:
        every = np.concatenate(arrivals)
        yield _tick_batch(schema, np.asarray(keys, np.int64),
                          batch_reference(every) if len(every) else 0)


def _arrow_routed(valid: DataFrame, router: RouterConfig, keys: tuple[int, ...]) -> DataFrame:
    """:func:`route_arrow` over every routing task (``mapInArrow``: the rows cross to
    the Python worker and back as Arrow, without pandas)."""
    columns = [StructField(f.name, f.dataType, True) for f in valid.schema.fields]
    schema = StructType([*columns, StructField("route_key", IntegerType(), True)])
    config = router

    def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return route_arrow(batches, Router(config), keys)

    return valid.mapInArrow(route, schema)


def routed(valid: DataFrame, router: RouterConfig, keys: tuple[int, ...],
           adaptive: RouteStore | None = None) -> DataFrame:
    """``valid`` + ``route_key``: one row per (row, instance) copy, rejected rows to
    :data:`DEADLETTER_KEY`, and the ticks (``router.groups`` > 1); ``adaptive``: adaptive
    ATR's routing state files (ATR only)."""
    g = router.groups
    if len(keys) != g:
        raise ConfigError(f"job.groups: {g} groups need {g} route keys, got {len(keys)}: "
                          f"{keys}")
    if adaptive is None:
        return _arrow_routed(valid, router, keys)
    columns = valid.columns
    physical = sf.array(*[sf.lit(int(k)) for k in keys])
    rejected = sf.col("dl_value").isNotNull()
    # a projection: a Generate may not hold the UDF
    df = valid.withColumn(_ADAPTIVE, _adaptive_udf(adaptive)(
        sf.col("stream_idx"), sf.col("event_time"), ~rejected))
    indices = sf.col(_ADAPTIVE)
    mark = _tick_udf()(sf.col("arrival_time"), ~rejected)
    data = sf.when(rejected, sf.array(sf.struct(
        sf.lit(DEADLETTER_KEY).alias("key"), sf.lit(None).cast(LongType()).alias("tick"))))\
        .otherwise(sf.transform(indices, lambda i: sf.struct(
            sf.element_at(physical, i + 1).alias("key"),
            sf.lit(None).cast(LongType()).alias("tick"))))
    ticks = sf.when(sf.col(_TICK).isNull(), sf.array().cast(_COPY_TYPE)).otherwise(sf.transform(
        physical, lambda k: sf.struct(k.alias("key"), sf.col(_TICK).alias("tick"))))
    df = df.withColumn(_TICK, mark)
    copies = df.select(*columns, sf.explode(sf.concat(data, ticks)).alias(_COPY))
    out = copies.withColumns(_tick_columns(copies))
    return out.select(*columns, sf.col(_COPY)["key"].cast(IntegerType()).alias("route_key"))
