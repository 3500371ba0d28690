"""The targets and printed summary of `harvest bench peer` (:mod:`bench.peer.main`)."""

from __future__ import annotations

from typing import Any

from bench.peer.runs import BUILTIN, HARVEST

#: harvest ≥ this × the built-in join's rows/s (the issue's target), and groups = 2 ≥
#: this × groups = 1
TARGET_RATIO, TARGET_SCALING = 3.0, 1.4


def _scale(payload: dict[str, Any], master_local: bool, a: int, b: int) -> float | None:
    rows = {r["groups"]: r for r in payload.get("scaling", [])
            if (r["master"] == "local[2]") == master_local}
    if a in rows and b in rows and rows[a]["rows_per_s"]:
        return round(rows[b]["rows_per_s"] / rows[a]["rows_per_s"], 3)
    return None


def targets(payload: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, measured."""
    ratio = payload.get("ratio", {})
    over = payload.get("batch_overhead_ms", {})
    local = _scale(payload, True, 1, 2)
    out: dict[str, Any] = {
        f"harvest>={TARGET_RATIO:g}x_builtin_{w}": (r is not None and r >= TARGET_RATIO)
        for w, r in ratio.items()}
    out[f"groups2>={TARGET_SCALING:g}x_groups1_local"] = local is not None and (
        local >= TARGET_SCALING)
    if HARVEST in over and BUILTIN in over:
        out["batch_overhead<=builtin"] = over[HARVEST] <= over[BUILTIN]
    out["results_equal"] = all(r.get("results_equal") is True for r in payload.get("rows", []))
    return out


def summary(payload: dict[str, Any]) -> list[str]:
    """Printed lines (also in the JSON)."""
    lines = []
    for w, r in payload.get("ratio", {}).items():
        rows = {x["method"]: x for x in payload["rows"] if x["workload"] == w}
        lines.append(f"drain {w}: harvest {rows[HARVEST]['rows_per_s']} vs spark-builtin "
                     f"{rows[BUILTIN]['rows_per_s']} rows/s ({r}×); results equal "
                     f"{rows[HARVEST]['results_equal']}")
    floor = payload.get("floor", {})
    for r in floor.get("rows", []):
        lines.append(f"read-and-decode floor {r['workload']}: {r['rows_per_s']} rows/s, at "
                     f"most {floor['max_ratio'].get(r['workload'])}× the built-in join")
    over = payload.get("batch_overhead_ms", {})
    if over:
        lines.append("near-empty micro-batch: " + ", ".join(
            f"{m} {v:.0f} ms" for m, v in over.items()))
    for s in payload.get("streaming", []):
        lines.append(f"streaming {s['workload']} at {s['offered_rows_per_s']} rows/s: " + ", ".join(
            f"{m} p50 {v['p50_ms']} p99 {v['p99_ms']} ms" for m, v in s["by_method"].items()))
    for r in payload.get("scaling", []):
        lines.append(f"scaling {r['master']} G={r['groups']}: {r['rows_per_s']} rows/s, "
                     f"replication {r['replication']}, overlap "
                     f"{r['overlap'].get('overlap_share')}")
    local = _scale(payload, True, 1, 2)
    if local is not None:
        lines.append(f"local[2]: groups=2 / groups=1 = {local}×")
    cluster = _scale(payload, False, 2, 4)
    if cluster is not None:
        lines.append(f"standalone: groups=4 / groups=2 = {cluster}×")
    return lines
