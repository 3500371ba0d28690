"""`harvest bench delivery [--quick]`: exactly-once vs at-least-once output, same input.

The job is the e2e tests' exact band join (3 sensor streams, 1.5 s windows, ε = 0.1
(0.4 in the paced run), K = the largest delay, ATR over 2 route keys, 1 s trigger) —
shedding off, so both sinks must write exactly the oracle's results and the comparison
is of the sink alone:
``[output] delivery = "at-least-once"`` (Spark's Kafka sink) against ``"exactly-once"``
(one Kafka transaction per micro-batch from the driver, :mod:`pipeline.spark.exactly_once`).

* **Backlog drain** — the input (200 tuples/s per stream × 40 s of stream time, 24k
  records, ~24k results) is published while the query waits (after its first, empty
  micro-batch has planned the query and started the Python workers); the query drains
  it in micro-batches of ``max_offsets_per_trigger`` = 6000 offsets. Throughput = input
  records / the summed wall time of the micro-batches that read input (results/s
  beside it). A small unreported drain warms the Spark session up first; then each sink
  drains twice, in the order A B B A, against the load of the machine drifting; the
  row per sink is the mean of its two runs (both are in ``runs``).
* **Paced run** — 30 tuples/s per stream for 45 s, published in real time while the
  query runs (below the job's capacity on a shared 2-core machine). Latency of a result
  = when a ``read_committed`` consumer running beside the job received it − the Kafka
  append time of its latest member (the same host clock). p50/p99 over the results
  completed between 20 % and 90 % of the input span (the windows filling and the final
  idle flush left out).

Every run gets fresh topics and checkpoint; both sinks read the same generated records.
Each row also reports whether its results equal the oracle's, the duplicates, and for
exactly-once the median transaction and ``commit_transaction`` time per micro-batch.
Writes ``bench/results/delivery.json`` and ``delivery.png``.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.kit.output import save_figure, write_json
from pipeline.core.figures import new_figure
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

MODES = ("at-least-once", "exactly-once")
STREAMS = ("s1", "s2", "s3")
WINDOW_MS = 1500
EPSILON = 0.1
DISORDER = "exp:mean=150"
TRIGGER_MS = 1000
IDLE_FLUSH_MS = 2000
#: backlog drain: tuples/s per stream, stream seconds, offsets per micro-batch
DRAIN_RATE, DRAIN_S, DRAIN_OFFSETS = 200.0, 40.0, 6000
#: the unreported warm-up drain's stream seconds
WARMUP_S = 5.0
#: paced run: tuples/s per stream, stream seconds (published at real time)
PACED_RATE, PACED_S = 30.0, 45.0
#: the paced run's band width: results grow as rate³ · ε², so a wider band keeps enough
#: results for a p99 at the low rate
PACED_EPSILON = 0.4
#: the paced run's latencies count between these shares of the input span
STEADY = (0.2, 0.9)


@dataclass
class Run:
    """One query's numbers (a row of ``delivery.json``)."""

    phase: str  # drain | paced
    delivery: str
    input_records: int
    results: int  # distinct result ids read back (read_committed)
    true_results: int
    equals_oracle: bool
    duplicates: int  # result records read back (read_committed) − distinct ids
    batches: int
    wall_s: float
    #: drain: input records per second of micro-batch wall time (batches that read input)
    throughput: float | None = None
    results_per_s: float | None = None
    batch_ms_p50: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    latencies: int = 0
    #: exactly-once: median seconds of a micro-batch's transaction and of its commit
    txn_ms_p50: float | None = None
    commit_ms_p50: float | None = None
    transactions: int = 0
    topic_prefix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _spec(delivery: str, prefix: str, slack_ms: int, max_offsets: int | None,
          epsilon: float = EPSILON) -> Any:
    from pipeline.spec.model import parse_spec

    job: dict[str, Any] = {
        "workload": "sensors", "routing": "atr", "groups": 2, "segment_ms": 2000,
        "trigger_ms": TRIGGER_MS, "idle_flush_ms": IDLE_FLUSH_MS, "shuffle_partitions": 2,
        "topic_prefix": prefix}
    if max_offsets is not None:
        job["max_offsets_per_trigger"] = max_offsets
    return parse_spec({
        "join": {"streams": list(STREAMS), "window_ms": WINDOW_MS, "predicate": "band",
                 "attribute": "value", "epsilon": epsilon},
        "disorder": {"mode": "fixed", "slack_ms": slack_ms},
        "job": job, "output": {"delivery": delivery},
    })


