"""Deterministic workload generators (sensors, news, equi, positions) and disorder models.

Public API (stable; used by the operators' tests, the benchmarks, the Spark tests and
the demo)::

    from connectors.workloads import WorkloadSpec, ZipfDelay, generate, generate_workload

    spec = WorkloadSpec("sensors", streams=3, rates=(200.0,), duration_s=60.0,
                        lags_s=(0, 5, 15), kappas=(2, 2, 50),
                        disorder=(ZipfDelay(max_ms=20_000, skew=2.0),), seed=7)
    records = generate(spec)            # list of dicts, arrival order, Avro field names
    table = generate_workload(spec)     # columnar (NumPy) form; table.records(), .write_jsonl()
    schema_for("sensors")               # "sensor_reading"
"""

from connectors.io.topics import schema_for
from connectors.workloads.disorder import (
    BurstyDelay,
    DelayModel,
    ExponentialDelay,
    NoDelay,
    ZipfDelay,
    parse_disorder,
    parse_model,
)
from connectors.workloads.params import EquiParams, NewsParams, PositionParams, SensorParams
from connectors.workloads.registry import generate, generate_workload
from connectors.workloads.spec import WORKLOADS, WorkloadSpec
from connectors.workloads.table import Workload, read_jsonl

__all__ = [
    "WORKLOADS",
    "BurstyDelay",
    "DelayModel",
    "EquiParams",
    "ExponentialDelay",
    "NewsParams",
    "NoDelay",
    "PositionParams",
    "SensorParams",
    "Workload",
    "WorkloadSpec",
    "ZipfDelay",
    "generate",
    "generate_workload",
    "parse_disorder",
    "parse_model",
    "read_jsonl",
    "schema_for",
]
