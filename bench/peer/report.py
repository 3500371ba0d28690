"""The targets and printed summary of `harvest bench peer` (:mod:`bench.peer.main`)."""

from __future__ import annotations

from typing import Any

from bench.peer.latency import AT_BUILTIN
from bench.peer.runs import BUILTIN, FLOOR, HARVEST, RAW

#: issue 29's targets: harvest's and the floor's steady rows/s on the equi drain, harvest
#: over the raw read, the near-empty batch, harvest over the built-in per workload and
#: over the floor
HARVEST_EQUI, FLOOR_EQUI, OVER_RAW, NEAR_EMPTY_MS = 50_000.0, 80_000.0, 0.4, 300.0
OVER_BUILTIN = {"equi": 2.0, "band": 3.0}
OVER_FLOOR = 0.8
#: groups = 2 ≥ this × groups = 1 (issue 19's target, kept)
TARGET_SCALING = 1.4
#: a latency run kept up with its input when its micro-batches took at most this many
#: triggers (p50); past it the run works off a backlog and its p99 measures that
KEPT_UP_TRIGGERS = 2.0
#: a target the benchmark cannot measure, and the test that checks it
TESTED_BY = {"large_output_completes_groups_1_and_2": "tests/e2e/test_large_output.py"}


def _steady(payload: dict[str, Any], workload: str, method: str) -> float | None:
    return next((r.get("steady_rows_per_s") for r in payload.get("rows", [])
                 if r["workload"] == workload and r["method"] == method), None)


def _scale(payload: dict[str, Any], master_local: bool, a: int, b: int,
           key: str = "rows_per_s") -> float | None:
    rows = {r["groups"]: r for r in payload.get("scaling", [])
            if (r["master"] == "local[2]") == master_local}
    if a in rows and b in rows and rows[a].get(key) and rows[b].get(key):
        return round(rows[b][key] / rows[a][key], 3)
    return None


def keyed_speedup(payload: dict[str, Any]) -> float | None:
    """The keyed stage's own speed-up from G = 1 to G = 2 on ``local[2]``: the summed
    longest task per keyed stage at G = 1 over that at G = 2."""
    rows = {r["groups"]: r for r in payload.get("scaling", []) if r["master"] == "local[2]"}
    t = {g: rows[g].get("overlap", {}).get("stage_max_task_s") for g in (1, 2) if g in rows}
    if t.get(1) and t.get(2):
        return round(t[1] / t[2], 3)
    return None


def _at_builtin(payload: dict[str, Any], method: str) -> dict[str, Any]:
    """``method``'s latency row at 0.8× the built-in's capacity ({} if not measured)."""
    return next((r for r in payload.get("latency", []) if r["method"] == method
                 and r["load"] == AT_BUILTIN and r["capacity_of"] == BUILTIN), {})


def _latency(payload: dict[str, Any]) -> tuple[float | None, float | None]:
    """p99 of the built-in at 0.8× its capacity and of harvest at the same rate."""
    return (_at_builtin(payload, HARVEST).get("p99_ms"),
            _at_builtin(payload, BUILTIN).get("p99_ms"))


def _kept_up(payload: dict[str, Any]) -> dict[str, bool | None]:
    """Per method, whether its run at 0.8× the built-in's capacity kept up
    (:data:`KEPT_UP_TRIGGERS`); None where not measured."""
    bound = KEPT_UP_TRIGGERS * float(payload.get("trigger_ms") or 0)
    out: dict[str, bool | None] = {}
    for method in (HARVEST, BUILTIN):
        p50 = _at_builtin(payload, method).get("batch_ms_p50")
        out[method] = None if p50 is None or not bound else p50 <= bound
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def measured(payload: dict[str, Any]) -> dict[str, Any]:
    """The numbers the targets judge."""
    over = payload.get("batch_overhead_ms", {})
    h99, b99 = _latency(payload)
    out: dict[str, Any] = {
        "harvest_steady_equi": _steady(payload, "equi", HARVEST),
        "floor_steady_equi": _steady(payload, "equi", FLOOR),
        "raw_read_steady_equi": _steady(payload, "equi", RAW),
        "harvest_over_raw_equi": _ratio(_steady(payload, "equi", HARVEST),
                                        _steady(payload, "equi", RAW)),
        "near_empty_batch_ms": over.get(HARVEST),
        "p99_ms_at_0.8x_builtin": {HARVEST: h99, BUILTIN: b99},
        "kept_up_at_0.8x_builtin": _kept_up(payload)}
    for w in OVER_BUILTIN:
        out[f"harvest_over_builtin_{w}"] = _ratio(_steady(payload, w, HARVEST),
                                                  _steady(payload, w, BUILTIN))
        out[f"harvest_over_floor_{w}"] = _ratio(_steady(payload, w, HARVEST),
                                                _steady(payload, w, FLOOR))
    return out