def _records(rate: float, seconds: float, seed: int) -> list[dict[str, Any]]:
    from connectors.workloads import WorkloadSpec, generate, parse_model

    return generate(WorkloadSpec("sensors", streams=len(STREAMS), rates=(rate,),
                                 duration_s=seconds, disorder=(parse_model(DISORDER),),
                                 seed=seed))


class _LiveReader(threading.Thread):
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


def _read(settings: Settings, topic: str, read_committed: bool = True) -> list[Any]:
    from connectors.io.consumer import Consumed, ConsumerConfig, consume
    from connectors.io.serde import AvroSerde

    config = ConsumerConfig.from_settings(settings, from_beginning=True, until_end=True,
                                          idle_timeout_s=10.0, read_committed=read_committed)
    return [c for c in consume([topic], config=config,
                               serde=AvroSerde.from_dir(settings.schemas_dir))
            if isinstance(c, Consumed)]


def _publish(settings: Settings, prefix: str, records: Sequence[dict[str, Any]],
             paced: bool) -> None:
    from connectors.io.producer import publish
    from connectors.io.producer_config import Pacing, ProducerConfig
    from connectors.io.serde import AvroSerde
    from connectors.io.topics import input_topic

    report = publish(
        records, config=ProducerConfig.from_settings(settings),
        serde=AvroSerde.from_dir(settings.schemas_dir), schema_name="sensor_reading",
        topic_of=lambda r: input_topic(prefix, "sensors", str(r["stream"])),
        key_of=lambda r: str(r["stream"]).encode(),
        pace=Pacing(speedup=1.0) if paced else None)
    report.raise_on_failure()


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _run(spark: Any, settings: Settings, workdir: Path, phase: str, delivery: str,
         records: list[dict[str, Any]], truth: set[str], slack_ms: int) -> Run:
    """One query on fresh topics: start it, let it warm up, publish, wait until idle."""
    from connectors.io.serde import AvroSerde
    from pipeline.spark import job as job_module
    from pipeline.spark.submit import job_config, prepare_topics, watch

    prefix = f"bd{uuid.uuid4().hex[:8]}"
    paced = phase == "paced"
    spec = _spec(delivery, prefix, slack_ms, None if paced else DRAIN_OFFSETS,
                 PACED_EPSILON if paced else EPSILON)
    run_settings = settings.model_copy(update={"topic_prefix": prefix})
    cfg = job_config(spec, run_settings, checkpoint=str(workdir / prefix / "checkpoint"))
    prepare_topics(cfg, run_settings)
    results_topic = cfg.output_topics[0]
    start = time.monotonic()
    query = job_module.start_job(spark, cfg, AvroSerde.from_dir(settings.schemas_dir))
    deadline = time.monotonic() + 300.0
    while not query.recentProgress and query.isActive and time.monotonic() < deadline:
        time.sleep(0.5)  # the first (empty) micro-batch plans the query, starts workers
    reader = _LiveReader(run_settings, results_topic) if paced else None
    if reader is not None:
        reader.start()
    publisher = threading.Thread(target=_publish, args=(run_settings, prefix, records, paced),
                                 daemon=True)
    publisher.start()
    publisher.join()
    report = watch(query, cfg, until_idle_s=8.0, log_every_s=15.0, max_s=900.0)
    wall = time.monotonic() - start
    writer = job_module.WRITERS.pop(str(query.id), None)
    if writer is not None:
        writer.close()
    if reader is not None:
        reader.join(timeout=120.0)
        if reader.error is not None:
            raise reader.error
    got = Counter(str(c.record["id"]) for c in _read(run_settings, results_topic))
    busy_s = sum(report.batch_ms) / 1000.0
    run = Run(phase=phase, delivery=delivery, input_records=report.input_rows,
              results=len(got), true_results=len(truth), equals_oracle=set(got) == truth,
              duplicates=sum(got.values()) - len(got), batches=report.batches,
              wall_s=round(wall, 1), batch_ms_p50=_percentile(report.batch_ms, 0.5),
              topic_prefix=prefix, extra={"stopped": report.stopped})
    if not paced and busy_s > 0:
        run.throughput = round(report.input_rows / busy_s, 1)
        run.results_per_s = round(sum(got.values()) / busy_s, 1)
    if writer is not None and writer.writes:
        run.transactions = len(writer.writes)
        run.txn_ms_p50 = round(1000 * statistics.median(w.seconds for w in writer.writes), 2)
        run.commit_ms_p50 = round(
            1000 * statistics.median(w.commit_seconds for w in writer.writes), 2)
    if reader is not None:
        _latencies(run, reader.seen, run_settings, cfg.input_topics)
    return run


