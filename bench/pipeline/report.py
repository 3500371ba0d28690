"""The report side of `harvest bench pipeline` (:mod:`bench.pipeline.main`), on the JSON rows
(so a point re-run with ``--only`` merges into the rows of an earlier run): output ratios
against the baselines within the latency bound, the ``summary`` per workload and load,
issue 28's targets with the measured reason for each one missed, the ``profile`` rows,
and the run's ``note``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.kit.output import write_json
from bench.kit.ratios import add_baseline_ratios
from bench.pipeline import instance
from bench.pipeline.plot import full_buckets, plot
from bench.pipeline.profile import profile_rows
from bench.pipeline.workload import (
    LATENCY_BOUND_TRIGGERS,
    QUICK_DURATION_S,
    SETTLE_WINDOWS,
    STATIC_WARMUP_MS,
    SWEEP,
    TAIL,
    TRIGGER_MS,
    UTILIZATION,
    WARMUP,
    WORKLOADS,
)

#: the drop baselines grubjoin is compared with (the unshed job is not one: it sheds
#: nothing and falls behind)
BASELINES = ("randomdrop", "randomdrop-static", "taildrop")
#: issue 28: grubjoin's output over the best baseline at 2× capacity, per workload
GAIN_AT_2X = {"sensors-nonaligned": 2.0, "news-cosine": 1.5, "positions-distance": 1.5}
#: issue 28: grubjoin's recall at 3× over its recall at 1.5× (no cliff)
CLIFF_SHARE = 0.5
#: what each run of a repeated point keeps in its row's ``runs``
RUN_FIELDS = ("output_rate", "recall", "p99_ms", "batch_ms_p50", "results", "stale")
#: targets judged at the measured points only; a point not measured misses them
TARGETS = ("grubjoin>=best_baseline_everywhere", "gain_at_2x", "no_cliff_at_3x",
           "no_zero_output_window", "p99<=3x_trigger", "precision==1")
#: ours, beside ``no_cliff_at_3x``: grubjoin's output rate at 3× ≥ :data:`CLIFF_SHARE` ×
#: its output rate at 1.5× (docs/NOTES.md: at a fixed CPU budget the exact join's results
#: grow as (3/1.5)^m from 1.5× to 3×, so the recall target asks the same CPU for 2^m ×
#: CLIFF_SHARE times the output; this one asks that the output not collapse)
COLLAPSE_TARGET = "no_output_collapse_at_3x"


def sweep_note(quick: bool, sweep: dict[float, tuple[str, ...]]) -> str:
    """What the run covered (the JSON ``note``); ``sweep``: methods per capacity multiple."""
    if quick:
        return (f"quick smoke: one workload, one load, {QUICK_DURATION_S:g} s of input "
                "(not a measurement); the full sweep is bench.pipeline.workload.SWEEP "
                "on every workload of bench.pipeline.workload.WORKLOADS")
    parts = [f"{f:g}× capacity: {', '.join(m)}" for f, m in sweep.items()]
    sizes = ", ".join(f"{w.name} {w.window_ms / 1000:g} s windows / "
                      f"{w.run_seconds(False):g} s of input" for w in WORKLOADS)
    return ("full sweep (issue 28), per workload: " + "; ".join(parts) + ". Each "
            "workload's capacity measured at the start through the job's instance "
            f"(pipeline.app.capacity, through='instance'), on a 2-core machine shared "
            f"with the broker and the producer: per run {sizes} (a 150 s run took "
            "330-360 s of wall time with its query start, drain, idle wait and measuring, "
            "a 70 s run 180-240 s: the 30 runs ~2.5 h; --repeats N multiplies that, "
            "--only re-runs points); the steady span starts after "
            f"{SETTLE_WINDOWS:g} windows. A run still behind 40 s after its input ended "
            "is stopped. The adaptive random drop (below the static one at every point "
            "measured before) and the equi peer part (harvest bench peer) are left out")


def within_bound(row: Mapping[str, Any] | None, bound_ms: float) -> bool:
    """The run's steady-span p99 latency is known and ≤ ``bound_ms``."""
    if row is None:
        return False
    p99 = row.get("p99_ms")
    return p99 is not None and float(p99) <= bound_ms


