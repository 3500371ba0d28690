"""The report side of `harvest bench pipeline` (:mod:`bench.pipeline.main`): output ratios
against the baselines within the latency bound, the targets at 2× capacity with the
measured reason for each one missed, the run's ``note``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kit.output import write_json
from bench.kit.ratios import add_baseline_ratios
from bench.pipeline.measure import RunMeasure
from bench.pipeline.plot import plot
from bench.pipeline.workload import (
    EPSILON,
    LATENCY_BOUND_TRIGGERS,
    SETTLE_WINDOWS,
    STATIC_WARMUP_MS,
    SWEEP,
    TAIL,
    UTILIZATION,
    WARMUP,
    WINDOW_MS,
    sensor_spec,
)
from pipeline.core.settings import Settings

#: the drop baselines grubjoin is compared with (the unshed job is not one: it sheds
#: nothing and falls behind)
BASELINES = ("randomdrop", "randomdrop-static", "taildrop")


def sweep_note(quick: bool, sweep: dict[float, tuple[str, ...]]) -> str:
    """What the run covered (the JSON ``note``); ``sweep``: methods per capacity multiple."""
    if quick:
        return ("quick sweep: one rate (2× capacity), five methods; the full sweep is "
                "1.5×/2× (bench.pipeline.workload.SWEEP)")
    parts = [f"{f:g}× capacity: {', '.join(m)}" for f, m in sweep.items()]
    return ("full sweep (the documented non-quick set, ~50 min of bench time): "
            + "; ".join(parts) + ". 240 s of input per run; capacity measured at the "
            "start of this run (the job's instance timed, #15); a run still behind 60 s "
            "after its input ended is stopped. Left out to fit the shared machine: 0.5× "
            "and 1× (at 0.5× the previous full sweep's methods all gave the unshed join's "
            "output), the adaptive random drop / unshed job away from 2×, and the equi "
            "peer part (harvest bench peer). No 3×: at the instance-timed capacity it is "
            "~5,100 tuples/s per stream, where the exact oracle and the measure would "
            "hold ~20 M results (they grow as r³) besides millions of records")


def judge_targets(r: RunMeasure, row: dict[str, Any], off: RunMeasure | None,
                  rd: RunMeasure | None, bound_ms: float
                  ) -> tuple[dict[str, bool], dict[str, str]]:
    """The targets at 2× capacity for grubjoin's run ``r`` (its JSON ``row``), and for each
    one missed the measured reason."""
    ratio_rd = _ratio(r.output_rate, rd.output_rate if rd else None)
    best = row.get("ratio_vs_best_baseline")
    targets = {
        "p99<=3x_trigger": r.p99_ms is not None and r.p99_ms <= bound_ms,
        "off_latency_grows": off is not None and backlog_grows(off, r),
        "grubjoin>=2x_randomdrop": ratio_rd is not None and ratio_rd >= 2.0,
        "grubjoin>best_baseline": best is not None and best > 1.0,
    }
    why: dict[str, str] = {}
    if not targets["p99<=3x_trigger"]:
        why["p99<=3x_trigger"] = f"grubjoin p99 {_fmt(r.p99_ms)} ms > {bound_ms:.0f} ms"
    if not targets["off_latency_grows"]:
        why["off_latency_grows"] = (
            "no unshed run" if off is None else
            f"off staleness trend {_fmt(off.staleness_slope)} ms/s vs grubjoin "
            f"{_fmt(r.staleness_slope)} ms/s, off stopped: {off.stopped}")
    if not targets["grubjoin>=2x_randomdrop"]:
        why["grubjoin>=2x_randomdrop"] = (
            "no adaptive random drop run" if rd is None else
            f"{_fmt2(ratio_rd)}x: grubjoin {r.output_rate:.0f} vs randomdrop "
            f"{rd.output_rate:.0f} results/s")
    if not targets["grubjoin>best_baseline"]:
        ratios = row.get("ratio_vs", {})
        why["grubjoin>best_baseline"] = (
            f"no baseline within p99 <= {bound_ms:.0f} ms" if best is None else
            f"{_fmt2(best)}x: the best baseline ({row.get('best_baseline')}) gives "
            f"{r.output_rate / best:.0f} vs grubjoin {r.output_rate:.0f} results/s "
            f"(recall {r.recall:.3f}); over each: "
            + ", ".join(f"{b} {_fmt2(v)}" for b, v in ratios.items()))
    return targets, why


def within_bound(r: RunMeasure | dict[str, Any] | None, bound_ms: float) -> bool:
    """The run's steady-span p99 latency is known and ≤ ``bound_ms``."""
    if r is None:
        return False
    p99 = r.get("p99_ms") if isinstance(r, dict) else r.p99_ms
    return p99 is not None and float(p99) <= bound_ms


