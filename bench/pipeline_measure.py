"""Measurements of one pipeline run from Kafka: output rate, recall, precision, latency.

Latency (end to end) of a result = Kafka append time of the result record in
``P.results`` − the latest Kafka append time among its members' input records
(the member that completed the result). Both are broker/producer timestamps of the
records, so no clock inside the job is trusted.

p50/p99 are taken over the *steady* span of a run: results completed by an input
appended after the first ``warmup`` share of the input span and before its last ``tail``
share. The start has the query's first micro-batches (JIT, Python workers) and the end
has the results only the idle flush releases once input stops (DESIGN §3: K-slack holds
the newest K ms of every stream). ``p99_all_ms`` keeps every result. The latency *trend*
is the least-squares slope of latency against completion time over the steady span (ms
of latency gained per second of run): ≈ 0 when the job keeps up, > 0 when it falls
behind and its backlog grows.
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
    p99_all_ms: float | None = None
    latency_slope: float | None = None  # ms of latency per second of run (steady span)
    batch_ms_p50: float | None = None
    batch_ms_max: float | None = None
    stopped: str = ""

    def row(self) -> dict[str, Any]:
        """The JSON row (the contract fields first)."""
        return {
            "workload": self.workload, "method": self.method, "input_rate": self.input_rate,
            "output_rate": self.output_rate, "recall": self.recall,
            "precision": self.precision, "p50_ms": self.p50_ms, "p99_ms": self.p99_ms,
            "results": self.results, "true_results": self.true_results,
            "duplicates": self.duplicates, "wall_s": self.wall_s,
            "p99_all_ms": self.p99_all_ms, "latency_slope": self.latency_slope,
            "batch_ms_p50": self.batch_ms_p50, "batch_ms_max": self.batch_ms_max,
            "stopped": self.stopped,
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


def completions(inputs: Sequence[Consumed], results: Sequence[Consumed]
                ) -> list[tuple[float, float]]:
    """Per result: (append time of its latest member, latency ms); results with a member
    of unknown append time are skipped."""
    appended = {(str(c.record["stream"]), int(c.record["seq"])): c.timestamp_ms
                for c in inputs if c.timestamp_ms is not None}
    out: list[tuple[float, float]] = []
    for c in results:
        if c.timestamp_ms is None:
            continue
        times = [appended.get((str(m["stream"]), int(m["seq"]))) for m in c.record["members"]]
        known = [t for t in times if t is not None]
        if known and len(known) == len(times):
            done = float(max(known))
            out.append((done, float(c.timestamp_ms) - done))
    return out


def latencies_ms(inputs: Sequence[Consumed], results: Sequence[Consumed]) -> list[float]:
    """Per result: its append time − the latest append time of its members' inputs."""
    return [lat for _, lat in completions(inputs, results)]


def steady(points: Sequence[tuple[float, float]], inputs: Sequence[Consumed],
           warmup: float, tail: float) -> list[tuple[float, float]]:
    """The points completed inside [first + warmup·span, last − tail·span] of the input
    append times (see the module docstring)."""
    stamps = [c.timestamp_ms for c in inputs if c.timestamp_ms is not None]
    if not stamps:
        return []
    first, last = float(min(stamps)), float(max(stamps))
    span = last - first
    lo, hi = first + warmup * span, last - tail * span
    return [(t, lat) for t, lat in points if lo <= t <= hi]


def slope_ms_per_s(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of latency (ms) against completion time (s)."""
    if len(points) < 2:
        return None
    t = np.array([p[0] for p in points]) / 1000.0
    lat = np.array([p[1] for p in points])
    if float(t.max() - t.min()) <= 0.0:
        return None
    return float(np.polyfit(t - t.mean(), lat, 1)[0])


def measure(
    *, workload: str, method: str, input_rate: float, duration_s: float,
    truth_ids: set[str], inputs: Sequence[Consumed], results: Sequence[Consumed],
    wall_s: float, warmup: float = 0.0, tail: float = 0.0,
    batch_ms: Sequence[float] = (), stopped: str = "",
) -> RunMeasure:
    """Recall/precision against the oracle's ids; latency percentiles (steady span) and
    trend; output rate."""
    ids = [our_id(c.record) for c in results]
    distinct = set(ids)
    correct = distinct & truth_ids
    points = completions(inputs, results)
    lat_all = [lat for _, lat in points]
    kept = steady(points, inputs, warmup, tail)
    lat = [lat for _, lat in kept]
    batches = sorted(batch_ms)
    return RunMeasure(
        workload=workload, method=method, input_rate=input_rate,
        output_rate=len(correct) / duration_s,
        recall=len(correct) / len(truth_ids) if truth_ids else 1.0,
        precision=len(correct) / len(distinct) if distinct else 1.0,
        p50_ms=float(np.percentile(lat, 50)) if lat else None,
        p99_ms=float(np.percentile(lat, 99)) if lat else None,
        results=len(distinct), true_results=len(truth_ids),
        duplicates=len(ids) - len(distinct), wall_s=wall_s,
        p99_all_ms=float(np.percentile(lat_all, 99)) if lat_all else None,
        latency_slope=slope_ms_per_s(kept),
        batch_ms_p50=batches[len(batches) // 2] if batches else None,
        batch_ms_max=batches[-1] if batches else None,
        stopped=stopped,
    )
