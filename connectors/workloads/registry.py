"""Entry point of the workload generators: spec in, records in arrival order out.

>>> from connectors.workloads import WorkloadSpec, ZipfDelay, generate
>>> spec = WorkloadSpec("sensors", streams=3, rates=(100.0,), duration_s=2.0,
...                     lags_s=(0, 5, 15), kappas=(2, 2, 50),
...                     disorder=(ZipfDelay(max_ms=20_000, skew=3.0),), seed=7)
>>> records = generate(spec)
>>> sorted(records[0])
['a1', 'arrival_time', 'event_time', 'seq', 'stream', 'value', 'x', 'y']
>>> from connectors.workloads import schema_for
>>> schema_for("news")
'news_item'

Per stream, tuples are numbered ``seq`` = 1..n in event-time order; each gets a delay
from its stream's disorder model and ``arrival_time = event_time + delay``; all streams
are then merged in arrival order: by ``arrival_time``, then stream number, then ``seq``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from connectors.io.topics import schema_for
from connectors.workloads.disorder import sample_delays
from connectors.workloads.equi import equi_columns
from connectors.workloads.news import item_keywords, story_ids, story_profiles, vocabulary_words
from connectors.workloads.overlap import overlap_columns
from connectors.workloads.params import (
    EquiParams,
    NewsParams,
    OverlapParams,
    PositionParams,
    SensorParams,
)
from connectors.workloads.positions import position_columns
from connectors.workloads.sensors import sensor_columns
from connectors.workloads.spec import (
    TAG_DELAYS,
    TAG_KEYWORDS,
    TAG_SHARED,
    TAG_VALUES,
    WorkloadSpec,
    event_times,
)
from connectors.workloads.table import ItemSets, Keywords, Workload

_EXTRA_KEYS = ("a1_skew",)


def _attributes(spec: WorkloadSpec, i: int, times: np.ndarray) -> dict[str, np.ndarray]:
    params = spec.resolved_params()
    rng = spec.rng(i, TAG_VALUES)
    if isinstance(params, SensorParams):
        return sensor_columns(times, spec.start_ms, spec.lag_of(i), spec.kappa_of(i), params, rng)
    if isinstance(params, EquiParams):
        return equi_columns(times, spec.start_ms, spec.duration_s, params, rng)
    if isinstance(params, PositionParams):
        return position_columns(times, spec.start_ms, i + 1, params, rng,
                                spec.rng(0, TAG_VALUES) if i > 0 else None)
    if isinstance(params, OverlapParams):
        return overlap_columns(times, spec.start_ms, spec.lag_of(i), params, rng)
    return {"story": story_ids((times - spec.start_ms) / 1000.0, spec.lag_of(i), params, rng)}


def generate_workload(spec: WorkloadSpec) -> Workload:
    """Generate ``spec`` in columnar form, sorted by arrival (vectorized; ~1M tuples/s)."""
    parts: list[dict[str, np.ndarray]] = []
    for i in range(spec.streams):
        times = event_times(spec, i)
        cols = _attributes(spec, i, times)
        delay = sample_delays(spec.delay_model_of(i), times, spec.rng(i, TAG_DELAYS))
        cols.update(
            stream=np.full(len(times), i, dtype=np.int64),
            seq=np.arange(1, len(times) + 1, dtype=np.int64),
            event_time=times,
            arrival_time=times + delay,
            delay=delay,
        )
        parts.append(cols)
    if spec.workload == "news":
        _add_news_keywords(spec, parts)
    if "set_items" in parts[0]:
        _pad_sets(parts)
    merged = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    order = np.lexsort((merged["seq"], merged["stream"], merged["arrival_time"]))
    merged = {key: col[order] for key, col in merged.items()}
    extras = {key: merged.pop(key) for key in _EXTRA_KEYS if key in merged}
    keywords = None
    if spec.workload == "news":
        params = spec.resolved_params()
        assert isinstance(params, NewsParams)
        vocab = tuple(vocabulary_words(params.vocabulary))
        keywords = Keywords(merged.pop("kw_idx"), merged.pop("kw_w"), vocab)
    sets = ItemSets(merged.pop("set_items")) if "set_items" in merged else None
    return Workload(spec, schema_for(spec.workload), merged, keywords, extras, sets)


def _pad_sets(parts: list[dict[str, np.ndarray]]) -> None:
    """Every stream's item-set matrix padded (−1) to the widest stream's width."""
    width = max(p["set_items"].shape[1] for p in parts)
    for p in parts:
        sets = p["set_items"]
        pad = np.full((sets.shape[0], width - sets.shape[1]), -1, dtype=np.int64)
        p["set_items"] = np.concatenate([sets, pad], axis=1)


def _add_news_keywords(spec: WorkloadSpec, parts: list[dict[str, np.ndarray]]) -> None:
    """Story profiles (shared by all agencies) and each stream's noisy item keywords."""
    params = spec.resolved_params()
    assert isinstance(params, NewsParams)
    n_stories = 1 + max((int(p["story"].max()) for p in parts if len(p["story"])), default=0)
    profile_idx, profile_w = story_profiles(n_stories, params, spec.rng(0, TAG_SHARED))
    for i, part in enumerate(parts):
        rng = spec.rng(i, TAG_KEYWORDS)
        part["kw_idx"], part["kw_w"] = item_keywords(
            part["story"], profile_idx, profile_w, params, rng
        )


def generate(spec: WorkloadSpec) -> list[dict[str, Any]]:
    """Every record of ``spec`` as Avro-ready dicts, in arrival order."""
    return generate_workload(spec).records()
