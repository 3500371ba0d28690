"""A run read back from Kafka: the records of a topic, each result's id recomputed from
its members (ARCHITECTURE §4), and its latency from broker append times only — a result's
Kafka append time − the latest append time among its members' input records (no clock
inside the job is trusted)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.serde import AvroSerde
from pipeline.core.settings import Settings
from pipeline.operators.events import Member, result_id


def read_topic(settings: Settings, topic: str, *, idle_timeout_s: float = 5.0,
               read_committed: bool = False) -> list[Consumed]:
    """Every decodable record of ``topic`` from the beginning to its current end
    (``read_committed``: skipping aborted transactions' records)."""
    serde = AvroSerde.from_dir(settings.schemas_dir)
    config = ConsumerConfig.from_settings(settings, from_beginning=True, until_end=True,
                                          idle_timeout_s=idle_timeout_s,
                                          read_committed=read_committed)
    return [c for c in consume([topic], config=config, serde=serde) if isinstance(c, Consumed)]


def our_id(record: Mapping[str, Any]) -> str:
    """The deterministic result id (ARCHITECTURE §4) recomputed from the members."""
    members = [Member(str(m["stream"]), int(m["seq"]), int(m["event_time"]))
               for m in record["members"]]
    return result_id(members)


MemberKey = tuple[str, int]  # (stream, seq)


def appended_at(inputs: Sequence[Consumed]) -> dict[MemberKey, int]:
    """(stream, seq) → Kafka append time (ms) of every input record that has one."""
    return {(str(c.record["stream"]), int(c.record["seq"])): c.timestamp_ms
            for c in inputs if c.timestamp_ms is not None}


def completed_at(keys: Sequence[MemberKey], appended: Mapping[MemberKey, int]
                 ) -> float | None:
    """A result's completion: its latest member's append time; None if one is unknown."""
    times = [appended.get(k) for k in keys]
    if not times or any(t is None for t in times):
        return None
    return float(max(t for t in times if t is not None))


def member_keys(record: Mapping[str, Any]) -> list[MemberKey]:
    """The (stream, seq) of each member of a ``join_result`` record."""
    return [(str(m["stream"]), int(m["seq"])) for m in record["members"]]


def completions(inputs: Sequence[Consumed], results: Sequence[Consumed]
                ) -> list[tuple[float, float]]:
    """Per result: (append time of its latest member, latency ms); results with a member
    of unknown append time are skipped."""
    return completions_from(appended_at(inputs), results)


def completions_from(appended: Mapping[MemberKey, int], results: Sequence[Consumed]
                 ) -> list[tuple[float, float]]:
    """Per result: (completion, latency ms) with the inputs' ``appended`` times
    (:func:`appended_at`)."""
    out: list[tuple[float, float]] = []
    for c in results:
        if c.timestamp_ms is None:
            continue
        done = completed_at(member_keys(c.record), appended)
        if done is not None:
            out.append((done, float(c.timestamp_ms) - done))
    return out


def latencies_ms(inputs: Sequence[Consumed], results: Sequence[Consumed]) -> list[float]:
    """Per result: its append time − the latest append time of its members' inputs."""
    return [lat for _, lat in completions(inputs, results)]
