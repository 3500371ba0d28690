"""Replay a dump (JSON-lines records) through the in-process engine in arrival order.

Used by ``harvest join`` and by benchmarks. Records are validated up front (envelope
fields and the predicate's attributes) so a bad record stops the run before any
output is written, with its line number.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.core.errors import SerializationError
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event, JoinResult, event_from_dump
from pipeline.runtime.resolve import runtime_env

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class ReplaySummary:
    """What ``--summary`` writes: counts, stream time covered, cost per stream second."""

    inputs: int
    results: int
    dropped: int
    late: int
    discarded: int
    comparisons: int
    cost: float
    stream_seconds: float
    cost_per_second: float
    cpu_seconds: float
    tuples_per_cpu_second: float
    #: ``[memory]`` on: evictions, tuples per window, window_state, kslack_tuples (else None)
    memory: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_events(config: EngineConfig, records: Sequence[tuple[int, dict[str, Any]]]) -> list[Event]:
    """Events in arrival order (stable); every record validated, errors name the line."""
    index = {s: i for i, s in enumerate(config.streams)}
    events: list[Event] = []
    for lineno, rec in records:
        try:
            ev = event_from_dump(rec, index)
            config.predicate.encode(ev.attrs)
        except SerializationError as exc:
            raise SerializationError(f"line {lineno}: {exc}") from None
        events.append(ev)
    events.sort(key=lambda e: e.arrival)
    return events


def replay(
    config: EngineConfig,
    events: Sequence[Event],
    on_results: Callable[[list[JoinResult]], None],
    on_metrics: Callable[[list[dict[str, Any]]], None] | None = None,
    progress: ProgressFn | None = None,
    cpu_clock: Callable[[], float] = time.process_time,
    env: PluginEnv | None = None,
) -> ReplaySummary:
    """Run every event, flush at the end, and summarize (``cpu_clock`` is injected;
    ``env`` defaults to :func:`~pipeline.runtime.resolve.runtime_env`)."""
    engine = Engine(config, env if env is not None else runtime_env())
    start = cpu_clock()
    total = len(events)
    step = max(1, total // 200)
    for n, ev in enumerate(events, start=1):
        out = engine.process(ev)
        if out:
            on_results(out)
        if n % step == 0:
            if on_metrics is not None:
                on_metrics(engine.drain_metrics())
            if progress is not None:
                progress(n, total)
    on_results(engine.flush())
    if on_metrics is not None:
        on_metrics(engine.drain_metrics())
    if progress is not None:
        progress(total, total)
    cpu = max(cpu_clock() - start, 1e-9)
    stats = engine.stats
    stamps = [e.ts for e in events]
    span = (max(stamps) - min(stamps)) / 1000.0 if stamps else 0.0
    return ReplaySummary(
        inputs=stats.inputs,
        results=stats.results,
        dropped=stats.dropped,
        late=stats.late,
        discarded=stats.discarded,
        comparisons=stats.comparisons,
        cost=stats.cost,
        stream_seconds=span,
        cost_per_second=stats.cost / span if span > 0 else 0.0,
        cpu_seconds=cpu,
        tuples_per_cpu_second=stats.inputs / cpu,
        memory=engine.memory_metrics(),
    )
