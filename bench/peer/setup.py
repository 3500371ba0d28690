"""The inputs of `harvest bench peer` (:mod:`bench.peer.main`): the two workloads, their
specs, publishing them to Kafka, and :class:`Bench`, which runs one query of either
method on them (:mod:`bench.peer.runs`)."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from bench.kit.profile import python_profile
from bench.kit.progress import wait_first_progress
from bench.kit.readback import read_topic
from bench.peer.runs import (
    HARVEST,
    NO_RESULTS,
    QueryRun,
    drive,
    load_avg,
    read_results,
    start_query,
)
from pipeline.core.settings import Settings

STREAMS = ("s1", "s2", "s3")
DISORDER = "exp:mean=150"
TRIGGER_MS = 500
IDLE_FLUSH_MS = 2_000
#: the built-in join's shuffle partitions (its state store's parallelism on local[2])
GROUPS = 2
#: harvest's route keys in the local[2] parts (drain, startup, overhead, latency): on
#: two cores shared with the broker one key drained the equi backlog 1.17–1.22× faster
#: than two (session 30: the scan stage's routing and ticks cost more than the second
#: key's core gives the keyed stage); the scaling part measures both
HARVEST_GROUPS = 1


@dataclass(frozen=True)
class Workload:
    """One workload's records, join and routing."""

    name: str
    source: str  # harvest's workload name (input topics, schema)
    records: list[dict[str, Any]]
    join: dict[str, Any]
    routing: str
    segment_ms: int
    rate: float  # tuples/s per stream, stream time
    slack_ms: int
    truth: frozenset[str]
    #: the topics' name tag (``-scale`` for the long drains), so each backlog has its own
    topic_tag: str = ""

    @property
    def per_stream(self) -> int:
        return len(self.records) // len(STREAMS)


def workloads(quick: bool) -> dict[str, Workload]:
    """The short drains (``startup`` rows, the overhead part, the cluster part)."""
    equi_s, band_s = (12.0, 60.0) if quick else (60.0, 240.0)
    return _workloads({"equi": equi_s, "band": band_s}, "")


#: the long drains: 3 × 400,000 tuples of each workload (1,000/s for 400 s of equi,
#: 100/s for 4,000 s of band); ``--quick`` a tenth
SCALE_SECONDS = {"equi": 400.0, "band": 4_000.0}


def scale_workloads(quick: bool) -> dict[str, Workload]:
    """The long drains of the at-scale rows (≥ 1.2 M input rows each, full size)."""
    share = 10.0 if quick else 1.0
    return _workloads({k: v / share for k, v in SCALE_SECONDS.items()}, "-scale")


#: stream seconds of the latency sweep's equi input (``--quick``: a quarter): at 0.8× of
#: a drain capacity near 35,000 rows/s, ~32 s of input
LATENCY_SECONDS = 300.0


def latency_workload(quick: bool) -> Workload:
    """The latency sweep's input: the equi workload, 3 × 300,000 tuples."""
    seconds = LATENCY_SECONDS / (4.0 if quick else 1.0)
    return _workloads({"equi": seconds}, "-latency")["equi"]


