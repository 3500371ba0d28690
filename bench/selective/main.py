"""The run of `harvest bench selective` (the package docstring says what it measures)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.kit.output import write_json
from bench.selective.figures import fig3_4, fig5, fig6_7, fig8, fig9, sized
from bench.selective.plot import figures
from bench.selective.sim import CONFIGS, HEADROOM
from bench.selective.targets import missed_why, targets
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger("bench.selective")

PARTS = ("fig3_4", "fig5", "fig6_7", "fig8", "fig9")


def run(quick: bool, results_dir: Path, settings: Settings) -> int:
    """Every part; bench/results/selective.json and one PNG per part."""
    t_start = time.perf_counter()
    sizes = sized(quick)
    rows: list[dict[str, Any]] = []
    series: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for part in PARTS:
        t0 = time.perf_counter()
        if part in ("fig3_4", "fig6_7"):
            got, extra = (fig3_4 if part == "fig3_4" else fig6_7)(sizes)
            series[part] = extra
        else:
            got = {"fig5": fig5, "fig8": fig8, "fig9": fig9}[part](sizes)
        rows += got
        seconds[part] = round(time.perf_counter() - t0, 1)
        log.info("selective part done", part=part, seconds=seconds[part])
    met = targets(rows)
    payload = {
        "quick": quick,
        "params": {"configs": list(CONFIGS), "adapt_interval_s": 5, "boost": 1.2,
                   "sampling": 0.1, "queue_tuples": 10, "capacity_headroom": HEADROOM,
                   "seeds": list(sizes.seeds), "settle_s": sizes.settle_s,
                   "measure_s": sizes.measure_s, "fig7_seeds": list(sizes.fig7_seeds),
                   "steady_seeds": list(sizes.steady_seeds),
                   "steady_measure_s": sizes.steady_measure_s},
        "rows": rows,
        "series": series,
        "targets_met": met,
        "targets_missed_why": missed_why(rows, met),
        "seconds_by_part": seconds,
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    path = write_json("selective", payload, results_dir)
    figures(payload, results_dir)
    for name, ok in met.items():
        print(f"{name:44s} {'-' if ok is None else 'met' if ok else 'MISSED'}")
    log.info("selective bench written", path=str(path))
    return 0