def compare_rows(rows: list[dict[str, Any]], bound_ms: float,
                 baselines: tuple[str, ...] = BASELINES) -> list[dict[str, Any]]:
    """The JSON rows; each grubjoin row with its output over every baseline at its point
    (workload and load: ``ratio_vs``) and over the best one within the latency bound
    (``ratio_vs_best_baseline``)."""
    return add_baseline_ratios(rows, ("workload", "load"), ("grubjoin",), baselines,
                               eligible=lambda row: within_bound(row, bound_ms))


def _ratio(a: float | None, b: float | None) -> float | None:
    """a / b; None when either is unknown or b is 0."""
    return a / b if a is not None and b else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _fmt2(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _key(row: Mapping[str, Any]) -> tuple[str, float]:
    return str(row["workload"]), round(float(row.get("load") or 0.0), 3)


def grubjoin_rows(table: Iterable[Mapping[str, Any]]) -> dict[tuple[str, float], Mapping[str, Any]]:
    """The grubjoin row of each (workload, load)."""
    return {_key(r): r for r in table if r["method"] == "grubjoin"}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of a point run several times (``--repeats``): the run with the median
    output rate (the lower one of the middle two for an even count), with ``runs`` —
    every run's :data:`RUN_FIELDS` and its 10 s windows without output
    (:func:`zero_output_windows`) in run order — so the spread is in the JSON beside
    the row the targets are judged on.

    >>> r = median_run([{"output_rate": 5.0, "recall": .5}, {"output_rate": 1.0, "recall": .1},
    ...                 {"output_rate": 3.0, "recall": .3}])
    >>> r["output_rate"], [x["output_rate"] for x in r["runs"]]
    (3.0, [5.0, 1.0, 3.0])
    """
    ranked = sorted(range(len(runs)), key=lambda i: float(runs[i]["output_rate"]))
    chosen = dict(runs[ranked[(len(runs) - 1) // 2]])
    chosen.pop("runs", None)
    chosen["runs"] = [{**{k: r.get(k) for k in RUN_FIELDS},
                       "zero_windows": zero_output_windows(r)} for r in runs]
    chosen["median_of"] = len(runs)
    return chosen


def summary(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload and load: grubjoin's output over the best baseline's within the
    latency bound (``ratio_vs_best_baseline`` of :func:`compare_rows`)."""
    out = []
    for (w, load), r in sorted(grubjoin_rows(table).items()):
        best = r.get("ratio_vs_best_baseline")
        out.append({"workload": w, "load": load, "grubjoin_output_rate": r["output_rate"],
                    "best_baseline": r.get("best_baseline"),
                    "best_output_rate": _ratio(r["output_rate"], best),
                    "ratio_vs_best_baseline": best, "recall": r["recall"],
                    "p99_ms": r.get("p99_ms"), "median_of": r.get("median_of", 1)})
    return out


def summary_line(s: Mapping[str, Any], bound_ms: float) -> str:
    return (f"{s['workload']} at {s['load']:g}× capacity: grubjoin {s['grubjoin_output_rate']:.0f}"
            f" results/s (recall {s['recall']:.3f}, p99 {_fmt(s['p99_ms'])} ms) over the best "
            f"baseline within p99 <= {bound_ms:.0f} ms ({s['best_baseline']}): "
            f"{_fmt2(s['ratio_vs_best_baseline'])}")


def zero_output_windows(row: Mapping[str, Any]) -> list[float]:
    """Starts (stream s) of the 10 s buckets of ``row``'s ``timeline`` from the first
    full window on (bucket start ≥ ``window_s``) in which the run emitted no correct
    result while the exact join had some; the trailing partial bucket (the input ended
    inside it) left out."""
    tl = row.get("timeline") or {}
    if not tl.get("t_s"):
        return []
    t_s, ours = full_buckets(tl)
    true = tl["true"][:len(t_s)]
    window = float(row.get("window_s") or 0.0)
    return [t for t, o, n in zip(t_s, ours, true, strict=True)
            if t >= window and o == 0 and n > 0]


def _judge_ratios(gj: dict[tuple[str, float], Mapping[str, Any]],
                  why: dict[str, str]) -> dict[str, bool]:
    """grubjoin ≥ the best baseline at every point, and the gain at 2× per workload."""
    below = [f"{w} {load:g}×: " + (
        "no baseline within the latency bound" if r.get("best_baseline") is None else
        f"{_fmt2(r.get('ratio_vs_best_baseline'))}x vs {r.get('best_baseline')}")
        for (w, load), r in sorted(gj.items())
        if (r.get("ratio_vs_best_baseline") or 0.0) < 1.0]
    short = []
    for w, need in GAIN_AT_2X.items():
        r = gj.get((w, 2.0))
        got = None if r is None else r.get("ratio_vs_best_baseline")
        if got is None or got < need:
            short.append(f"{w}: {'not measured' if r is None else _fmt2(got) + 'x'} "
                         f"(needs {need:g}x)")
    if below:
        why["grubjoin>=best_baseline_everywhere"] = "; ".join(below)
    if short:
        why["gain_at_2x"] = "; ".join(short)
    return {"grubjoin>=best_baseline_everywhere": bool(gj) and not below,
            "gain_at_2x": not short}


def _judge_3x_over_1_5x(gj: dict[tuple[str, float], Mapping[str, Any]], why: dict[str, str],
                        target: str, field: str, fall: Callable[[float, float], str]) -> bool:
    """Per workload: grubjoin's ``field`` at 3× ≥ :data:`CLIFF_SHARE` × its ``field`` at
    1.5×; ``fall(at_3x, at_1_5x)`` says how a workload missed (the reason for ``target``)."""
    missed = []
    for w in sorted({w for w, _ in gj}):
        lo, hi = gj.get((w, 1.5)), gj.get((w, 3.0))
        if lo is None or hi is None:
            missed.append(f"{w}: not measured at both 1.5× and 3×")
        elif float(hi[field]) < CLIFF_SHARE * float(lo[field]):
            missed.append(f"{w}: {fall(float(hi[field]), float(lo[field]))}")
    if missed:
        why[target] = "; ".join(missed)
    return bool(gj) and not missed


def _judge_cliff(gj: dict[tuple[str, float], Mapping[str, Any]], why: dict[str, str]) -> bool:
    """Per workload: grubjoin's recall at 3× ≥ :data:`CLIFF_SHARE` × its recall at 1.5×."""
    return _judge_3x_over_1_5x(
        gj, why, "no_cliff_at_3x", "recall",
        lambda hi, lo: f"recall {hi:.3f} at 3× < {CLIFF_SHARE:g} × {lo:.3f} at 1.5×")


def _judge_collapse(gj: dict[tuple[str, float], Mapping[str, Any]],
                    why: dict[str, str]) -> bool:
    """Per workload: grubjoin's output rate at 3× ≥ :data:`CLIFF_SHARE` × its output rate
    at 1.5× (:data:`COLLAPSE_TARGET`)."""
    return _judge_3x_over_1_5x(
        gj, why, COLLAPSE_TARGET, "output_rate",
        lambda hi, lo: f"{hi:.0f} results/s at 3× < {CLIFF_SHARE:g} × {lo:.0f} at 1.5×")


def judge_targets(table: list[dict[str, Any]], bound_ms: float
                  ) -> tuple[dict[str, bool], dict[str, str]]:
    """Issue 28's targets over the sweep's rows (:data:`TARGETS`), and for each one
    missed the measured reason."""
    gj = grubjoin_rows(table)
    why: dict[str, str] = {}
    targets = _judge_ratios(gj, why)
    targets["no_cliff_at_3x"] = _judge_cliff(gj, why)
    targets[COLLAPSE_TARGET] = _judge_collapse(gj, why)
    zeros = {k: zero_output_windows(r) for k, r in sorted(gj.items())}
    zeros = {k: v for k, v in zeros.items() if v}
    targets["no_zero_output_window"] = bool(gj) and not zeros
    if zeros:
        why["no_zero_output_window"] = "; ".join(
            f"{w} {load:g}×: none at " + ", ".join(f"{t:g}" for t in v) + " s"
            for (w, load), v in zeros.items())
    slow = [f"{w} {load:g}×: {_fmt(r.get('p99_ms'))} ms" for (w, load), r in sorted(gj.items())
            if not within_bound(r, bound_ms)]
    targets["p99<=3x_trigger"] = bool(gj) and not slow
    if slow:
        why["p99<=3x_trigger"] = f"grubjoin p99 over {bound_ms:.0f} ms: " + "; ".join(slow)
    wrong = [f"{r['workload']} {r['method']} {float(r.get('load') or 0):g}×: "
             f"{r['precision']:.4f}" for r in table if r["precision"] != 1.0]
    targets["precision==1"] = not wrong
    if wrong:
        why["precision==1"] = "; ".join(wrong)
    if not gj:
        why["grubjoin"] = "no grubjoin run: nothing judged"
    return targets, why


def payload(rows: list[dict[str, Any]], caps: Mapping[str, Any], quick: bool,
            speedup: float, duration_s: float,
            instance_profile: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The body of ``pipeline.json``: the settings, the rows with their ratios, the
    summary, the profile rows, the instance's own profile on the demo workload
    (:mod:`bench.pipeline.instance`; None: not measured), the targets and the reasons
    for those missed."""
    bound_ms = LATENCY_BOUND_TRIGGERS * TRIGGER_MS
    table = compare_rows([dict(r) for r in rows], bound_ms)
    targets, why = judge_targets(table, bound_ms)
    instance.judge(instance_profile, targets, why)
    extra = {"instance_profile": dict(instance_profile)} if instance_profile else {}
    return {
        "quick": quick, "speedup": speedup, "duration_s": duration_s,
        "trigger_ms": TRIGGER_MS, "utilization": UTILIZATION,
        "workloads": {w.name: {"window_ms": w.window_ms, "epsilon": w.epsilon,
                               "generator": w.generator, "streams": w.streams,
                               "generator_args": list(w.generator_args())}
                      for w in WORKLOADS},
        "steady_span": {"warmup": WARMUP, "tail": TAIL, "settle_windows": SETTLE_WINDOWS},
        "capacity": dict(caps), "static_warmup_ms": STATIC_WARMUP_MS,
        "latency_bound_ms": bound_ms,
        "note": sweep_note(quick, SWEEP),
        "rows": table, "summary": summary(table),
        "profile": [p for r in table for p in profile_rows(r)], **extra,
        "targets_met": targets, "targets_missed_why": why,
    }


def publish(body: dict[str, Any], results_dir: Path) -> int:
    """Write ``pipeline.json`` + PNGs, print the summary; exit code 1 if precision < 1."""
    write_json("pipeline", body, results_dir)
    plot(body["rows"], results_dir, body["capacity"])
    if body.get("instance_profile"):
        instance.plot(body["instance_profile"], results_dir)
    for s in body["summary"]:
        print(summary_line(s, float(body["latency_bound_ms"])))
    for key, text in body["targets_missed_why"].items():
        print(f"target missed: {key}: {text}")
    return 0 if body["targets_met"].get("precision==1", True) else 1


def progress_line(r: Mapping[str, Any]) -> str:
    """What one finished run printed."""
    return (f"    output {r['output_rate']:.0f}/s  recall {r['recall']:.3f}  precision "
            f"{r['precision']:.3f}  p50 {_fmt(r['p50_ms'])}  p99 {_fmt(r['p99_ms'])} ms  "
            f"staleness trend {_fmt(r['staleness_slope'])} ms/s  batches p50 "
            f"{_fmt(r['batch_ms_p50'])} max {_fmt(r['batch_ms_max'])} ms  appended "
            f"{_fmt(r['input_rate_appended'])}/s  whole run: output "
            f"{_fmt(r['output_rate_all'])}/s recall {_fmt2(r['recall_all'])}  "
            f"wall {r['wall_s']:.0f} s  ({r['stopped']})")
