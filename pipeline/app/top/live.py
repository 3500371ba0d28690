"""`harvest top`'s loop: follow the job's metrics and results topics, read its checkpoint,
and hand one snapshot per refresh to the view.

Each refresh polls the topics for most of the refresh period (:class:`Follower`), folds
the records into the :class:`TopModel`, reads the committed micro-batches from the
checkpoint and asks the broker for the input topics' end offsets (the lag), then shows
the snapshot and waits out the rest of the period (the wait is where ``q`` is read).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.io.consumer import Consumed, ConsumerConfig, Undecodable
from connectors.io.follow import Follower
from connectors.io.serde import AvroSerde
from pipeline.app.top.checkpoint import read_batches
from pipeline.app.top.keys import Wait
from pipeline.app.top.model import TopModel
from pipeline.core.errors import ConfigError

#: the share of a refresh period spent reading the topics
POLL_SHARE = 0.7


@dataclass(frozen=True)
class Target:
    """What to follow: the metrics topic, the results topic (None: not followed), the
    checkpoint (None: no batch times or lag) and each topic's decoder."""

    metrics_topic: str
    results_topic: str | None
    checkpoint: str | None
    serdes: Mapping[str, AvroSerde]
    title: str = "harvest top"


def fold(model: TopModel, items: Sequence[Consumed | Undecodable], target: Target) -> None:
    """Records into the model: metrics rows, results (undecodable ones counted)."""
    for item in items:
        if item.topic == target.metrics_topic:
            if isinstance(item, Consumed):
                model.add_metric(item.record)
        elif item.topic == target.results_topic:
            model.add_result(item.record if isinstance(item, Consumed) else None)


def refresh(model: TopModel, follower: Follower, target: Target, budget_s: float) -> None:
    """One period's reading: topics, checkpoint, lag."""
    fold(model, follower.poll(budget_s), target)
    if target.checkpoint is None:
        return
    batches = read_batches(target.checkpoint)
    model.set_batches(batches)
    if batches:
        model.set_lag(follower.end_offsets(batches[-1].offsets))


def follow(target: Target, config: ConsumerConfig, show: Callable[[dict[str, Any]], None],
           wait: Wait, *, refresh_s: float = 1.0, duration_s: float | None = None,
           model: TopModel | None = None,
           wall_ms: Callable[[], float] = lambda: time.time() * 1000.0) -> TopModel:
    """Refresh every ``refresh_s`` until ``wait`` reports a quit key, or ``duration_s``
    has passed; ``show`` gets each snapshot. Returns the model."""
    if not refresh_s > 0:
        raise ConfigError(f"--refresh: must be > 0, got {refresh_s!r}")
    model = model if model is not None else TopModel()
    topics = {target.metrics_topic: target.serdes[target.metrics_topic]}
    if target.results_topic is not None:
        topics[target.results_topic] = target.serdes[target.results_topic]
    start = time.monotonic()
    with Follower(topics, config) as follower:
        while True:
            tick = time.monotonic()
            refresh(model, follower, target, refresh_s * POLL_SHARE)
            show(model.snapshot(wall_ms()))
            if duration_s is not None and time.monotonic() - start >= duration_s:
                return model
            if wait(refresh_s - (time.monotonic() - tick)):
                return model
