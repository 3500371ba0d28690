"""Measurements of one pipeline run from Kafka: output rate, recall, precision, latency.

Latency of a result = Kafka append time of its ``P.results`` record − the latest append
time among its members' input records (broker timestamps only; no clock inside the job
is trusted). p50/p99, output rate and recall are taken over the *steady* span: results
completed by input appended after the first ``warmup`` share of the input span (and at
least ``settle_ms`` of stream time in) and before its last ``tail`` share; the whole
run's numbers are kept beside them (``*_all``). The latency trend is the least-squares
slope of latency against completion time, the staleness trend one point per output
burst. docs/NOTES.md explains why the span and the trends are defined this way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.kit.readback import (
    MemberKey,
    appended_at,
    completed_at,
    completions_from,
    member_keys,
    our_id,
)
from bench.pipeline.truth import TrueResults
from connectors.io.consumer import Consumed
from pipeline.spec.model import JoinSpec


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
    staleness_slope: float | None = None  # ms of output staleness per second of run
    batch_ms_p50: float | None = None
    batch_ms_max: float | None = None
    stopped: str = ""
    output_rate_all: float | None = None  # the whole run, window fill included
    recall_all: float | None = None
    #: tuples/s per stream the broker actually appended (a producer that cannot keep
    #: the pace shows here), over the input append span × speedup
    input_rate_appended: float | None = None
    topic_prefix: str = ""  # the run's topics (P.in.*, P.results, P.metrics) on the broker
    #: where the steady span starts, stream seconds after the first input
    steady_from_s: float | None = None
    timeline: dict[str, list[float]] | None = None  # :func:`timeline`
    load: float | None = None  # the multiple of the workload's capacity
    window_s: float | None = None  # the join's (longest) window, stream seconds
    #: Spark's ``durationMs`` summed over the batches that read input, and their rows
    jvm_ms: dict[str, float] | None = None
    jvm_rows: int | None = None
    #: the instances' phase profile (:func:`bench.kit.profile.python_profile`)
    python_profile: dict[str, Any] | None = None
    #: input records dropped at the source as stale (``[job] max_staleness_ms``)
    stale: int | None = None

    def row(self) -> dict[str, Any]:
        """The JSON row (the contract fields first)."""
        return {
            "workload": self.workload, "method": self.method, "input_rate": self.input_rate,
            "output_rate": self.output_rate, "recall": self.recall,
            "precision": self.precision, "p50_ms": self.p50_ms, "p99_ms": self.p99_ms,
            "results": self.results, "true_results": self.true_results,
            "duplicates": self.duplicates, "wall_s": self.wall_s,
            "p99_all_ms": self.p99_all_ms, "latency_slope": self.latency_slope,
            "staleness_slope": self.staleness_slope,
            "batch_ms_p50": self.batch_ms_p50, "batch_ms_max": self.batch_ms_max,
            "stopped": self.stopped, "output_rate_all": self.output_rate_all,
            "recall_all": self.recall_all, "input_rate_appended": self.input_rate_appended,
            "topic_prefix": self.topic_prefix, "steady_from_s": self.steady_from_s,
            "timeline": self.timeline, "load": self.load, "window_s": self.window_s,
            "jvm_ms": self.jvm_ms, "jvm_rows": self.jvm_rows,
            "python_profile": self.python_profile, "stale": self.stale,
        }


def append_span(inputs: Sequence[Consumed]) -> tuple[float, float] | None:
    """(first, last) append time (ms) of the input records; None if none has one."""
    stamps = [c.timestamp_ms for c in inputs if c.timestamp_ms is not None]
    if not stamps:
        return None
    return float(min(stamps)), float(max(stamps))


def steady_bounds(span: tuple[float, float] | None, warmup: float, tail: float,
                  settle_ms: float = 0.0, speedup: float = 1.0
                  ) -> tuple[float, float] | None:
    """[max(first + warmup·len, first + settle_ms / speedup), last − tail·len] of the
    input append ``span`` (ms, :func:`append_span`; ``settle_ms`` is stream time, append
    time × ``speedup``)."""
    if span is None:
        return None
    first, last = span
    length = last - first
    return max(first + warmup * length, first + settle_ms / speedup), last - tail * length


def _within(points: Sequence[tuple[float, float]], bounds: tuple[float, float] | None
            ) -> list[tuple[float, float]]:
    if bounds is None:
        return []
    lo, hi = bounds
    return [(t, lat) for t, lat in points if lo <= t <= hi]


def steady_quality(correct: Mapping[str, Sequence[MemberKey]],
                   truth: Mapping[str, Sequence[MemberKey]],
                   appended: Mapping[MemberKey, int], bounds: tuple[float, float] | None,
                   speedup: float = 1.0) -> tuple[float, float] | None:
    """(output rate, recall) over the steady span ``bounds`` (:func:`steady_bounds`):
    correct results completed inside it per second of stream time (append time ×
    ``speedup``), and their share of the true results completed inside it (completion
    from the ``appended`` times, :func:`appended_at`). None without a span or true
    results inside it."""
    if bounds is None or bounds[1] <= bounds[0]:
        return None
    lo, hi = bounds

    def inside(keys: Sequence[MemberKey]) -> bool:
        done = completed_at(keys, appended)
        return done is not None and lo <= done <= hi

    true_done = TrueResults.of_mapping(truth).completed(appended)
    n_true = int(np.count_nonzero((true_done >= lo) & (true_done <= hi)))
    if n_true == 0:
        return None
    n_ok = sum(1 for rid, keys in correct.items() if rid in truth and inside(keys))
    return n_ok / ((hi - lo) / 1000.0 * speedup), n_ok / n_true


#: bucket of :func:`timeline` (stream seconds)
TIMELINE_BUCKET_S = 10.0


def timeline(correct: Mapping[str, Sequence[MemberKey]],
             truth: Mapping[str, Sequence[MemberKey]], appended: Mapping[MemberKey, int],
             first: float | None, bucket_s: float = TIMELINE_BUCKET_S,
             speedup: float = 1.0) -> dict[str, list[float]]:
    """Correct and true results per ``bucket_s`` of stream time, by completion (the
    latest member's append time, from the ``first`` input's): ``{"t_s": bucket starts,
    "ours": correct results, "true": the oracle's}`` — where in the run a method's
    output comes from (window fill, convergence, steady state)."""
    if first is None:
        return {"t_s": [], "ours": [], "true": []}
    width_ms = bucket_s * 1000.0 / speedup

    def bucket(keys: Sequence[MemberKey]) -> int | None:
        done = completed_at(keys, appended)
        return None if done is None else int((done - first) // width_ms)

    true_done = TrueResults.of_mapping(truth).completed(appended)
    true_done = true_done[~np.isnan(true_done)]
    true_b = ((true_done - first) // width_ms).astype(np.int64)
    ours_b = [b for b in (bucket(k) for rid, k in correct.items() if rid in truth)
              if b is not None]
    n = max(int(true_b.max(initial=-1)), max(ours_b, default=-1)) + 1
    ours = np.bincount(np.asarray(ours_b, dtype=np.int64), minlength=n)
    true = np.bincount(true_b, minlength=n)
    return {"t_s": [i * bucket_s for i in range(n)], "ours": [float(v) for v in ours],
            "true": [float(v) for v in true]}


#: results appended closer together than this belong to one output burst (micro-batch)
BURST_GAP_MS = 1000.0


def staleness(appended: Mapping[MemberKey, int], results: Sequence[Consumed],
              gap_ms: float = BURST_GAP_MS) -> list[tuple[float, float]]:
    """Per output burst: (latest completion among its results, first append time − that
    completion), i.e. how far behind the input the job was when it wrote that burst, in
    append order (``appended``: :func:`appended_at` of the inputs)."""
    rows = sorted(((float(c.timestamp_ms), completed_at(member_keys(c.record), appended))
                   for c in results if c.timestamp_ms is not None), key=lambda r: r[0])
    out: list[tuple[float, float]] = []
    start: float | None = None
    prev = -float("inf")
    latest: float | None = None
    for t, done in [*rows, (float("inf"), None)]:
        if t - prev > gap_ms:
            if start is not None and latest is not None:
                out.append((latest, start - latest))
            start, latest = t, None
        if done is not None:
            latest = done if latest is None else max(latest, done)
        prev = t
    return out


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
    truth: Mapping[str, Sequence[MemberKey]], inputs: Sequence[Consumed],
    results: Sequence[Consumed], wall_s: float, warmup: float = 0.0, tail: float = 0.0,
    settle_ms: float = 0.0, speedup: float = 1.0, batch_ms: Sequence[float] = (),
    stopped: str = "", topic_prefix: str = "",
) -> RunMeasure:
    """Recall/precision against the oracle (``truth``: result id → member keys); latency
    percentiles and trend, output rate and recall over the steady span (the whole run's
    output rate and recall too)."""
    by_id = {our_id(c.record): c.record for c in results}
    ids_total = len(results)
    distinct = set(by_id)
    truth = TrueResults.of_mapping(truth)
    correct = {rid: member_keys(by_id[rid]) for rid in distinct if rid in truth}
    appended = appended_at(inputs)
    stamps = append_span(inputs)
    first = None if stamps is None else stamps[0]
    bounds = steady_bounds(stamps, warmup, tail, settle_ms, speedup)
    # the staleness trend from the warm-up share on: a job that falls behind writes few,
    # long bursts, and a trend needs several
    trend_bounds = steady_bounds(stamps, warmup, tail)
    points = completions_from(appended, results)
    lat_all = [lat for _, lat in points]
    kept = _within(points, bounds)
    lat = [lat for _, lat in kept]
    batches = sorted(batch_ms)
    rate_all = len(correct) / duration_s
    recall_all = len(correct) / len(truth) if truth else 1.0
    span = (steady_quality(correct, truth, appended, bounds, speedup)
            if warmup > 0.0 or tail > 0.0 or settle_ms > 0.0 else None)
    return RunMeasure(
        workload=workload, method=method, input_rate=input_rate,
        output_rate=span[0] if span is not None else rate_all,
        recall=span[1] if span is not None else recall_all,
        precision=len(correct) / len(distinct) if distinct else 1.0,
        p50_ms=float(np.percentile(lat, 50)) if lat else None,
        p99_ms=float(np.percentile(lat, 99)) if lat else None,
        results=len(distinct), true_results=len(truth),
        duplicates=ids_total - len(distinct), wall_s=wall_s,
        p99_all_ms=float(np.percentile(lat_all, 99)) if lat_all else None,
        latency_slope=slope_ms_per_s(kept),
        staleness_slope=slope_ms_per_s(_within(staleness(appended, results), trend_bounds)),
        batch_ms_p50=batches[len(batches) // 2] if batches else None,
        batch_ms_max=batches[-1] if batches else None,
        stopped=stopped, output_rate_all=rate_all, recall_all=recall_all,
        input_rate_appended=appended_rate(inputs, speedup), topic_prefix=topic_prefix,
        steady_from_s=None if bounds is None or first is None
        else (bounds[0] - first) / 1000.0 * speedup,
        timeline=timeline(correct, truth, appended, first, speedup=speedup),
    )


def appended_rate(inputs: Sequence[Consumed], speedup: float = 1.0) -> float | None:
    """Input records appended per second of stream time per stream."""
    stamps = [c.timestamp_ms for c in inputs if c.timestamp_ms is not None]
    streams = {str(c.record["stream"]) for c in inputs}
    if len(stamps) < 2 or max(stamps) <= min(stamps):
        return None
    span_s = (max(stamps) - min(stamps)) / 1000.0 * speedup
    return len(stamps) / span_s / len(streams)


#: the oracle of the last input measured: its dump's SHA-1 and the truth
_TRUTH: dict[str, Any] = {}


def cached_truth(join: JoinSpec, dump: Path) -> TrueResults:
    """The exact results of the input dump (id → members' (stream, seq), compactly:
    :class:`~bench.pipeline.truth.TrueResults`), computed once for the runs that replay
    the same input (one rate, the same seed)."""
    from pipeline.core.jsonl import read_jsonl
    from pipeline.quality.oracle import oracle_members

    digest = hashlib.sha1(dump.read_bytes()).hexdigest()
    if _TRUTH.get("digest") != digest:
        _TRUTH.clear()
        records = read_jsonl(dump)
        seqs = oracle_members(join, records)
        del records
        _TRUTH["truth"] = TrueResults.of_members(join.streams, seqs)
        _TRUTH["digest"] = digest
    truth: TrueResults = _TRUTH["truth"]
    return truth
