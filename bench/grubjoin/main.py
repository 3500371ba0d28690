"""The run of `harvest bench grubjoin` (the package docstring says what it measures)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.grubjoin.index import index_effect, index_summary
from bench.grubjoin.plot import figures
from bench.grubjoin.solvers import config_time, optimality
from bench.grubjoin.sweeps import SWEEPS, sweeps
from bench.grubjoin.targets import figures as paper_figures
from bench.grubjoin.targets import missed_why, ratios_targets
from bench.kit.output import read_payload, write_json
from bench.kit.parts import only_parts
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger("bench.grubjoin")

PARTS = ("optimality", "config_time", "sweeps", "index_effect")
#: ``--only figures``: no part runs; ratios, figures and targets are derived again
DERIVE = "figures"


def _parts(only: str | None) -> list[str]:
    """The parts ``--only`` names (all when empty): a part of :data:`PARTS` or one sweep
    of :data:`bench.grubjoin.sweeps.SWEEPS`; ConfigError naming an unknown one."""
    return only_parts(only, PARTS, also=(*SWEEPS, DERIVE),
                      expected=f"{list(PARTS)}, a sweep of {list(SWEEPS)} or {DERIVE!r}")


def _previous(path: Path, parts: list[str]) -> dict[str, Any]:
    """The existing JSON a partial run merges into (without its run metadata)."""
    if set(PARTS) <= set(parts):
        return {}
    return read_payload(path.stem, path.parent,
                        ("benchmark",) if parts == [DERIVE] else ("benchmark", "machine"))


def _run_part(part: str, quick: bool) -> dict[str, Any]:
    """The JSON keys of one part at the quick or full sizes."""
    if part == "optimality":
        opt, opt_by = optimality(40 if quick else 500)
        return {"optimality": opt, "optimality_by_solver": opt_by, "optimality_quick": quick}
    if part == "config_time":
        ns = [5, 10, 20] if quick else [5, 10, 15, 20]
        ctime, brute = config_time(ns, 5 if quick else 20, brute_max_n=6 if quick else 10)
        return {"config_time": ctime, "config_time_bruteforce": brute,
                "config_time_quick": quick}
    if part == "index_effect":
        ie = index_effect(quick)
        return {"index_effect": ie, "index_effect_summary": index_summary(ie),
                "index_effect_quick": quick}
    return {**sweeps(quick), "sweeps_quick": quick}


def _run_sweeps(names: list[str], quick: bool) -> dict[str, Any]:
    """The JSON keys of some sweeps (``--only kappa_sweep,cost_sweep``)."""
    return {**sweeps(quick, tuple(names)), "sweeps_quick": quick}


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Run every part (or ``only`` = comma-separated subset of PARTS), write
    bench/results/grubjoin.json and the PNGs. A partial run merges its keys into the
    existing JSON (other keys are kept) and regenerates only its own PNGs."""
    t_start = time.perf_counter()
    parts = _parts(only)
    path = results_dir / "grubjoin.json"
    payload = _previous(path, parts)
    seconds = dict(payload.get("seconds_by_part", {}))
    # fixed order (not --only's): the JSON keys come out in the same order every run
    for part in ("optimality", "config_time", "index_effect", "sweeps"):
        if part not in parts:
            continue
        t0 = time.perf_counter()
        payload.update(_run_part(part, quick))
        seconds[part] = round(time.perf_counter() - t0, 1)
        log.info("grubjoin part done", part=part, seconds=seconds[part])
    some = [s for s in SWEEPS if s in parts and "sweeps" not in parts]
    draw = [*parts, "sweeps"] if some else parts  # a single sweep redraws the sweep PNGs
    if some:
        t0 = time.perf_counter()
        payload.update(_run_sweeps(some, quick))
        seconds[",".join(some)] = round(time.perf_counter() - t0, 1)
    ratios, targets = ratios_targets(payload)
    payload.pop("ratios_grubjoin_over_randomdrop", None)  # before the fair baselines
    ran = [x for x in parts if x != DERIVE]
    payload.update(quick=quick if set(PARTS) <= set(parts) else payload.get("quick", quick),
                   parts_last_run=ran or payload.get("parts_last_run", []),
                   ratios_vs_best_baseline=ratios,
                   figures=paper_figures(payload), targets_met=targets,
                   targets_missed_why=missed_why(payload, ratios, targets),
                   seconds_by_part=seconds,
                   seconds=(round(time.perf_counter() - t_start, 1) if ran
                            else payload.get("seconds")))
    path = write_json("grubjoin", payload, results_dir)
    figures(payload, results_dir, draw)
    log.info("grubjoin bench written", path=str(path), targets=targets)
    for k, v in ratios.items():
        if not isinstance(v, dict):
            print(f"{k:32s} {v if v is None else round(v, 2)}")
    for k, ok in targets.items():
        print(f"{k:32s} {'met' if ok else 'MISSED'}")
    return 0
