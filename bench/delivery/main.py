"""The run of `harvest bench delivery` (the package docstring says what it measures): the
broker, the inputs and their oracles, one Spark session for a warm-up and every run, the
report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.delivery.measures import Run
from bench.delivery.report import payload, plot
from bench.delivery.runs import run_query
from bench.delivery.workload import (
    DRAIN_RATE,
    DRAIN_S,
    EPSILON,
    MODES,
    PACED_EPSILON,
    PACED_RATE,
    PACED_S,
    WARMUP_S,
    records,
    spec,
)
from bench.kit.broker import kafka_up
from bench.kit.output import write_json
from bench.kit.spark import session_config, spark_session
from pipeline.core.settings import Settings


@dataclass(frozen=True)
class Inputs:
    """The drain and paced records with their true result ids, and K (the largest
    delay of either)."""

    drain: list[dict[str, Any]]
    drain_truth: set[str]
    paced: list[dict[str, Any]]
    paced_truth: set[str]
    slack: int

    def of(self, phase: str) -> tuple[list[dict[str, Any]], set[str]]:
        """The records and truth of ``phase`` (drain | paced)."""
        return (self.drain, self.drain_truth) if phase == "drain" else (
            self.paced, self.paced_truth)


def _truth(records_: list[dict[str, Any]], epsilon: float = EPSILON) -> set[str]:
    """The oracle's result ids of ``records_`` on the bench's join (band ``epsilon``)."""
    from pipeline.quality.oracle import oracle

    return {r.id for r in oracle(spec("at-least-once", "x", 0, None, epsilon).join, records_)}


def _inputs(quick: bool) -> Inputs:
    scale = 0.25 if quick else 1.0
    drain = records(DRAIN_RATE, DRAIN_S * scale, seed=5)
    paced = records(PACED_RATE, PACED_S * max(scale, 0.5), seed=6)
    slack = max(int(r["arrival_time"]) - int(r["event_time"]) for r in (*drain, *paced))
    inputs = Inputs(drain, _truth(drain), paced, _truth(paced, PACED_EPSILON), slack)
    print(f"drain: {len(drain)} records, {len(inputs.drain_truth)} results; paced: "
          f"{len(paced)} records, {len(inputs.paced_truth)} results; K = {slack} ms",
          flush=True)
    return inputs


def _runs(spark: Any, settings: Settings, workdir: Path, inputs: Inputs,
          quick: bool) -> list[Run]:
    """An unreported warm-up drain, then each sink's drains (A B B A) and paced runs."""
    order = [("drain", m) for m in (MODES if quick else (*MODES, *reversed(MODES)))]
    order += [("paced", m) for m in MODES]
    warm = records(DRAIN_RATE, WARMUP_S, seed=4)
    print("[bench delivery] warm-up drain (not reported)", flush=True)
    run_query(spark, settings, workdir, "drain", MODES[0], warm, _truth(warm), inputs.slack)
    runs: list[Run] = []
    for i, (phase, mode) in enumerate(order, 1):
        print(f"[bench delivery {i}/{len(order)}] {phase} {mode}", flush=True)
        records_, truth = inputs.of(phase)
        r = run_query(spark, settings, workdir, phase, mode, records_, truth, inputs.slack)
        runs.append(r)
        print(f"    {r.input_records} in, {r.results} results (oracle {r.true_results}, "
              f"equal {r.equals_oracle}, duplicates {r.duplicates}), throughput "
              f"{r.throughput} rec/s, p50 {r.p50_ms} p99 {r.p99_ms} ms, txn p50 "
              f"{r.txn_ms_p50} ms, commit p50 {r.commit_ms_p50} ms", flush=True)
    return runs


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Benchmark entry point (see the package docstring)."""
    settings = kafka_up(settings)
    workdir = settings.cache_dir / "bench-delivery"
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = _inputs(quick)
    with spark_session(session_config(settings, "harvest-bench-delivery")) as spark:
        runs = _runs(spark, settings, workdir, inputs, quick)
    body = payload(runs, quick, len(inputs.drain), len(inputs.paced), inputs.slack)
    write_json("delivery", body, results_dir)
    plot(body, results_dir)
    for line in body["summary"]:
        print(line)
    return 0 if body["targets_met"]["equal_to_oracle_without_duplicates"] else 1
