"""Measurements of one pipeline run from Kafka: output rate, recall, precision, latency.

Latency (end to end) of a result = Kafka append time of the result record in
``P.results`` − the latest Kafka append time among its members' input records
(the member that completed the result). Both are broker/producer timestamps of the
records, so no clock inside the job is trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from connectors.consumer import Consumed, ConsumerConfig, consume
from connectors.serde import AvroSerde
from pipeline.config import Settings
from pipeline.operators.events import Member, result_id


@dataclass(frozen=True)
class RunMeasure:
    """One row of ``bench/results/pipeline.json`` (plus diagnostics)."""

    workload: str
    method: str
    input_rate: float  # tuples/s per stream, stream time
    output_rate: float  # distinct correct results per second of stream time
    recall: float
    precision: float
    p50_ms: float | None
    p99_ms: float | None
    results: int
    true_results: int
    duplicates: int
    wall_s: float

    def row(self) -> dict[str, Any]:
        """The JSON row (the contract fields first)."""
        return {
            "workload": self.workload, "method": self.method, "input_rate": self.input_rate,
            "output_rate": self.output_rate, "recall": self.recall,
            "precision": self.precision, "p50_ms": self.p50_ms, "p99_ms": self.p99_ms,
            "results": self.results, "true_results": self.true_results,
            "duplicates": self.duplicates, "wall_s": self.wall_s,
        }


def read_topic(settings: Settings, topic: str) -> list[Consumed]:
    """Every decodable record of ``topic`` from the beginning to its current end."""
    serde = AvroSerde.from_dir(settings.schemas_dir)
    config = ConsumerConfig.from_settings(settings, from_beginning=True, until_end=True,
                                          idle_timeout_s=5.0)
    return [c for c in consume([topic], config=config, serde=serde) if isinstance(c, Consumed)]


def our_id(record: Mapping[str, Any]) -> str:
    """The deterministic result id (DESIGN §4) recomputed from the members."""
    members = [Member(str(m["stream"]), int(m["seq"]), int(m["event_time"]))
               for m in record["members"]]
    return result_id(members)


def latencies_ms(inputs: Sequence[Consumed], results: Sequence[Consumed]) -> list[float]:
    """Per result: its append time − the latest append time of its members' inputs."""
    appended = {(str(c.record["stream"]), int(c.record["seq"])): c.timestamp_ms
                for c in inputs if c.timestamp_ms is not None}
    out: list[float] = []
    for c in results:
        if c.timestamp_ms is None:
            continue
        times = [appended.get((str(m["stream"]), int(m["seq"]))) for m in c.record["members"]]
        known = [t for t in times if t is not None]
        if len(known) == len(times):
            out.append(float(c.timestamp_ms - max(known)))
    return out


def measure(
    *, workload: str, method: str, input_rate: float, duration_s: float,
    truth_ids: set[str], inputs: Sequence[Consumed], results: Sequence[Consumed],
    wall_s: float,
) -> RunMeasure:
    """Recall/precision against the oracle's ids; latency percentiles; output rate."""
    ids = [our_id(c.record) for c in results]
    distinct = set(ids)
    correct = distinct & truth_ids
    lat = latencies_ms(inputs, results)
    return RunMeasure(
        workload=workload, method=method, input_rate=input_rate,
        output_rate=len(correct) / duration_s,
        recall=len(correct) / len(truth_ids) if truth_ids else 1.0,
        precision=len(correct) / len(distinct) if distinct else 1.0,
        p50_ms=float(np.percentile(lat, 50)) if lat else None,
        p99_ms=float(np.percentile(lat, 99)) if lat else None,
        results=len(distinct), true_results=len(truth_ids),
        duplicates=len(ids) - len(distinct), wall_s=wall_s,
    )