def targets(payload: dict[str, Any]) -> dict[str, bool]:
    """The issue's targets, measured (False where not measured)."""
    m = measured(payload)

    def at_least(v: float | None, t: float) -> bool:
        return v is not None and v >= t

    out = {
        f"harvest_steady>={HARVEST_EQUI:g}_equi": at_least(m["harvest_steady_equi"], HARVEST_EQUI),
        f"floor_steady>={FLOOR_EQUI:g}_equi": at_least(m["floor_steady_equi"], FLOOR_EQUI),
        f"harvest>={OVER_RAW:g}x_raw_read_equi": at_least(m["harvest_over_raw_equi"], OVER_RAW),
        f"near_empty_batch<={NEAR_EMPTY_MS:g}ms": (m["near_empty_batch_ms"] is not None
                                                 and m["near_empty_batch_ms"] <= NEAR_EMPTY_MS),
    }
    over = payload.get("batch_overhead_ms", {})
    if HARVEST in over and BUILTIN in over:
        out["batch_overhead<=builtin"] = over[HARVEST] <= over[BUILTIN]
    for w, t in OVER_BUILTIN.items():
        out[f"harvest>={t:g}x_builtin_{w}"] = at_least(m[f"harvest_over_builtin_{w}"], t)
        out[f"harvest>={OVER_FLOOR:g}x_floor_{w}"] = at_least(m[f"harvest_over_floor_{w}"],
                                                              OVER_FLOOR)
    h99, b99 = m["p99_ms_at_0.8x_builtin"][HARVEST], m["p99_ms_at_0.8x_builtin"][BUILTIN]
    out["p99_at_0.8x_builtin<=builtin"] = h99 is not None and b99 is not None and h99 <= b99
    # as we read it: the same, with both runs in steady state
    out["p99_at_0.8x_builtin<=builtin_kept_up"] = out["p99_at_0.8x_builtin<=builtin"] and all(
        m["kept_up_at_0.8x_builtin"].values())
    rows = payload.get("rows", []) + payload.get("latency", [])
    out["results_equal_oracle"] = bool(rows) and all(
        r.get("equals_oracle", True) is True and not r.get("duplicates") for r in rows)
    local = _scale(payload, True, 1, 2, "steady_rows_per_s")
    out[f"groups2>={TARGET_SCALING:g}x_groups1_local"] = local is not None and (
        local >= TARGET_SCALING)
    return out


def targets_missed_why(payload: dict[str, Any]) -> dict[str, str]:
    """Per missed target, the measured number against it."""
    m = measured(payload)
    met = targets(payload)
    why = {
        f"harvest_steady>={HARVEST_EQUI:g}_equi": f"{m['harvest_steady_equi']} rows/s",
        f"floor_steady>={FLOOR_EQUI:g}_equi": f"{m['floor_steady_equi']} rows/s",
        f"harvest>={OVER_RAW:g}x_raw_read_equi":
            f"{m['harvest_over_raw_equi']}x (raw read {m['raw_read_steady_equi']} rows/s)",
        f"near_empty_batch<={NEAR_EMPTY_MS:g}ms": f"{m['near_empty_batch_ms']} ms",
        "batch_overhead<=builtin": f"{payload.get('batch_overhead_ms')}",
        "p99_at_0.8x_builtin<=builtin": f"p99 {m['p99_ms_at_0.8x_builtin']}",
        "p99_at_0.8x_builtin<=builtin_kept_up":
            f"p99 {m['p99_ms_at_0.8x_builtin']}, kept up (micro-batch p50 <= "
            f"{KEPT_UP_TRIGGERS:g} triggers) {m['kept_up_at_0.8x_builtin']}",
        "results_equal_oracle": "a row's results differ from the oracle's or hold duplicates",
        f"groups2>={TARGET_SCALING:g}x_groups1_local":
            f"{_scale(payload, True, 1, 2, 'steady_rows_per_s')}x (keyed stage's own "
            f"speed-up {keyed_speedup(payload)}x)",
    }
    for w, t in OVER_BUILTIN.items():
        why[f"harvest>={t:g}x_builtin_{w}"] = f"{m[f'harvest_over_builtin_{w}']}x"
        why[f"harvest>={OVER_FLOOR:g}x_floor_{w}"] = f"{m[f'harvest_over_floor_{w}']}x"
    return {k: (v if v else "not measured") for k, v in why.items() if not met.get(k, True)}


def summary(payload: dict[str, Any]) -> list[str]:
    """Printed lines (also in the JSON)."""
    lines = []
    for w in sorted({r["workload"] for r in payload.get("rows", [])}):
        rows = [r for r in payload["rows"] if r["workload"] == w]
        lines.append(f"drain {w} ({rows[0]['input_rows']} rows), steady rows/s: " + ", ".join(
            f"{r['method']} {r.get('steady_rows_per_s')}" for r in rows))
    for w, r in payload.get("ratio", {}).items():
        lines.append(f"harvest over the others, {w}: " + ", ".join(
            f"{k.split('/')[1]} {v}x" for k, v in r.items()))
    for w, r in payload.get("startup", {}).get("ratio", {}).items():
        lines.append(f"short drain {w} (start-up included): harvest/spark-builtin {r}x")
    over = payload.get("batch_overhead_ms", {})
    if over:
        lines.append("near-empty micro-batch: " + ", ".join(
            f"{m} {v:.0f} ms" for m, v in over.items()))
    for r in payload.get("latency", []):
        lines.append(f"latency {r['method']} at {r['load']}x {r['capacity_of']}'s capacity "
                     f"({r['offered_rows_per_s']} rows/s): p50 {r['p50_ms']} p99 {r['p99_ms']} ms")
    for r in payload.get("scaling", []):
        lines.append(f"scaling {r['master']} G={r['groups']}: {r['rows_per_s']} rows/s "
                     f"(steady {r.get('steady_rows_per_s')}), replication {r['replication']}, "
                     f"overlap {r['overlap'].get('overlap_share')}")
    local = _scale(payload, True, 1, 2, "steady_rows_per_s")
    if local is not None:
        lines.append(f"local[2]: groups=2 / groups=1 = {local}x, keyed stage alone "
                     f"{keyed_speedup(payload)}x")
    cluster = _scale(payload, False, 2, 4)
    if cluster is not None:
        lines.append(f"standalone: groups=4 / groups=2 = {cluster}x")
    missed = payload.get("targets_missed_why", {})
    lines += [f"missed {k}: {v}" for k, v in missed.items()]
    return lines