def compare_rows(rows: list[RunMeasure], bound_ms: float,
                 baselines: tuple[str, ...] = BASELINES) -> list[dict[str, Any]]:
    """The JSON rows; each grubjoin row with its output over every baseline at its rate
    (``ratio_vs``) and over the best one within the latency bound
    (``ratio_vs_best_baseline``)."""
    table = [r.row() for r in rows]
    return add_baseline_ratios(table, ("workload", "input_rate"), ("grubjoin",), baselines,
                               eligible=lambda row: within_bound(row, bound_ms))


def backlog_grows(off: RunMeasure, shed: RunMeasure) -> bool:
    """The unshed run fell behind for good: its staleness trend is positive and over 10×
    the shedding run's, or it could not catch up with its input within the grace period
    after the input ended (stopped at the deadline; a run stopped in one or two long
    micro-batches leaves too few output bursts in the steady span for a trend)."""
    if off.stopped.startswith("deadline"):
        return True
    grows = off.staleness_slope
    return grows is not None and grows > 0.0 and grows > 10 * abs(shed.staleness_slope or 0.0)


def _ratio(a: float | None, b: float | None) -> float | None:
    """a / b; None when either is unknown or b is 0."""
    return a / b if a is not None and b else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _fmt2(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def publish(rows: list[RunMeasure], payload: dict[str, Any], results_dir: Path) -> int:
    """Write ``pipeline.json`` + PNG, print the summary; exit code 1 if precision < 1."""
    write_json("pipeline", payload, results_dir)
    plot(rows, results_dir, float(payload["capacity"]["capacity_rate"]))
    for line in payload["summary"]:
        print(line)
    return 0 if all(r.precision == 1.0 for r in rows) else 1


def _peer_line(rows: list[RunMeasure]) -> list[str]:
    """The equi peer check's summary line (``--quick`` runs only), or none."""
    ours = next((r for r in rows if r.workload == "equi" and r.method == "ours"), None)
    theirs = next((r for r in rows if r.method == "spark-builtin"), None)
    if not (ours and theirs):
        return []
    return [f"equi peer: ours/spark-builtin output "
            f"{_fmt2(_ratio(ours.output_rate, theirs.output_rate))}, recall "
            f"{ours.recall:.3f}/{theirs.recall:.3f}, p50 latency "
            f"{_fmt2(_ratio(ours.p50_ms, theirs.p50_ms))}, p99 latency "
            f"{_fmt2(_ratio(ours.p99_ms, theirs.p99_ms))}"]


def _sensor_line(r: RunMeasure, row: dict[str, Any], by: dict[tuple[str, str, float], RunMeasure],
                 cap_rate: float, bound_ms: float) -> str:
    """The summary line of grubjoin's run ``r`` (its JSON ``row``) at one rate."""
    w, rate = r.workload, round(r.input_rate, 3)
    off = by.get((w, "off", rate))
    each = ", ".join(
        f"{b} {_fmt2(v)}" + ("" if within_bound(by.get((w, b, rate)), bound_ms)
                             else " (p99 over the bound)")
        for b, v in row.get("ratio_vs", {}).items())
    return (f"sensors at {rate:.0f}/s ({rate / cap_rate:.1f}× capacity): grubjoin output "
            f"over the best baseline within p99 <= {bound_ms} ms "
            f"({row.get('best_baseline')}) {_fmt2(row.get('ratio_vs_best_baseline'))}; over "
            f"each: {each} (steady span); grubjoin p99 {_fmt(r.p99_ms)} ms; staleness trend "
            f"grubjoin {_fmt(r.staleness_slope)} ms/s, off "
            f"{_fmt(off.staleness_slope if off else None)} ms/s (per-result latency "
            f"trend {_fmt(r.latency_slope)} / "
            f"{_fmt(off.latency_slope if off else None)} ms/s)")


def _judge(rows: list[RunMeasure], table: list[dict[str, Any]], cap_rate: float,
           bound_ms: float) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """The summary lines of the grubjoin runs, the targets (judged at 2× capacity; and
    precision 1 everywhere) and the reason for each one missed."""
    by = {(r.workload, r.method, round(r.input_rate, 3)): r for r in rows}
    summary: list[str] = []
    targets: dict[str, Any] = {}
    why: dict[str, str] = {}
    for (w, m, rate), r in sorted(by.items()):
        if w != "sensors-nonaligned" or m != "grubjoin":
            continue
        row = next(x for x in table if x["workload"] == w and x["method"] == m
                   and round(x["input_rate"], 3) == rate)
        summary.append(_sensor_line(r, row, by, cap_rate, bound_ms))
        if abs(rate / cap_rate - 2.0) < 0.05:
            targets, why = judge_targets(r, row, by.get((w, "off", rate)),
                                         by.get((w, "randomdrop", rate)), bound_ms)
    targets["precision==1"] = all(r.precision == 1.0 for r in rows)
    if not targets["precision==1"]:
        why["precision==1"] = "; ".join(
            f"{r.method} at {r.input_rate:.0f}/s: precision {r.precision:.4f}"
            for r in rows if r.precision != 1.0)
    if not any(k != "precision==1" for k in targets):
        why["2x"] = "no grubjoin run at 2× capacity: the 2× targets were not judged"
    return summary, targets, why


def payload(rows: list[RunMeasure], cap: dict[str, Any], quick: bool, speedup: float,
            duration_s: float, trigger_ms: int, settings: Settings) -> dict[str, Any]:
    """The body of ``pipeline.json``: the settings, the rows with their ratios, the
    summary, the targets and the reasons for those missed."""
    bound_ms = LATENCY_BOUND_TRIGGERS * trigger_ms
    table = compare_rows(rows, bound_ms)
    lines, targets, why = _judge(rows, table, float(cap["capacity_rate"]), bound_ms)
    return {
        "quick": quick, "speedup": speedup, "duration_s": duration_s,
        "trigger_ms": trigger_ms, "window_ms": WINDOW_MS, "epsilon": EPSILON,
        "utilization": UTILIZATION,
        "probe_cost": sensor_spec("grubjoin", settings).shedding.probe_cost,
        "steady_span": {"warmup": WARMUP, "tail": TAIL, "settle_windows": SETTLE_WINDOWS},
        "capacity": cap, "static_warmup_ms": STATIC_WARMUP_MS,
        "latency_bound_ms": bound_ms,
        "note": sweep_note(quick, SWEEP),
        "rows": table, "summary": _peer_line(rows) + lines, "targets_met": targets,
        "targets_missed_why": why,
    }


def progress_line(r: RunMeasure) -> str:
    """What one finished run printed."""
    return (f"    output {r.output_rate:.0f}/s  recall {r.recall:.3f}  precision "
            f"{r.precision:.3f}  p50 {r.p50_ms}  p99 {r.p99_ms} ms  trend "
            f"{r.latency_slope} ms/s  staleness trend {_fmt(r.staleness_slope)} ms/s"
            f"  batches p50 {r.batch_ms_p50} max "
            f"{r.batch_ms_max} ms  appended {_fmt(r.input_rate_appended)}/s  "
            f"whole run: output {_fmt(r.output_rate_all)}/s recall "
            f"{_fmt2(r.recall_all)}  ({r.stopped})")