def _latencies(run: Run, seen: list[tuple[dict[str, Any], float]], settings: Settings,
               inputs: Sequence[str]) -> None:
    """p50/p99 of receipt − latest member append over the steady span."""
    from bench.kit.readback import appended_at, member_keys

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
        times = [appended.get(k) for k in member_keys(record)]
        if not times or any(t is None for t in times):
            continue
        completed = float(max(t for t in times if t is not None))
        if a <= completed <= b:
            lat.append(received - completed)
    run.latencies = len(lat)
    run.p50_ms = None if not lat else round(_percentile(lat, 0.5) or 0.0, 1)
    run.p99_ms = None if not lat else round(_percentile(lat, 0.99) or 0.0, 1)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 2) if known else None


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Benchmark entry point (see the module docstring)."""
    from connectors.launch.broker import LocalKafka
    from connectors.launch.broker_config import BrokerConfig
    from pipeline.quality.oracle import oracle
    from pipeline.spark.session import SessionConfig, build_session, connector_jars

    scale = 0.25 if quick else 1.0
    status = LocalKafka(BrokerConfig.from_settings(settings)).up()
    settings = settings.model_copy(update={"bootstrap_servers": status.bootstrap})
    workdir = settings.cache_dir / "bench-delivery"
    workdir.mkdir(parents=True, exist_ok=True)
    drain = _records(DRAIN_RATE, DRAIN_S * scale, seed=5)
    paced = _records(PACED_RATE, PACED_S * max(scale, 0.5), seed=6)
    join = _spec("at-least-once", "x", 0, None).join
    drain_truth = {r.id for r in oracle(join, drain)}
    paced_truth = {r.id for r in oracle(_spec("at-least-once", "x", 0, None,
                                              PACED_EPSILON).join, paced)}
    slack = max(int(r["arrival_time"]) - int(r["event_time"]) for r in (*drain, *paced))
    print(f"drain: {len(drain)} records, {len(drain_truth)} results; paced: {len(paced)} "
          f"records, {len(paced_truth)} results; K = {slack} ms", flush=True)
    spark = build_session(SessionConfig(master="local[2]", app_name="harvest-bench-delivery",
                                        jars=connector_jars(settings), shuffle_partitions=2))
    order = [("drain", m) for m in (MODES if quick else (*MODES, *reversed(MODES)))]
    order += [("paced", m) for m in MODES]
    runs: list[Run] = []
    try:
        warm = _records(DRAIN_RATE, WARMUP_S, seed=4)
        print("[bench delivery] warm-up drain (not reported)", flush=True)
        _run(spark, settings, workdir, "drain", MODES[0], warm,
             {r.id for r in oracle(join, warm)}, slack)
        for i, (phase, mode) in enumerate(order, 1):
            print(f"[bench delivery {i}/{len(order)}] {phase} {mode}", flush=True)
            records, truth = (drain, drain_truth) if phase == "drain" else (paced, paced_truth)
            r = _run(spark, settings, workdir, phase, mode, records, truth, slack)
            runs.append(r)
            print(f"    {r.input_records} in, {r.results} results (oracle {r.true_results}, "
                  f"equal {r.equals_oracle}, duplicates {r.duplicates}), throughput "
                  f"{r.throughput} rec/s, p50 {r.p50_ms} p99 {r.p99_ms} ms, txn p50 "
                  f"{r.txn_ms_p50} ms, commit p50 {r.commit_ms_p50} ms", flush=True)
    finally:
        spark.stop()
    payload = _payload(runs, quick, len(drain), len(paced), slack)
    write_json("delivery", payload, results_dir)
    _plot(payload, results_dir)
    for line in payload["summary"]:
        print(line)
    return 0 if payload["targets_met"]["equal_to_oracle_without_duplicates"] else 1


def _payload(runs: list[Run], quick: bool, drain_n: int, paced_n: int,
             slack: int) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        d = [r for r in runs if r.phase == "drain" and r.delivery == mode]
        p = next(r for r in runs if r.phase == "paced" and r.delivery == mode)
        rows[mode] = {"throughput": _mean([r.throughput for r in d]),
                      "throughput_runs": [r.throughput for r in d],
                      "results_per_s": _mean([r.results_per_s for r in d]),
                      "drain_batch_ms_p50": _mean([r.batch_ms_p50 for r in d]),
                      "p50_ms": p.p50_ms, "p99_ms": p.p99_ms,
                      "paced_batch_ms_p50": p.batch_ms_p50,
                      "txn_ms_p50": _mean([r.txn_ms_p50 for r in d]),
                      "commit_ms_p50": _mean([r.commit_ms_p50 for r in d]),
                      "paced_txn_ms_p50": p.txn_ms_p50}
    alo, eo = rows["at-least-once"], rows["exactly-once"]
    ratio = (eo["throughput"] / alo["throughput"]
             if eo["throughput"] and alo["throughput"] else None)
    extra = (eo["p99_ms"] - alo["p99_ms"]
             if eo["p99_ms"] is not None and alo["p99_ms"] is not None else None)
    summary = [
        f"backlog drain: exactly-once {eo['throughput']} vs at-least-once "
        f"{alo['throughput']} input records/s (ratio {ratio:.2f})" if ratio else
        "backlog drain: n/a",
        f"paced p99 latency: exactly-once {eo['p99_ms']} ms vs at-least-once "
        f"{alo['p99_ms']} ms ({extra:+.0f} ms)" if extra is not None else "paced: n/a",
        f"exactly-once per micro-batch: transaction {eo['txn_ms_p50']} ms, of which "
        f"commit_transaction {eo['commit_ms_p50']} ms (medians, drain; micro-batch "
        f"p50 {eo['drain_batch_ms_p50']} ms); paced: transaction {eo['paced_txn_ms_p50']} "
        f"ms of a {eo['paced_batch_ms_p50']} ms micro-batch",
    ]
    ok = all(r.equals_oracle and r.duplicates == 0 for r in runs)
    return {
        "quick": quick, "trigger_ms": TRIGGER_MS, "window_ms": WINDOW_MS,
        "epsilon": EPSILON, "disorder": DISORDER, "slack_ms": slack,
        "drain": {"rate": DRAIN_RATE, "records": drain_n,
                  "max_offsets_per_trigger": DRAIN_OFFSETS},
        "paced": {"rate": PACED_RATE, "records": paced_n, "steady_span": list(STEADY)},
        "by_delivery": rows, "throughput_ratio_eo_over_alo": ratio,
        "p99_extra_ms_eo": extra, "runs": [asdict(r) for r in runs],
        "summary": summary,
        "targets_met": {"equal_to_oracle_without_duplicates": ok},
    }


def _plot(payload: dict[str, Any], results_dir: Path) -> None:
    fig, axes = new_figure(ncols=2, nrows=1, size=(10.0, 4.0))
    rows = payload["by_delivery"]
    colors = ("tab:blue", "tab:orange")
    for ax, key, title in ((axes[0], "throughput", "backlog drain (input records/s)"),
                           (axes[1], "p99_ms", "paced run: p99 result latency (ms)")):
        values = [rows[m][key] or 0.0 for m in MODES]
        bars = ax.bar(list(MODES), values, color=colors)
        for bar, v in zip(bars, values, strict=True):
            ax.annotate(f"{v:.0f}", (bar.get_x() + bar.get_width() / 2, v),
                        ha="center", va="bottom", fontsize=9)
        ax.set_title(title)
    fig.suptitle(f"[output] delivery, same input (trigger {payload['trigger_ms']} ms)")
    save_figure(fig, "delivery", results_dir)
