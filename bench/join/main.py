"""The run of `harvest bench join` (the package docstring says what it measures): every
measure in turn, then ``join.json``, ``join.png`` and the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.join.baselines import WINDOW_MS, run_naive_numpy, run_pure_python
from bench.join.fast import measure_fixed, measure_indexed
from bench.join.report import payload, plot, print_report
from bench.join.runs import make_events, run_engine, run_join_only, run_join_per_tuple
from bench.kit.output import write_json
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)


def measure(quick: bool, settings: Settings) -> dict[str, Any]:
    """The engine, the join operator alone, the baselines on a slice of the same probes,
    the fixed cost per tuple and the demo capacity with and without the index."""
    n_probe = 200 if quick else 3000
    n_naive = 200 if quick else 1000
    n_python = 3 if quick else 20
    events = make_events(WINDOW_MS / 1000 + 2.0)
    warm = [e for e in events if e.ts < WINDOW_MS]
    probes = [e for e in events if e.ts >= WINDOW_MS][:n_probe]
    log.info("bench join: engine", warm=len(warm), probes=len(probes))
    engine_row, engine_found = run_engine(warm, probes, repeats=1 if quick else 3)
    log.info("bench join: join operator alone", probes=len(probes))
    join_row = run_join_only(warm, probes)
    tuple_row = run_join_per_tuple(warm, probes)
    log.info("bench join: naive numpy baseline", probes=n_naive)
    naive_row, naive_found = run_naive_numpy(warm, probes[:n_naive])
    log.info("bench join: pure Python baseline", probes=n_python)
    py_row, py_found = run_pure_python(warm, probes[:n_python])
    log.info("bench join: fixed cost per tuple")
    fixed = [measure_fixed(settings, rate, 10.0 if quick else 30.0, 1 if quick else 3)
             for rate in (1000.0, 6000.0)]
    log.info("bench join: demo capacity with and without the index")
    indexed = measure_indexed(settings, quick)
    return {"warm": warm, "engine": engine_row, "join_only": join_row,
            "join_per_tuple": tuple_row, "naive_numpy": naive_row, "pure_python": py_row,
            "fixed": fixed, "indexed": indexed,
            "agree_naive": naive_found == engine_found[:n_naive],
            "agree_python": py_found == engine_found[:n_python]}


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Run the benchmark, print a table, write join.json + join.png."""
    m = measure(quick, settings)
    body = payload(m, quick)
    path = write_json("join", body, results_dir)
    png = plot(body, results_dir)
    print_report(body, path, png)
    ok = m["agree_naive"] and m["agree_python"] and body["results_agree_join_only"] and m[
        "indexed"]["all_same_results"]
    return 0 if ok else 1
