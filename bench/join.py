"""`harvest bench join`: speed of the exact m-way join engine vs naive baselines.

Workload: 3-way ε-band join on sensor-like values (a slow daily-like sine + noise per
stream), 20 s windows, 1,000 tuples/s per stream, in order (K = 0). The windows are
pre-filled with 20 s of data (unprobed), then a slice of tuples is processed by the
engine and, in the same run, by two baselines that keep the same window contents:

* ``naive_numpy``: one flat NumPy array per stream (no basic windows); each probe scans
  the first window vectorized, then loops in Python over the candidates and scans the
  third window once per candidate;
* ``pure_python``: nested Python loops over lists, on a small slice of probes.

Measured with ``time.process_time`` (CPU seconds). Reported: tuples per CPU-second and
tuple comparisons (predicate evaluations of the nested-loop join: k partial results x
n window tuples per step, the GrubJoin cost unit) per CPU-second; the ratio to each
baseline; and whether every baseline found exactly the engine's results. The engine
tests each window row against the probing tuple first and compares only the rows that
pass with the partial results, so it also reports ``checks`` = pair evaluations it
actually ran (fewer than the nested-loop comparisons it accounts for).
Target (issue): ≥ 20 million predicate evaluations per CPU-second.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import save_figure, write_json
from pipeline.core.figures import new_figure
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine import Engine
from pipeline.operators.events import Event
from pipeline.operators.mjoin import MWayJoin
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import parse_spec

log = get_logger(__name__)

RATE = 1000  # tuples/s per stream
WINDOW_MS = 20_000
EPSILON = 0.0005
STREAMS = 3
TARGET = 20e6

Triple = tuple[int, int, int]


def make_events(seconds: float, seed: int = 7) -> list[Event]:
    """Sensor-like readings of 3 streams, sorted by arrival (= event time, in order)."""
    rng = np.random.default_rng(seed)
    n = int(RATE * seconds)
    events: list[Event] = []
    for s in range(STREAMS):
        ts = np.sort(rng.integers(0, int(seconds * 1000), size=n))
        vals = 20.0 + 2.0 * np.sin(2 * np.pi * ts / 600_000.0) + rng.normal(0.0, 0.5, size=n)
        events += [
            Event(s, q, int(t), int(t), {"value": float(v)})
            for q, (t, v) in enumerate(zip(ts.tolist(), vals.tolist(), strict=True))
        ]
    events.sort(key=lambda e: (e.arrival, e.stream, e.seq))
    return events


def _config() -> EngineConfig:
    spec = parse_spec(
        {
            "join": {
                "streams": ["s1", "s2", "s3"],
                "predicate": "band",
                "attribute": "value",
                "epsilon": EPSILON,
                "window_ms": WINDOW_MS,
            },
            "disorder": {"mode": "none"},
        }
    )
    return resolve_engine(spec)


def run_join_only(warm: list[Event], probes: list[Event]) -> dict[str, Any]:
    """The join operator alone (MWayJoin.process: no result objects, no buffers)."""
    config = _config()
    join = MWayJoin(config.join_config())
    pred = config.predicate
    for ev in warm:
        join.insert(ev.stream, ev.ts, ev.seq, pred.encode(ev.attrs))
    join.join_time = max(ev.ts for ev in warm)
    comparisons = checks = results = 0
    start = time.process_time()
    for ev in probes:
        out = join.process(ev.stream, ev.ts, ev.seq, pred.encode(ev.attrs))
        comparisons += out.cost
        checks += out.checks
        results += out.count
    cpu = time.process_time() - start
    row = _row(len(probes), cpu, comparisons, results)
    row["checks"] = checks
    row["checks_per_cpu_second"] = checks / max(cpu, 1e-9)
    return row


def run_engine(warm: list[Event], probes: list[Event]) -> tuple[dict[str, Any], list[set[Triple]]]:
    engine = Engine(_config())
    engine.preload(warm)
    start = time.process_time()
    out = engine.process_many(probes) + engine.flush()
    cpu = time.process_time() - start
    # group results by their triggering tuple: the member that arrived last
    position = {(ev.stream, ev.seq): i for i, ev in enumerate(probes)}
    per_probe: list[set[Triple]] = [set() for _ in probes]
    for r in out:
        trigger = max(position.get((s, m.seq), -1) for s, m in enumerate(r.members))
        per_probe[trigger].add((r.members[0].seq, r.members[1].seq, r.members[2].seq))
    stats = engine.stats
    row = _row(len(probes), cpu, stats.comparisons, stats.results)
    row["checks"] = stats.checks
    row["checks_per_cpu_second"] = stats.checks / max(cpu, 1e-9)
    return row, per_probe


def _row(tuples: int, cpu: float, comparisons: int, results: int) -> dict[str, Any]:
    cpu = max(cpu, 1e-9)
    return {
        "tuples": tuples,
        "cpu_seconds": cpu,
        "comparisons": comparisons,
        "results": results,
        "tuples_per_cpu_second": tuples / cpu,
        "comparisons_per_cpu_second": comparisons / cpu,
    }


class FlatWindows:
    """The naive store: one growing flat array of (ts, seq, value) per stream."""

    def __init__(self, warm: list[Event]) -> None:
        self.ts: list[list[int]] = [[] for _ in range(STREAMS)]
        self.seq: list[list[int]] = [[] for _ in range(STREAMS)]
        self.val: list[list[float]] = [[] for _ in range(STREAMS)]
        for ev in warm:
            self.add(ev)

    def add(self, ev: Event) -> None:
        self.ts[ev.stream].append(ev.ts)
        self.seq[ev.stream].append(ev.seq)
        self.val[ev.stream].append(float(ev.attrs["value"]))

    def arrays(self, s: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        return np.asarray(self.ts[s]), np.asarray(self.seq[s]), np.asarray(self.val[s])


def _others(s: int) -> tuple[int, int]:
    a, b = (j for j in range(STREAMS) if j != s)
    return a, b


def run_naive_numpy(
    warm: list[Event], probes: list[Event]
) -> tuple[dict[str, Any], list[set[Triple]]]:
    store = FlatWindows(warm)
    comparisons, results, found = 0, 0, []
    cpu = 0.0
    for ev in probes:
        start = time.process_time()
        a, b = _others(ev.stream)
        x = float(ev.attrs["value"])
        ts_a, seq_a, val_a = store.arrays(a)
        ts_b, seq_b, val_b = store.arrays(b)
        in_a = ts_a >= ev.ts - WINDOW_MS
        in_b = ts_b >= ev.ts - WINDOW_MS
        comparisons += int(in_a.sum())
        cand = np.flatnonzero(in_a & (np.abs(val_a - x) <= EPSILON))
        hits: set[Triple] = set()
        n_b = int(in_b.sum())
        for c in cand.tolist():  # one vectorized scan of the third window per candidate
            comparisons += n_b
            ok = in_b & (np.abs(val_b - x) <= EPSILON) & (np.abs(val_b - val_a[c]) <= EPSILON)
            for q in seq_b[ok].tolist():
                triple = [0, 0, 0]
                triple[ev.stream], triple[a], triple[b] = ev.seq, int(seq_a[c]), q
                hits.add((triple[0], triple[1], triple[2]))
        store.add(ev)
        cpu += time.process_time() - start
        results += len(hits)
        found.append(hits)
    return _row(len(probes), cpu, comparisons, results), found


def run_pure_python(
    warm: list[Event], probes: list[Event]
) -> tuple[dict[str, Any], list[set[Triple]]]:
    store = FlatWindows(warm)
    comparisons, results, found = 0, 0, []
    cpu = 0.0
    for ev in probes:
        start = time.process_time()
        a, b = _others(ev.stream)
        x, lo = float(ev.attrs["value"]), ev.ts - WINDOW_MS
        win_a = [
            (q, v)
            for t, q, v in zip(store.ts[a], store.seq[a], store.val[a], strict=True)
            if t >= lo
        ]
        win_b = [
            (q, v)
            for t, q, v in zip(store.ts[b], store.seq[b], store.val[b], strict=True)
            if t >= lo
        ]
        hits: set[Triple] = set()
        for qa, va in win_a:
            comparisons += 1
            if abs(va - x) > EPSILON:
                continue
            for qb, vb in win_b:
                comparisons += 1
                if abs(vb - x) <= EPSILON and abs(vb - va) <= EPSILON:
                    triple = [0, 0, 0]
                    triple[ev.stream], triple[a], triple[b] = ev.seq, qa, qb
                    hits.add((triple[0], triple[1], triple[2]))
        store.add(ev)
        cpu += time.process_time() - start
        results += len(hits)
        found.append(hits)
    return _row(len(probes), cpu, comparisons, results), found


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Run the benchmark, print a table, write join.json + join.png."""
    n_probe = 200 if quick else 3000
    n_naive = 200 if quick else 1000
    n_python = 3 if quick else 20
    events = make_events(WINDOW_MS / 1000 + 2.0)
    warm = [e for e in events if e.ts < WINDOW_MS]
    probes = [e for e in events if e.ts >= WINDOW_MS][:n_probe]
    log.info("bench join: engine", warm=len(warm), probes=len(probes))
    engine_row, engine_found = run_engine(warm, probes)
    log.info("bench join: join operator alone", probes=len(probes))
    join_row = run_join_only(warm, probes)
    log.info("bench join: naive numpy baseline", probes=n_naive)
    naive_row, naive_found = run_naive_numpy(warm, probes[:n_naive])
    log.info("bench join: pure Python baseline", probes=n_python)
    py_row, py_found = run_pure_python(warm, probes[:n_python])
    agree_naive = naive_found == engine_found[:n_naive]
    agree_python = py_found == engine_found[:n_python]
    evals = engine_row["comparisons_per_cpu_second"]
    payload = {
        "workload": {
            "streams": STREAMS,
            "predicate": "band",
            "epsilon": EPSILON,
            "window_ms": WINDOW_MS,
            "rate_per_stream": RATE,
            "warm_tuples": len(warm),
            "quick": quick,
        },
        "engine": engine_row,
        "join_only": join_row,
        "naive_numpy": naive_row,
        "pure_python": py_row,
        "ratio_vs_naive_numpy": evals / naive_row["comparisons_per_cpu_second"],
        "ratio_vs_pure_python": evals / py_row["comparisons_per_cpu_second"],
        "tuples_ratio_vs_naive_numpy": engine_row["tuples_per_cpu_second"]
        / naive_row["tuples_per_cpu_second"],
        "results_agree_naive_numpy": agree_naive,
        "results_agree_pure_python": agree_python,
        "target_comparisons_per_cpu_second": TARGET,
        "meets_target": evals >= TARGET,
        "meets_target_counting_only_checks_run": engine_row["checks_per_cpu_second"] >= TARGET,
        "join_only_meets_target_counting_only_checks_run": join_row["checks_per_cpu_second"]
        >= TARGET,
        "results_agree_join_only": join_row["results"] == engine_row["results"],
    }
    path = write_json("join", payload, results_dir)
    fig, ax = new_figure(size=(8.5, 4.2))
    names = [
        "engine\n(comparisons)",
        "engine:\nchecks run",
        "join alone:\nchecks run",
        "naive NumPy\n(flat, per cand.)",
        "pure Python\n(nested loops)",
    ]
    vals = [
        evals,
        engine_row["checks_per_cpu_second"],
        join_row["checks_per_cpu_second"],
        naive_row["comparisons_per_cpu_second"],
        py_row["comparisons_per_cpu_second"],
    ]
    ax.bar(names, vals, color=["tab:green", "yellowgreen", "tab:olive", "tab:orange", "tab:gray"])
    ax.axhline(TARGET, color="tab:red", linestyle="--", label="target 20 M/CPU-s")
    ax.set_yscale("log")
    ax.set_ylabel("comparisons (or checks run) per CPU-second")
    ax.set_title("3-way band join, 20 s windows, 1,000 tuples/s per stream")
    ax.legend()
    png = save_figure(fig, "join", results_dir)
    print(
        f"{'variant':<14}{'tuples/CPU-s':>14}{'comparisons/CPU-s':>20}"
        f"{'checks run/CPU-s':>18}{'results':>10}"
    )
    rows = (
        ("engine", engine_row),
        ("join_only", join_row),
        ("naive_numpy", naive_row),
        ("pure_python", py_row),
    )
    for label, row in rows:
        print(
            f"{label:<14}{row['tuples_per_cpu_second']:>14.0f}"
            f"{row['comparisons_per_cpu_second']:>20.3e}"
            f"{row.get('checks_per_cpu_second', row['comparisons_per_cpu_second']):>18.3e}"
            f"{row['results']:>10}"
        )
    print(
        f"ratio vs naive NumPy {payload['ratio_vs_naive_numpy']:.1f}x, vs pure Python "
        f"{payload['ratio_vs_pure_python']:.0f}x; results agree: naive={agree_naive} "
        f"python={agree_python}; target met: {payload['meets_target']}"
    )
    print(f"wrote {path} and {png}")
    ok = agree_naive and agree_python and payload["results_agree_join_only"]
    return 0 if ok else 1
