"""What `harvest bench delivery` reads back: the results topic beside the job (receipt
times) and after it (distinct ids, duplicates), and the latency of each result: receipt −
the Kafka append time of its latest member (the same host clock)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.delivery.measures import Run
from bench.delivery.workload import STEADY
from bench.kit.readback import appended_at, completed_at, member_keys, read_topic
from pipeline.core.settings import Settings


class LiveReader(threading.Thread):
    """A read_committed consumer of the results topic beside the job: (record, wall ms
    at receipt) per result, until ``idle_s`` without a record after :meth:`finish`."""

    def __init__(self, settings: Settings, topic: str) -> None:
        super().__init__(daemon=True)
        self.settings, self.topic = settings, topic
        self.seen: list[tuple[dict[str, Any], float]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from connectors.io.consumer import Consumed, ConsumerConfig, consume
        from connectors.io.serde import AvroSerde

        config = ConsumerConfig.from_settings(self.settings, from_beginning=True,
                                              idle_timeout_s=30.0, read_committed=True)
        try:
            for item in consume([self.topic], config=config,
                                serde=AvroSerde.from_dir(self.settings.schemas_dir)):
                if isinstance(item, Consumed):
                    self.seen.append((item.record, time.time() * 1000.0))
        except BaseException as exc:  # reported by the caller
            self.error = exc


def _read(settings: Settings, topic: str) -> list[Any]:
    """Every record of ``topic``, read committed."""
    return read_topic(settings, topic, idle_timeout_s=10.0, read_committed=True)


def result_counts(settings: Settings, topic: str) -> Counter[str]:
    """How many times each result id was written to ``topic`` (read committed)."""
    return Counter(str(c.record["id"]) for c in _read(settings, topic))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The lower ``q`` quantile of ``values`` (None for none)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latencies(run: Run, seen: list[tuple[dict[str, Any], float]], settings: Settings,
               inputs: Sequence[str]) -> None:
    """p50/p99 of receipt − latest member append over the steady span."""
    appended = appended_at([c for t in inputs for c in _read(settings, t)])
    if not appended:
        return
    lo, hi = min(appended.values()), max(appended.values())
    a, b = lo + STEADY[0] * (hi - lo), lo + STEADY[1] * (hi - lo)
    lat: list[float] = []
    done: set[str] = set()
    for record, received in seen:
        rid = str(record["id"])
        if rid in done:
            continue
        done.add(rid)
        completed = completed_at(member_keys(record), appended)
        if completed is not None and a <= completed <= b:
            lat.append(received - completed)
    run.latencies = len(lat)
    run.p50_ms = None if not lat else round(percentile(lat, 0.5) or 0.0, 1)
    run.p99_ms = None if not lat else round(percentile(lat, 0.99) or 0.0, 1)
