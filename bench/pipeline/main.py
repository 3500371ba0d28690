"""The run of `harvest bench pipeline` (the package docstring says what it measures): the
broker, each workload's capacity, one Spark session for the sweep's cases, the JSON
rewritten after every case, then the join instance's own profile on the demo workload
(:mod:`bench.pipeline.instance`); ``--only`` points (and ``instance-profile``) merged into
an earlier run's JSON; and ``--only remeasure``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.kit.broker import kafka_up
from bench.kit.output import write_json
from bench.kit.spark import session_config, spark_session
from bench.pipeline import instance
from bench.pipeline.instance import INSTANCE_PROFILE
from bench.pipeline.measure import RunMeasure
from bench.pipeline.report import median_run, payload, progress_line, publish
from bench.pipeline.runs import measure_case, run_case
from bench.pipeline.workload import (
    DURATION_S,
    METHODS,
    QUICK_DURATION_S,
    QUICK_SWEEP,
    QUICK_WORKLOAD,
    SPEEDUP,
    SWEEP,
    WORKLOADS,
    Case,
    SweepWorkload,
    workload_capacity,
    workload_named,
)
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.settings import Settings

#: a run still behind this long after its input ended is stopped (its p99 is then over the
#: 24 s bound anyway; 40 s keeps the 30-run sweep near an hour)
GRACE_S = 40.0
REMEASURE = "remeasure"


@dataclass(frozen=True)
class Point:
    """One run of the plan: a workload, a load (× its capacity), a method."""

    workload: SweepWorkload
    load: float
    method: str


def plan(quick: bool, only: str | None = None) -> list[Point]:
    """The runs: the quick smoke, the full sweep, or the ``--only`` parts (comma-separated
    ``workload``, ``workload:load`` or ``workload:load:method``; ConfigError naming a
    part that names no point of the sweep)."""
    if only is None:
        sweep, wls = (QUICK_SWEEP, (workload_named(QUICK_WORKLOAD),)) if quick else (
            SWEEP, WORKLOADS)
        return [Point(w, load, m) for w in wls for load, ms in sweep.items() for m in ms]
    points: list[Point] = []
    for part in (p.strip() for p in only.split(",") if p.strip()):
        name, *rest = part.split(":")
        wl = workload_named(name)
        try:
            loads = [float(rest[0])] if rest else list(SWEEP)
        except ValueError:
            raise ConfigError(f"--only: load of {part!r} is not a number") from None
        for load in loads:
            if load not in SWEEP:
                raise ConfigError(f"--only: load {load:g} of {part!r} is not one of "
                                  + ", ".join(f"{x:g}" for x in SWEEP))
            methods = SWEEP[load] if len(rest) < 2 else (rest[1],)
            if any(m not in METHODS for m in methods) or len(rest) > 2:
                raise ConfigError(f"--only: {part!r} is not workload[:load[:method]] "
                                  f"with a method of {', '.join(METHODS)}")
            points += [Point(wl, load, m) for m in methods]
    if not points:
        raise ConfigError(f"--only: no point in {only!r}")
    return points


def _earlier(results_dir: Path) -> dict[str, Any] | None:
    """The earlier sweep's JSON to merge ``--only`` points into (None: none, or one
    written before the sweep had workloads and loads)."""
    path = results_dir / "pipeline.json"
    if not path.exists():
        return None
    old = json.loads(path.read_text())
    if "capacity_rate" in old.get("capacity", {}):
        return None
    return dict(old)


def _remeasure_row(row: dict[str, Any], old: dict[str, Any], settings: Settings,
                   workdir: Path) -> dict[str, Any]:
    """One row of the old JSON measured again; what only the run saw is kept."""
    wl = workload_named(str(row["workload"]))
    case = Case(wl.name, row["method"], float(row["input_rate"]),
                wl.spec(row["method"], settings), (), float(old["duration_s"]),
                float(row.get("load") or 0.0))
    m = measure_case(case, str(row["topic_prefix"]), settings, workdir, float(old["speedup"]),
                     wall=float(row["wall_s"]), batch_ms=[], stopped=str(row.get("stopped", "")))
    print(f"re-measured {case.workload} {case.method} at {case.rate:.0f}/s", flush=True)
    return {**replace(m, batch_ms_p50=row.get("batch_ms_p50"),
                      batch_ms_max=row.get("batch_ms_max"), jvm_ms=row.get("jvm_ms"),
                      jvm_rows=row.get("jvm_rows")).row()}


def remeasure(results_dir: Path, settings: Settings) -> int:
    """``--only remeasure``: measure the runs of the existing ``pipeline.json`` again from
    their topics (``topic_prefix`` of each row; the broker keeps them) and input dumps,
    with this package's measures; what only the run itself saw (wall time, micro-batch
    durations, why it stopped) is kept from the row."""
    old = json.loads((results_dir / "pipeline.json").read_text())
    for row in old["rows"]:
        if not row.get("topic_prefix"):
            raise InfraError(f"bench pipeline: row {row['workload']}/{row['method']} at "
                             f"{row['input_rate']:.0f}/s names no topic_prefix to re-measure")
    settings = kafka_up(settings)
    workdir = settings.cache_dir / "bench-pipeline"
    rows = [_remeasure_row(row, old, settings, workdir) for row in old["rows"]]
    body = payload(rows, old["capacity"], bool(old["quick"]), float(old["speedup"]),
                   float(old["duration_s"]), old.get("instance_profile"))
    body["remeasured"] = True
    return publish(body, results_dir)


def _capacity(wl: SweepWorkload, caps: dict[str, Any], settings: Settings) -> float:
    """``wl``'s capacity (tuples/s per stream): the earlier run's for ``--only`` points,
    so a re-run point has the rate it had, unless that run had another workload under
    the name (generator arguments, window or ε: ``definition``); measured otherwise."""
    args = wl.definition()
    if caps.get(wl.name, {}).get("definition") != args:
        t0 = time.monotonic()
        cap = workload_capacity(wl, settings)
        print(f"capacity of {wl.name} ({time.monotonic() - t0:.0f} s): {cap.describe()}",
              flush=True)
        caps[wl.name] = {**cap.snapshot(), "definition": args}
    return float(caps[wl.name]["capacity_rate"])


def _merge(rows: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """``rows`` with ``new`` in place of the row of its workload, load and method."""
    def same(r: dict[str, Any]) -> bool:
        return all(r.get(k) == new[k] for k in ("workload", "load", "method"))
    return [r for r in rows if not same(r)] + [new]


def _sweep(points: list[Point], rows: list[dict[str, Any]], caps: dict[str, Any],
           quick: bool, settings: Settings, results_dir: Path, repeats: int = 1
           ) -> list[dict[str, Any]]:
    """Run ``points`` on one Spark session, ``repeats`` rounds of every point in turn (so
    the runs of two methods at one point alternate); a point's row is its median run
    (:func:`~bench.pipeline.report.median_run`). The JSON is rewritten (``partial``)
    after each run."""
    duration = QUICK_DURATION_S if quick else DURATION_S
    workdir = settings.cache_dir / "bench-pipeline"
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    runs: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    total = len(points) * repeats
    with spark_session(session_config(settings, "harvest-bench-pipeline")) as spark:
        for i, (rep, p) in enumerate(((r, p) for r in range(repeats) for p in points), 1):
            rate = p.load * _capacity(p.workload, caps, settings)
            seconds = p.workload.run_seconds(quick)
            case = Case(p.workload.name, p.method, rate, p.workload.spec(p.method, settings),
                        p.workload.produce_args(seconds), seconds, p.load)
            print(f"[bench pipeline {i}/{total} +{time.monotonic() - t0:.0f}s] "
                  f"{case.workload} {case.method} at {p.load:g}× = {rate:.0f}/s per stream"
                  + (f" (run {rep + 1} of {repeats})" if repeats > 1 else ""), flush=True)
            m: RunMeasure = run_case(case, spark, settings, workdir, SPEEDUP, GRACE_S)
            row = m.row()
            print(progress_line(row), flush=True)
            done = runs.setdefault((p.workload.name, p.load, p.method), [])
            done.append(row)
            rows = _merge(rows, median_run(done) if repeats > 1 else done[0])
            if i < total:
                body = payload(rows, caps, quick, SPEEDUP, duration)
                body["partial"] = f"{i} of {total} runs done"
                write_json("pipeline", body, results_dir)
    return rows


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None,
        repeats: int = 1) -> int:
    """Benchmark entry point (see the package docstring); ``only``: ``remeasure`` (see
    :func:`remeasure`) or the points to run again (:func:`plan`), merged into the
    existing ``pipeline.json``; ``repeats``: runs of every point (:func:`_sweep`)."""
    if repeats < 1:
        raise ConfigError(f"--repeats: must be >= 1, got {repeats}")
    if only == REMEASURE:
        return remeasure(results_dir, settings)
    parts = [p.strip() for p in (only or "").split(",") if p.strip()]
    profiled = only is None or INSTANCE_PROFILE in parts
    points_only = ",".join(p for p in parts if p != INSTANCE_PROFILE)
    points = plan(quick, points_only or None) if only is None or points_only else []
    old = _earlier(results_dir) if only is not None else None
    rows: list[dict[str, Any]] = list(old["rows"]) if old else []
    caps: dict[str, Any] = dict(old["capacity"]) if old else {}
    if points:
        settings = kafka_up(settings)
        rows = _sweep(points, rows, caps, quick, settings, results_dir, repeats)
    profile = (instance.measure(settings.demo_spec, 1 if quick else instance.REPEATS)
               if profiled
               else (old or {}).get("instance_profile"))
    duration = (float(old["duration_s"]) if old and not points
                else QUICK_DURATION_S if quick else DURATION_S)
    return publish(payload(rows, caps, quick, SPEEDUP, duration, profile), results_dir)
