"""The workload registry: determinism, per-stream seq, arrival order, Avro-ready records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.io.serde import AvroSerde
from connectors.workloads import (
    WORKLOADS,
    ExponentialDelay,
    NoDelay,
    WorkloadSpec,
    ZipfDelay,
    generate,
    generate_workload,
    read_jsonl,
    schema_for,
)
from connectors.workloads.params import EquiParams, SensorParams
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings


def _spec(workload: str, **kw: object) -> WorkloadSpec:
    base: dict[str, object] = {
        "streams": 3,
        "rates": (50.0,),
        "duration_s": 4.0,
        "disorder": (ZipfDelay(max_ms=3_000, skew=1.5),),
        "seed": 11,
    }
    base.update(kw)
    return WorkloadSpec(workload, **base)  # type: ignore[arg-type]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_same_seed_same_records_other_seed_other_records(workload: str) -> None:
    a = generate(_spec(workload))
    assert a == generate(_spec(workload))
    assert a != generate(_spec(workload, seed=12))


@pytest.mark.parametrize(
    ("workload", "schema", "fields"),
    [
        ("sensors", "sensor_reading", {"value", "a1", "x", "y"}),
        ("equi", "sensor_reading", {"value", "a1", "x", "y"}),
        ("positions", "sensor_reading", {"value", "a1", "x", "y"}),
        ("news", "news_item", {"story", "agency", "keywords"}),
    ],
)
def test_schema_and_fields(workload: str, schema: str, fields: set[str]) -> None:
    assert schema_for(workload) == schema
    records = generate(_spec(workload))
    common = {"stream", "seq", "event_time", "arrival_time"}
    assert all(set(r) == common | fields for r in records)


def test_unknown_workload_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nosuch"):
        schema_for("nosuch")
    with pytest.raises(ConfigError, match="nosuch"):
        WorkloadSpec("nosuch")  # type: ignore[arg-type]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_records_round_trip_through_the_avro_schema(workload: str) -> None:
    serde = AvroSerde.from_dir(Settings().schemas_dir)
    records = generate(_spec(workload, duration_s=1.0))
    for record in records:
        name, decoded = serde.decode(serde.encode(schema_for(workload), record))
        assert name == schema_for(workload)
        assert decoded == record


def _check_order(records: list[dict[str, Any]], spec: WorkloadSpec) -> None:
    # arrival order: (arrival_time, stream number, seq)
    keys = [(r["arrival_time"], int(r["stream"][1:]), r["seq"]) for r in records]
    assert keys == sorted(keys)
    for name in spec.stream_names:
        mine = sorted((r for r in records if r["stream"] == name), key=lambda r: r["seq"])
        assert [r["seq"] for r in mine] == list(range(1, len(mine) + 1))
        times = [r["event_time"] for r in mine]
        assert times == sorted(times)
        assert all(r["arrival_time"] >= r["event_time"] for r in mine)


@settings(max_examples=30, deadline=None)
@given(
    workload=st.sampled_from(WORKLOADS),
    streams=st.integers(1, 4),
    rate=st.floats(0.5, 300.0),
    duration=st.floats(0.5, 5.0),
    arrivals=st.sampled_from(["even", "poisson"]),
    max_ms=st.integers(0, 5_000),
    skew=st.floats(0.0, 4.0),
    seed=st.integers(0, 2**32),
)
def test_seq_event_order_and_arrival_order(
    workload: str,
    streams: int,
    rate: float,
    duration: float,
    arrivals: str,
    max_ms: int,
    skew: float,
    seed: int,
) -> None:
    spec = WorkloadSpec(
        workload,  # type: ignore[arg-type]
        streams=streams,
        rates=(rate,),
        duration_s=duration,
        arrivals=arrivals,  # type: ignore[arg-type]
        disorder=(ZipfDelay(max_ms=max_ms, skew=skew, step_ms=7),),
        seed=seed,
    )
    records = generate(spec)
    _check_order(records, spec)
    assert all(0 <= r["event_time"] < duration * 1000 for r in records)
    if arrivals == "even":
        assert len(records) == streams * int(np.floor(rate * duration + 1e-9))


def test_per_stream_rates_give_per_stream_counts() -> None:
    wl = generate_workload(_spec("sensors", rates=(10.0, 20.0, 40.0), duration_s=5.0))
    assert wl.stream_counts() == {"s1": 50, "s2": 100, "s3": 200}


def test_poisson_arrivals_have_the_rate_on_average() -> None:
    wl = generate_workload(_spec("equi", rates=(200.0,), duration_s=60.0, arrivals="poisson"))
    for count in wl.stream_counts().values():
        assert abs(count - 12_000) < 5 * np.sqrt(12_000)


def test_changing_the_disorder_changes_arrivals_only() -> None:
    calm = generate(_spec("news", disorder=(NoDelay(),)))
    wild = generate(_spec("news", disorder=(ExponentialDelay(800.0),)))
    key = lambda r: (r["stream"], r["seq"])  # noqa: E731
    strip = lambda r: {k: v for k, v in r.items() if k != "arrival_time"}  # noqa: E731
    assert sorted(map(strip, calm), key=key) == sorted(map(strip, wild), key=key)
    assert [key(r) for r in calm] != [key(r) for r in wild]


def test_jsonl_dump_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "d" / "dump.jsonl"
    wl = generate_workload(_spec("news"))
    assert wl.write_jsonl(path, batch=37) == len(wl)
    assert read_jsonl(path) == wl.records()


def test_iter_records_in_batches_equals_records() -> None:
    wl = generate_workload(_spec("positions"))
    assert list(wl.iter_records(batch=13)) == wl.records()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"streams": 0}, "streams"),
        ({"rates": (0.0,)}, "rates"),
        ({"rates": (1.0, 2.0)}, "rates: 2 values for 3 streams"),
        ({"duration_s": -1.0}, "duration_s"),
        ({"lags_s": (1.0, 2.0)}, "lags_s"),
        ({"kappas": (-1.0,)}, "kappas"),
        ({"disorder": (NoDelay(), NoDelay())}, "disorder"),
        ({"disorder": ()}, "disorder"),
        ({"arrivals": "bursty"}, "arrivals"),
        ({"params": EquiParams()}, "params: EquiParams does not fit workload 'sensors'"),
    ],
)
def test_spec_validation_names_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _spec("sensors", **kwargs)


@pytest.mark.parametrize(
    ("workload", "kwargs", "message"),
    [
        ("equi", {"lags_s": (1.0,)}, "lags_s: the 'equi' workload has no lags"),
        ("positions", {"kappas": (1.0,)}, "kappas"),
        ("news", {"kappas": (1.0,)}, "kappas"),
    ],
)
def test_lags_and_kappas_only_where_used(
    workload: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        _spec(workload, **kwargs)


def test_per_stream_accessors_broadcast_a_single_value() -> None:
    spec = _spec("sensors", lags_s=(5.0,), params=SensorParams(kappa=3.0))
    assert [spec.lag_of(i) for i in range(3)] == [5.0, 5.0, 5.0]
    assert [spec.kappa_of(i) for i in range(3)] == [3.0, 3.0, 3.0]
    assert spec.describe()["disorder"] == ["zipf:max=3000,skew=1.5,step=10"] * 3
