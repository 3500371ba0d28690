"""The worker's columnar input (:mod:`pipeline.spark.worker_input`) against PySpark's own
``TransformWithStateInPandasSerializer.load_stream`` on the same Arrow stream."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

from pipeline.spark import worker_input


def _serializer(key_offsets: list[int]) -> TransformWithStateInPandasSerializer:
    ser = TransformWithStateInPandasSerializer(
        timezone="UTC", safecheck=False, assign_cols_by_name=True, prefer_int_ext_dtype=False,
        arrow_max_records_per_batch=10_000, arrow_max_bytes_per_batch=2**31 - 1,
        int_to_decimal_coercion_enabled=False)
    ser.key_offsets = key_offsets
    return ser


def _stream(keys: list[int], sizes: list[int], seed: int) -> io.BytesIO:
    """An Arrow IPC stream of the envelope's kinds of columns, cut into ``sizes``."""
    rng = np.random.default_rng(seed)
    n = len(keys)
    table = pa.table({
        "route_key": pa.array(keys, pa.int32()),
        "stream_idx": pa.array(rng.integers(0, 3, n), pa.int32()),
        "seq": pa.array(rng.integers(0, 10**9, n), pa.int64()),
        "value": pa.array([None if v < 0.1 else float(v) for v in rng.random(n)], pa.float64()),
        "offset": pa.array([None if v < 0.1 else int(v * 1e6) for v in rng.random(n)],
                           pa.int64()),
        "raw": pa.array([bytes(rng.integers(0, 256, 3).tolist()) for _ in range(n)],
                        pa.binary()),
        "dl_value": pa.array([None] * n, pa.binary()),
        "text": pa.array([None if v < 0.2 else f"t{v:.3f}" for v in rng.random(n)],
                         pa.string()),
    })
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        start = 0
        for size in [*sizes, n]:
            size = min(size, n - start)
            if size > 0:
                for batch in table.slice(start, size).to_batches():
                    writer.write_batch(batch)
                start += size
            if start >= n:
                break
    sink.seek(0)
    return sink


def _read(ser: Any, stream: io.BytesIO) -> list[tuple[Any, Any, list[pd.DataFrame] | None]]:
    out = []
    for mode, key, group in ser.load_stream(stream):
        frames = None if group is None else [frame for _, frame in group]
        out.append((mode, key, frames))
    return out


def _keys(runs: list[tuple[int, int]]) -> list[int]:
    """Contiguous runs of keys (distinct from the run before, as the JVM sorts them)."""
    out: list[int] = []
    last = None
    for key, length in runs:
        if key == last:
            key += 1
        out += [key] * length
        last = key
    return out


@pytest.fixture
def pyspark_rows() -> Iterator[None]:
    worker_input.uninstall()
    yield
    worker_input.install()


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 7)), min_size=0, max_size=6),
       sizes=st.lists(st.integers(1, 9), max_size=5), seed=st.integers(0, 10_000))
def test_same_keys_rows_and_values_as_pyspark(runs: list[tuple[int, int]], sizes: list[int],
                                              seed: int) -> None:
    keys = _keys(runs)
    worker_input.uninstall()
    try:
        want = _read(_serializer([0]), _stream(keys, sizes, seed))
    finally:
        worker_input.install()
    got = _read(_serializer([0]), _stream(keys, sizes, seed))
    assert [(m, k) for m, k, _ in got] == [(m, k) for m, k, _ in want]
    for (_, key, ours), (_, _, theirs) in zip(got, want, strict=True):
        if theirs is None:
            assert ours is None
            continue
        assert ours is not None
        assert all(isinstance(v, int) for v in key)
        a = pd.concat(ours, ignore_index=True)
        b = pd.concat(theirs, ignore_index=True)
        assert list(a.columns) == list(b.columns)
        assert (a["route_key"] == key[0]).all()
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert sum(len(f) for _, _, fs in got if fs for f in fs) == len(keys)


def test_a_key_split_over_batches_stays_one_group_and_each_frame_within_its_batch() -> None:
    keys = [3] * 5 + [4] * 6
    got = _read(_serializer([0]), _stream(keys, [4, 4, 3], 1))
    data = [(k, fs) for _, k, fs in got if fs is not None]
    assert [k for k, _ in data] == [(3,), (4,)]
    assert [len(f) for f in data[0][1]] == [4, 1]
    assert [len(f) for f in data[1][1]] == [3, 3]
    assert all(list(f.index) == list(range(len(f))) for _, fs in data for f in fs)


def test_two_key_columns() -> None:
    frame = pd.DataFrame({"a": [1, 1, 1, 2], "b": [5, 5, 6, 6], "x": [0, 1, 2, 3]})
    got = list(worker_input.keyed_frames([frame], [0, 1]))
    assert [k for k, _ in got] == [(1, 5), (1, 6), (2, 6)]
    assert [f["x"].tolist() for _, f in got] == [[0, 1], [2], [3]]
    assert worker_input.run_starts([]).tolist() == []


def test_installed_by_the_processor_module_and_only_on_its_release(
        pyspark_rows: None) -> None:
    assert not worker_input.installed()
    assert worker_input.install("4.1.0") is False
    assert not worker_input.installed()
    assert worker_input.install() is True
    assert worker_input.installed()
    import pipeline.spark.processor  # noqa: F401 - its import installs the reader

    assert worker_input.installed()
