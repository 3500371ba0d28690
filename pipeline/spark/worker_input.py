"""The Python worker's input of ``transformWithStateInPandas``, cut by columns.

PySpark 4.2's ``TransformWithStateInPandasSerializer.load_stream`` turns each Arrow
batch the JVM sends into pandas, then walks it **row by row** (``itertuples``, a key
tuple per row, ``itertools.groupby``) and rebuilds every key's rows as
``pd.DataFrame(list of namedtuples)``: ~9 µs per input row on this machine, more than
the whole join instance spends on a row (ARCHITECTURE §3; NOTES, issue 29, session 30).
It runs before the processor's ``handleInputRows`` is called, so the instance's own
phase timers never saw it.

The JVM sends a key's rows contiguously (the state operator's input is sorted by the
grouping key), so a key's rows in one Arrow batch are one slice of it. :func:`keyed_frames`
converts each batch once and yields one frame per run of equal keys;
:func:`install` puts a ``load_stream`` built on it in place of PySpark's, with the same
protocol (``PROCESS_DATA`` per key with an iterator of its frames, then
``PROCESS_TIMER``, then ``COMPLETE``). What changes for the processor: a key's frames
follow the JVM's Arrow batches (each within ``arrow.maxRecordsPerBatch``) instead of
being re-cut at that size, and columns keep the types Arrow gives them (an ``int``
column stays ``int32``; the namedtuple round trip widened it to ``int64``).

Installed when :mod:`pipeline.spark.processor` is imported, which in a Python worker
happens as the processor is unpickled, before the worker reads its first batch. Only
for the PySpark release whose method it replaces (:data:`PYSPARK_VERSION`); any other
keeps PySpark's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import groupby
from typing import Any

import numpy as np
import pandas as pd
import pyspark
from pyspark.sql.pandas import serializers

from pipeline.core.logging import get_logger

log = get_logger(__name__)

#: the PySpark release whose ``load_stream`` :func:`install` replaces
PYSPARK_VERSION = "4.2.0"
_TARGET = serializers.TransformWithStateInPandasSerializer
_ORIGINAL = _TARGET.load_stream


def run_starts(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Row positions where a run of equal key tuples starts (0 first; empty for no
    rows): the places where any key column differs from the row before."""
    n = len(keys[0]) if keys else 0
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n, bool)
    change[0] = True
    for column in keys:
        change[1:] |= column[1:] != column[:-1]
    return np.flatnonzero(change)


def keyed_frames(frames: Iterable[pd.DataFrame], key_offsets: Sequence[int]
                 ) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Each frame's runs of equal keys (the columns at ``key_offsets``) as ``(key,
    rows)``, in order; ``key`` holds Python scalars, ``rows`` a fresh index. A run that
    continues in the next frame comes out as two items with the same key."""
    for frame in frames:
        n = len(frame)
        if n == 0:
            continue
        keys = [frame.iloc[:, o].to_numpy() for o in key_offsets]
        starts = run_starts(keys)
        ends = np.append(starts[1:], n)
        whole = len(starts) == 1
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            key = tuple(k[a].item() if hasattr(k[a], "item") else k[a] for k in keys)
            rows = frame if whole else frame.iloc[a:b].reset_index(drop=True)
            yield key, rows


def _to_frames(ser: Any, batches: Iterable[Any]) -> Iterator[pd.DataFrame]:
    """PySpark's own Arrow → pandas conversion of each batch (the serializer's settings),
    its columns side by side."""
    from pyspark.sql.conversion import ArrowBatchTransformer

    for batch in batches:
        columns = ArrowBatchTransformer.to_pandas(
            batch, timezone=ser._timezone, schema=ser._input_type,
            struct_in_pandas=ser._struct_in_pandas, ndarray_as_list=ser._ndarray_as_list,
            prefer_int_ext_dtype=ser._prefer_int_ext_dtype, df_for_struct=ser._df_for_struct)
        yield pd.concat(columns, axis=1)


def load_stream(ser: Any, stream: Any) -> Iterator[tuple[Any, Any, Any]]:
    """The serializer's ``load_stream`` by columns (module docstring): per key
    ``(PROCESS_DATA, key, iterator of (key, frame))``, then ``PROCESS_TIMER`` and
    ``COMPLETE``."""
    from pyspark.sql.streaming.stateful_processor_util import (
        TransformWithStateInPandasFuncMode as Mode,
    )

    batches = serializers.ArrowStreamSerializer.load_stream(ser, stream)
    chunks = keyed_frames(_to_frames(ser, batches), ser.key_offsets)
    for key, group in groupby(chunks, key=lambda item: item[0]):
        yield (Mode.PROCESS_DATA, key, group)
    yield (Mode.PROCESS_TIMER, None, None)
    yield (Mode.COMPLETE, None, None)


def installed() -> bool:
    """Whether PySpark's serializer reads by columns now."""
    return _TARGET.load_stream is not _ORIGINAL


def install(version: str = pyspark.__version__) -> bool:
    """Put :func:`load_stream` in place of PySpark's (``version``: the running PySpark);
    False, with a warning, on a release other than :data:`PYSPARK_VERSION`."""
    if version != PYSPARK_VERSION:
        log.warning("pyspark input by rows", version=version, expected=PYSPARK_VERSION)
        return False
    method: Callable[..., Any] = load_stream
    _TARGET.load_stream = method  # type: ignore[method-assign]
    return True


def uninstall() -> None:
    """PySpark's own ``load_stream`` again (tests compare the two)."""
    _TARGET.load_stream = _ORIGINAL  # type: ignore[method-assign]
