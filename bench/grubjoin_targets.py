"""Ratios grubjoin/randomdrop and the issue's targets of `harvest bench grubjoin`,
computed from whatever parts the JSON holds (a part not run yet → not met)."""

from __future__ import annotations

from typing import Any


def ratio(rows: list[dict[str, Any]], key: dict[str, Any], a: str, b: str) -> float | None:
    """Output rate of method ``a`` over method ``b`` among the rows matching ``key``
    (None when either is missing or b produced nothing)."""
    sel = [r for r in rows if all(r.get(k) == v for k, v in key.items())]
    va = [r["output_rate"] for r in sel if r["method"] == a]
    vb = [r["output_rate"] for r in sel if r["method"] == b]
    if not va or not vb or vb[0] <= 0:
        return None
    return float(va[0] / vb[0])


def ratios_targets(p: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
    """Ratios and issue targets from whatever parts ``p`` holds (missing → not met):
    Fig. 7 φ, Fig. 8 configuration time, Fig. 11/12/13 grubjoin over randomdrop."""
    opt = p.get("optimality", [])
    ctime = [r for r in p.get("config_time", []) if r.get("solver", "configure") == "configure"]
    rate_sweep = p.get("rate_sweep", [])
    kappa_sweep = p.get("kappa_sweep", [])
    m_sweep = p.get("m_sweep", [])
    rates = p.get("sweep_rates") or sorted({r["input_rate"] for r in rate_sweep}) or [0.0]
    kappas = p.get("sweep_kappas") or sorted({r["kappa"] for r in kappa_sweep})
    top = {"input_rate": rates[-1]}
    ratios = {
        "aligned_top_rate": ratio(rate_sweep, {"scenario": "aligned", **top},
                                  "grubjoin", "randomdrop"),
        "nonaligned_top_rate": ratio(rate_sweep, {"scenario": "nonaligned", **top},
                                     "grubjoin", "randomdrop"),
        "m5_nonaligned": ratio(m_sweep, {"m": 5}, "grubjoin", "randomdrop"),
        "kappa_min": min((v for v in (ratio(kappa_sweep, {"kappa": k}, "grubjoin",
                                            "randomdrop") for k in kappas) if v is not None),
                         default=None),
        "learned_vs_flat_nonaligned": ratio(rate_sweep, {"scenario": "nonaligned", **top},
                                            "grubjoin", "grubjoin-flat"),
    }
    targets = {
        "optimality_mean_phi>=0.99": bool(opt) and all(r["mean_phi"] >= 0.99 for r in opt),
        "optimality_min_phi>=0.97": bool(opt) and all(r["min_phi"] >= 0.97 for r in opt),
        "config_m3_n10<=2ms": any((r["m"], r["n"]) == (3, 10) for r in ctime) and all(
            r["ms"] <= 2.0 for r in ctime if (r["m"], r["n"]) == (3, 10)),
        "config_m5_n20<=20ms": any((r["m"], r["n"]) == (5, 20) for r in ctime) and all(
            r["ms"] <= 20.0 for r in ctime if (r["m"], r["n"]) == (5, 20)),
        "aligned>=1.65x": (ratios["aligned_top_rate"] or 0) >= 1.65,
        "nonaligned>=2.5x": (ratios["nonaligned_top_rate"] or 0) >= 2.5,
        "m5>=8x": (ratios["m5_nonaligned"] or 0) >= 8.0,
        "kappa>=0.95x": (ratios["kappa_min"] or 0) >= 0.95,
    }
    return ratios, targets