def _workloads(seconds_of: dict[str, float], suffix: str) -> dict[str, Workload]:
    from connectors.workloads import WorkloadSpec, generate, parse_model
    from connectors.workloads.params import EquiParams
    from pipeline.quality.oracle import oracle
    from pipeline.spec.model import parse_spec

    out = {}
    uniform = EquiParams(domain=10_000, initial_skew=0.0, skew_min=0.0, skew_max=0.0,
                         gap_min_s=1e9, gap_max_s=1e9)
    for name, source, rate, join, routing in (
        ("equi", "equi", 1_000.0,
         {"window_ms": 1_000, "predicate": "equi", "attribute": "a1", "index": True}, "hash"),
        ("band", "sensors", 100.0,
         {"window_ms": 10_000, "predicate": "band", "attribute": "value", "epsilon": 0.1,
          "index": True}, "atr"),
    ):
        if name not in seconds_of:
            continue
        seconds = seconds_of[name]
        records = generate(WorkloadSpec(
            source, streams=len(STREAMS), rates=(rate,), duration_s=seconds,  # type: ignore[arg-type]
            disorder=(parse_model(DISORDER),), seed=19,
            params=uniform if source == "equi" else None))
        full = {"streams": list(STREAMS), **join}
        truth = frozenset(r.id for r in oracle(parse_spec({"join": full}).join, records))
        slack = max(int(r["arrival_time"]) - int(r["event_time"]) for r in records)
        out[name] = Workload(name, source, records, full, routing,
                             int(seconds * 1000) // 4, rate, slack, truth, suffix)
    return out


def _spec(w: Workload, prefix: str, out_topic: str, groups: int, max_offsets: int | None,
          trigger_ms: int, profile: bool = False) -> Any:
    from pipeline.spec.model import parse_spec

    job: dict[str, Any] = {"workload": w.source, "routing": w.routing, "groups": groups,
                           "segment_ms": w.segment_ms, "trigger_ms": trigger_ms,
                           "idle_flush_ms": IDLE_FLUSH_MS, "topic_prefix": prefix,
                           "profile": profile}
    if max_offsets is not None:
        job["max_offsets_per_trigger"] = max_offsets
    return parse_spec({"join": w.join, "disorder": {"mode": "fixed", "slack_ms": w.slack_ms},
                       "shedding": {"mode": "off"}, "job": job,
                       "output": {"topic": out_topic}})


def _publish(settings: Settings, prefix: str, w: Workload, speedup: float | None) -> None:
    from connectors.io.producer import publish
    from connectors.io.producer_config import Pacing, ProducerConfig
    from connectors.io.serde import AvroSerde
    from connectors.io.topics import input_topic, schema_for

    report = publish(
        w.records, config=ProducerConfig.from_settings(settings),
        serde=AvroSerde.from_dir(settings.schemas_dir), schema_name=schema_for(w.source),
        topic_of=lambda r: input_topic(prefix, w.source, str(r["stream"])),
        key_of=lambda r: str(r["stream"]).encode(),
        pace=Pacing(speedup=speedup) if speedup is not None else None)
    report.raise_on_failure()


class Bench:
    """The shared pieces of one bench run: settings, work folder, the input topics."""

    def __init__(self, settings: Settings, quick: bool) -> None:
        self.settings = settings
        self.quick = quick
        self.workdir = settings.cache_dir / "bench-peer"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.tag = uuid.uuid4().hex[:6]
        self.runs = 0
        self.prefixes: dict[str, str] = {}

    def input_prefix(self, w: Workload) -> str:
        """The drain topics of ``w``, published once (before any query reads them)."""
        key = w.name + w.topic_tag
        if key not in self.prefixes:
            prefix = f"bpr{self.tag}{w.name}{w.topic_tag.strip('-')}"
            self._prepare(w, prefix)
            _publish(self.settings, prefix, w, None)
            self.prefixes[key] = prefix
        return self.prefixes[key]

    def _prepare(self, w: Workload, prefix: str) -> None:
        from connectors.io.admin import ensure_topics
        from connectors.io.topics import input_topic

        ensure_topics(self.settings.resolved_bootstrap(),
                      [input_topic(prefix, w.source, s) for s in STREAMS],
                      client_config=self.settings.kafka_client_config())

    def run(self, spark: Any, w: Workload, method: str, *, groups: int | None = None,
            partitions: int | None = None, max_offsets: int | None = None,
            trigger_ms: int = TRIGGER_MS, paced: float | None = None,
            max_s: float = 1_800.0, profile: bool = False) -> tuple[QueryRun, Any]:
        """One query on ``w``: the drain topics, or (``paced`` = speed-up) fresh topics
        published in real time after the query started; with ``profile``, harvest's
        instances time their phases (``[job] profile``) and the run carries them
        (:attr:`QueryRun.python_profile`). ``groups`` (harvest's route keys) defaults to
        :data:`HARVEST_GROUPS`, ``partitions`` (shuffle partitions) to harvest's groups
        or, for the other methods, :data:`GROUPS`. Returns the run and its config."""
        from connectors.io.serde import AvroSerde
        from pipeline.spark.submit import job_config, prepare_topics

        groups = groups if groups is not None else HARVEST_GROUPS
        if partitions is None:
            partitions = groups if method == HARVEST else GROUPS
        self.runs += 1
        prefix = f"bpr{self.tag}p{self.runs}" if paced is not None else self.input_prefix(w)
        name = f"{method.replace('-', '')}{self.runs}"
        spec = _spec(w, prefix, f"{prefix}.out.{name}", groups, max_offsets, trigger_ms,
                     profile and method == HARVEST)
        settings = self.settings.model_copy(update={"topic_prefix": prefix})
        cfg = job_config(spec, settings, checkpoint=str(self.workdir / f"{self.tag}-{name}"))
        prepare_topics(cfg, settings)
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        run = QueryRun(method)
        begin = time.monotonic()
        load0 = load_avg()
        query = start_query(spark, method, cfg, AvroSerde.from_dir(self.settings.schemas_dir),
                            w.slack_ms)
        publisher = None
        if paced is not None:
            wait_first_progress(query, poll_s=0.3)
            publisher = threading.Thread(target=_publish, args=(settings, prefix, w, paced),
                                         daemon=True)
            publisher.start()
        try:
            drive(query, run, expect_rows=len(w.records),
                  flush_ms=IDLE_FLUSH_MS if method == HARVEST else None, max_s=max_s)
        finally:
            if publisher is not None:
                publisher.join(timeout=600)
        run.wall_s = round(time.monotonic() - begin, 1)
        run.load = (load0, load_avg())
        if method not in NO_RESULTS:  # the floor and the raw read write nothing
            read_results(run, settings, cfg.output_topics[0],
                         cfg.input_topics if paced is not None else None)
        if profile and method == HARVEST:
            metrics = [c.record for c in read_topic(settings, cfg.output_topics[1])]
            run.python_profile = python_profile(metrics)
        return run, cfg


def head(w: Workload, share: int) -> Workload:
    """The first 1/``share`` of ``w`` (a warm-up run; no oracle)."""
    return Workload(f"{w.name}-warmup{share}", w.source, w.records[:len(w.records) // share],
                    w.join, w.routing, w.segment_ms, w.rate, w.slack_ms, frozenset(),
                    w.topic_tag)


def replication(w: Workload, groups: int) -> float:
    """Routed rows / input rows of ``w`` over ``groups`` route keys (ATR copies)."""
    import numpy as np

    from pipeline.diffusion.routing import Router, RouterConfig

    spec = _spec(w, "x", "x.out", groups, None, TRIGGER_MS)
    index = {s: i for i, s in enumerate(STREAMS)}
    rows, _ = Router(RouterConfig.from_spec(spec)).route_batch(
        np.array([index[str(r["stream"])] for r in w.records]),
        np.array([int(r["event_time"]) for r in w.records]),
        np.array([r[w.join["attribute"]] for r in w.records]))
    return round(len(rows) / len(w.records), 3)
