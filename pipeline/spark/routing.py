"""Route keys as Spark SQL expressions (ARCHITECTURE §6): the rows stay in the JVM.

:class:`pipeline.diffusion.routing.Router` defines which instances a row goes to; this
module computes the same thing on a DataFrame, so routing costs no Spark → Python →
Spark round trip of the input:

* **ATR** (Gu et al. §2): the master segment range ``lo..hi`` of each row from its
  stream and event time (integer arithmetic, floor division), capped at G copies, each
  copy ``(lo + j) mod G`` — an array per row, exploded;
* **hash**: ``stable_hash(key) mod G``. For integral keys SplitMix64 is evaluated
  exactly in SQL on two 32-bit halves (no 64-bit product can overflow, so ANSI mode
  does not matter); other key types go through a scalar pandas UDF over the key column
  alone (:func:`pipeline.diffusion.routing.stable_hash_array`);
* **adaptive ATR** (``[job] segment_keys = "least-loaded"``, ``adapt_master``,
  ``adapt_segment``): the routing epoch log changes from one micro-batch to the next, so
  an iterator pandas UDF reads ``stream_idx`` and ``event_time`` and routes them under
  the batch's :class:`~pipeline.diffusion.batches.BatchRouting` from the checkpoint
  (:mod:`pipeline.spark.route_log`), and records what it saw for the next batch's;
* rejected rows (``dl_value`` set): one copy to :data:`DEADLETTER_KEY`;
* liveness **ticks**: each routing task that had input sends every instance one row
  with ``stream_idx`` = :data:`TICK_STREAM` and the stream time the task's valid rows
  vouch for (:func:`~pipeline.operators.validation.batch_reference`, the upper edge of
  their bulk; 0 if it had none). An iterator pandas UDF reads the task's
  ``arrival_time`` and validity columns only, and marks the task's last row with it;
  the marked row carries the ticks in its exploded array.

Instance ``i`` is sent as physical route key ``keys[i]``
(:mod:`pipeline.spark.placement`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from pipeline.core.errors import ConfigError
from pipeline.diffusion.batches import observe_task
from pipeline.diffusion.routing import RouterConfig, stable_hash_array
from pipeline.operators.validation import batch_reference
from pipeline.runtime.frames import DEADLETTER_KEY, TICK_STREAM
from pipeline.spark.route_log import RouteStore, running_batch

_M32 = 0xFFFFFFFF
_M16 = 0xFFFF
#: SplitMix64 (pipeline.diffusion.routing._splitmix64)
_GOLDEN = 0x9E3779B97F4A7C15
_MUL1 = 0xBF58476D1CE4E5B9
_MUL2 = 0x94D049BB133111EB
#: envelope columns a tick sets to 0 (the others are null; ``raw`` is empty bytes)
_TICK_ZEROS = ("seq", "event_time", "partition", "offset")
_COPY = "_harvest_copy"
_TICK = "_harvest_tick"
_HI, _LO = "_harvest_hash_hi", "_harvest_hash_lo"
_ADAPTIVE = "_harvest_adaptive"


def _floor_div(a: Column, b: int) -> Column:
    """``⌊a / b⌋`` for ``b > 0`` in exact integer arithmetic."""
    return sf.call_function("div", a - sf.pmod(a, sf.lit(b)), sf.lit(b))


def atr_indices(router: RouterConfig) -> Column:
    """The instances (0..G−1) of a valid row under ATR: :meth:`Router.route_batch`."""
    g = router.groups
    t = sf.col("event_time").cast(LongType())
    s = sf.col("stream_idx")
    windows = sf.array(*[sf.lit(int(w)).cast(LongType()) for w in router.windows_ms])
    is_master = s == sf.lit(router.master)
    w_master = router.windows_ms[router.master]
    w_own = sf.element_at(windows, (s + 1).cast(IntegerType()))
    lo = sf.when(is_master, _floor_div(t, router.segment_ms)).otherwise(
        _floor_div(t - sf.lit(w_master), router.segment_ms))
    hi = sf.when(is_master, _floor_div(t, router.segment_ms)).otherwise(
        _floor_div(t + w_own, router.segment_ms))
    count = sf.least(hi - lo + 1, sf.lit(g).cast(LongType()))
    return sf.transform(sf.sequence(sf.lit(0).cast(LongType()), count - 1),
                        lambda j: sf.pmod(lo + j, sf.lit(g)).cast(IntegerType()))


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


# ---------------------------------------------------------------- SplitMix64 in SQL
def _mul32(x: Column, c: int) -> Column:
    """``x · c mod 2³²`` for ``0 ≤ x, c < 2³²`` (16-bit limbs: no product ≥ 2⁴⁹)."""
    low = (x.bitwiseAND(_M16) * sf.lit(c)).bitwiseAND(_M32)
    high = sf.shiftleft((sf.shiftright(x, 16) * sf.lit(c)).bitwiseAND(_M16), 16)
    return (low + high).bitwiseAND(_M32)


def _mul64(hi: Column, lo: Column, c: int) -> tuple[Column, Column]:
    """``(hi, lo) · c mod 2⁶⁴`` on 32-bit halves."""
    ch, cl = c >> 32, c & _M32
    p0 = lo.bitwiseAND(_M16) * sf.lit(cl)  # < 2⁴⁸
    p1 = sf.shiftright(lo, 16) * sf.lit(cl)  # < 2⁴⁸, weight 2¹⁶
    t = p0 + sf.shiftleft(p1.bitwiseAND(_M16), 16)
    new_lo = t.bitwiseAND(_M32)
    carry = sf.shiftright(t, 32) + sf.shiftright(p1, 16)
    new_hi = (carry + _mul32(hi, cl) + _mul32(lo, ch)).bitwiseAND(_M32)
    return new_hi, new_lo


def _xorshift(hi: Column, lo: Column, r: int) -> tuple[Column, Column]:
    """``z ^ (z >> r)`` for ``0 < r < 32``."""
    shifted_lo = (sf.shiftright(lo, r).bitwiseOR(sf.shiftleft(hi, 32 - r))).bitwiseAND(_M32)
    return hi.bitwiseXOR(sf.shiftright(hi, r)), lo.bitwiseXOR(shifted_lo)


def _step(df: DataFrame, pair: tuple[Column, Column]) -> DataFrame:
    """Materialize one SplitMix64 step (a projection each, so the tree stays linear)."""
    return df.withColumns({_HI: pair[0], _LO: pair[1]})


def _splitmix_index(df: DataFrame, key: Column, groups: int) -> DataFrame:
    """``df`` + ``_COPY``-ready column ``_HI``: ``splitmix64(key) mod groups`` (unsigned)."""
    k = key.cast(LongType())
    df = _step(df, (sf.shiftright(k, 32).bitwiseAND(_M32), k.bitwiseAND(_M32)))
    hi, lo = sf.col(_HI), sf.col(_LO)
    s = lo + sf.lit(_GOLDEN & _M32)
    df = _step(df, ((hi + sf.lit(_GOLDEN >> 32) + sf.shiftright(s, 32)).bitwiseAND(_M32),
                    s.bitwiseAND(_M32)))
    for r, c in ((30, _MUL1), (27, _MUL2)):
        df = _step(df, _xorshift(sf.col(_HI), sf.col(_LO), r))
        df = _step(df, _mul64(sf.col(_HI), sf.col(_LO), c))
    df = _step(df, _xorshift(sf.col(_HI), sf.col(_LO), 31))
    wrap = (1 << 32) % groups
    index = sf.pmod(sf.pmod(sf.col(_HI), sf.lit(groups)) * sf.lit(wrap) + sf.col(_LO),
                    sf.lit(groups))
    return df.withColumn(_HI, index.cast(IntegerType())).drop(_LO)


def _nan_index(groups: int) -> int:
    """The instance of a null integral key: pandas turns it into NaN, hashed by its bits."""
    return int(stable_hash_array(np.array([np.nan]))[0] % np.uint64(groups))


def hash_indices(df: DataFrame, key_attribute: str, groups: int) -> DataFrame:
    """``df`` + column ``_HI``: the instance of each row under hash routing."""
    kind = df.schema[key_attribute].dataType
    if isinstance(kind, ByteType | ShortType | IntegerType | LongType):
        out = _splitmix_index(df, sf.col(key_attribute), groups)
        return out.withColumn(_HI, sf.when(sf.col(key_attribute).isNull(),
                                           sf.lit(_nan_index(groups))).otherwise(sf.col(_HI)))

    @sf.pandas_udf(IntegerType())  # type: ignore[call-overload]
    def index(keys: pd.Series) -> pd.Series:
        h = stable_hash_array(keys.to_numpy())
        return pd.Series((h % np.uint64(groups)).astype(np.int32))

    return df.withColumn(_HI, index(sf.col(key_attribute)))


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


def routed(valid: DataFrame, router: RouterConfig, keys: tuple[int, ...],
           adaptive: RouteStore | None = None) -> DataFrame:
    """``valid`` + ``route_key``: one row per (row, instance) copy, rejected rows to
    :data:`DEADLETTER_KEY`, and the ticks (``router.groups`` > 1); ``adaptive``: adaptive
    ATR's routing state files (ATR only)."""
    g = router.groups
    if len(keys) != g:
        raise ConfigError(f"job.groups: {g} groups need {g} route keys, got {len(keys)}: "
                          f"{keys}")
    columns = valid.columns
    physical = sf.array(*[sf.lit(int(k)) for k in keys])
    rejected = sf.col("dl_value").isNotNull()
    df = valid
    if router.mode == "hash":
        assert router.key_attribute is not None
        df = hash_indices(df, router.key_attribute, g)
        indices = sf.array(sf.col(_HI))
    elif adaptive is not None:  # a projection: a Generate may not hold the UDF
        df = df.withColumn(_ADAPTIVE, _adaptive_udf(adaptive)(
            sf.col("stream_idx"), sf.col("event_time"), ~rejected))
        indices = sf.col(_ADAPTIVE)
    else:
        indices = atr_indices(router)
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
