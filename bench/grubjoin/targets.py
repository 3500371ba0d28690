"""Ratios, the paper-vs-ours figure summaries and the issue's targets of
`harvest bench grubjoin`, computed from whatever parts the JSON holds (a part not run
yet → not met).

Every ratio is grubjoin's output over a baseline measured at the same point in the same
run: ``randomdrop-static`` is the paper's RandomDrop, ``best`` the best of
``randomdrop``, ``randomdrop-static`` and ``taildrop`` (:mod:`bench.grubjoin.sweeps`).
"""

from __future__ import annotations

from typing import Any

from bench.grubjoin.paper import CAUSES, NOTES, PAPER


def ratio(rows: list[dict[str, Any]], key: dict[str, Any], a: str, b: str) -> float | None:
    """Output rate of method ``a`` over method ``b`` among the rows matching ``key``
    (None when either is missing or b produced nothing)."""
    sel = [r for r in rows if all(r.get(k) == v for k, v in key.items())]
    va = [r["output_rate"] for r in sel if r["method"] == a]
    vb = [r["output_rate"] for r in sel if r["method"] == b]
    if not va or not vb or vb[0] <= 0:
        return None
    return float(va[0] / vb[0])


def best_ratio(rows: list[dict[str, Any]], key: dict[str, Any],
               method: str = "grubjoin") -> float | None:
    """``ratio_vs_best_baseline`` of ``method``'s row matching ``key`` (None if absent)."""
    for r in rows:
        if r.get("method") == method and all(r.get(k) == v for k, v in key.items()):
            value = r.get("ratio_vs_best_baseline")
            return None if value is None else float(value)
    return None


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _points(rows: list[dict[str, Any]], field: str, where: dict[str, Any],
            method: str = "grubjoin") -> dict[str, dict[str, float | None]]:
    """Per value of ``field``: grubjoin over the paper's baseline, the adaptive one,
    tail drop and the best baseline."""
    values = sorted({r[field] for r in rows if r.get(field) is not None
                     and all(r.get(k) == v for k, v in where.items())})
    out: dict[str, dict[str, float | None]] = {}
    for v in values:
        key = {**where, field: v}
        out[f"{v:g}"] = {
            "vs_randomdrop_static": _round(ratio(rows, key, method, "randomdrop-static")),
            "vs_randomdrop": _round(ratio(rows, key, method, "randomdrop")),
            "vs_taildrop": _round(ratio(rows, key, method, "taildrop")),
            "vs_best_baseline": _round(best_ratio(rows, key, method)),
        }
    return out


def _top(points: dict[str, dict[str, float | None]], which: str) -> float | None:
    vals = [v for p in points.values() if (v := p[which]) is not None]
    return max(vals) if vals else None


def figures(p: dict[str, Any]) -> dict[str, Any]:
    """The reproduced figures, ``paper`` and ``ours`` side by side, with ``notes`` where
    they differ (:mod:`bench.grubjoin.paper`)."""
    rate_sweep = p.get("rate_sweep", [])
    out: dict[str, Any] = {}
    for scen in ("aligned", "nonaligned"):
        pts = _points(rate_sweep, "input_rate", {"scenario": scen})
        greedy = _points(rate_sweep, "input_rate", {"scenario": scen}, "grubjoin-greedy")
        out[f"fig11_{scen}"] = {
            "paper": PAPER[f"fig11_{scen}"],
            "ours": {"by_input_rate": pts,
                     "max_vs_randomdrop_static": _top(pts, "vs_randomdrop_static"),
                     "max_vs_best_baseline": _top(pts, "vs_best_baseline"),
                     "greedy_by_input_rate": greedy,
                     "greedy_max_vs_best_baseline": _top(greedy, "vs_best_baseline")},
            "notes": NOTES[f"fig11_{scen}"],
        }
    out["fig12"] = {"paper": PAPER["fig12"],
                    "ours": {"by_kappa": _points(p.get("kappa_sweep", []), "kappa", {})},
                    "notes": NOTES["fig12"]}
    for scen in ("aligned", "nonaligned"):
        out[f"fig13_{scen}"] = {
            "paper": PAPER[f"fig13_{scen}"],
            "ours": {"by_m": _points(p.get("m_sweep", []), "m", {"scenario": scen})},
            "notes": NOTES[f"fig13_{scen}"],
        }
    fixed: dict[str, dict[str, float | None]] = {}
    for r in p.get("tuple_cost_sweep", []):
        if r.get("method") == "grubjoin":
            fixed.setdefault(f"{r['scenario']}@{r['input_rate']:g}", {})[
                f"{r['tuple_cost']:g}"] = _round(r.get("ratio_vs_best_baseline"))
    out["per_tuple_cost"] = {
        "what": "grubjoin over the best baseline with a fixed cost per admitted tuple "
                "(tuple_cost_sweep; 1 = the sweeps above)",
        "paper": None,
        "ours": fixed,
        "notes": NOTES["per_tuple_cost"],
    }
    out["table2"] = {"paper": PAPER["table2"],
                     "ours": {"by_cost_multiplier": _points(p.get("cost_sweep", []),
                                                            "cost_multiplier", {})},
                     "notes": NOTES["table2"]}
    return out


def ratios_targets(p: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
    """Ratios and issue targets from whatever parts ``p`` holds (missing → not met):
    Fig. 7 φ, Fig. 8 configuration time, Fig. 11/12/13 grubjoin over the best baseline
    (and, for the record, over the paper's and the adaptive random drop)."""
    opt = p.get("optimality", [])
    ctime = [r for r in p.get("config_time", []) if r.get("solver", "configure") == "configure"]
    rate_sweep = p.get("rate_sweep", [])
    kappa_sweep = p.get("kappa_sweep", [])
    m_sweep = p.get("m_sweep", [])
    rates = p.get("sweep_rates") or sorted({r["input_rate"] for r in rate_sweep}) or [0.0]
    kappas = p.get("sweep_kappas") or sorted({r["kappa"] for r in kappa_sweep})
    top = {"input_rate": rates[-1]}
    aligned = {"scenario": "aligned", **top}
    nonaligned = {"scenario": "nonaligned", **top}
    m5 = {"scenario": "nonaligned", "m": 5}
    ratios: dict[str, Any] = {
        "aligned_top_rate": best_ratio(rate_sweep, aligned),
        "nonaligned_top_rate": best_ratio(rate_sweep, nonaligned),
        "aligned_top_rate_greedy": best_ratio(rate_sweep, aligned, "grubjoin-greedy"),
        "nonaligned_top_rate_greedy": best_ratio(rate_sweep, nonaligned, "grubjoin-greedy"),
        "m5_nonaligned": best_ratio(m_sweep, m5),
        "kappa_min": min((v for v in (best_ratio(kappa_sweep, {"kappa": k}) for k in kappas)
                          if v is not None), default=None),
        "learned_vs_flat_nonaligned": ratio(rate_sweep, nonaligned, "grubjoin",
                                            "grubjoin-flat"),
        "vs_randomdrop_static": {
            "aligned_top_rate": ratio(rate_sweep, aligned, "grubjoin", "randomdrop-static"),
            "nonaligned_top_rate": ratio(rate_sweep, nonaligned, "grubjoin",
                                         "randomdrop-static"),
            "m5_nonaligned": ratio(m_sweep, m5, "grubjoin", "randomdrop-static"),
        },
        "vs_randomdrop": {
            "aligned_top_rate": ratio(rate_sweep, aligned, "grubjoin", "randomdrop"),
            "nonaligned_top_rate": ratio(rate_sweep, nonaligned, "grubjoin", "randomdrop"),
            "m5_nonaligned": ratio(m_sweep, m5, "grubjoin", "randomdrop"),
        },
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


#: which ratio (of :func:`ratios_targets`) and threshold each ratio target reads
_RATIO_TARGETS = {"aligned>=1.65x": ("aligned_top_rate", 1.65),
                  "nonaligned>=2.5x": ("nonaligned_top_rate", 2.5),
                  "m5>=8x": ("m5_nonaligned", 8.0),
                  "kappa>=0.95x": ("kappa_min", 0.95)}


def missed_why(p: dict[str, Any], ratios: dict[str, Any],
               targets: dict[str, bool]) -> dict[str, str]:
    """For each target missed, the measured value and the cause (:data:`CAUSES`, the
    figure's ``notes`` in full); "not run" when the JSON lacks its part."""
    why: dict[str, str] = {}
    for name, ok in targets.items():
        if ok:
            continue
        if name in _RATIO_TARGETS:
            key, want = _RATIO_TARGETS[name]
            value = ratios.get(key)
            why[name] = ("not run" if value is None else
                         f"{value:.2f}x over the best baseline (target {want:g}x): "
                         f"{CAUSES.get(name, 'see figures')}")
        elif name.startswith("optimality"):
            opt = p.get("optimality", [])
            why[name] = ("not run" if not opt else "mean phi " + ", ".join(
                f"{r['mean_phi']:.3f}" for r in opt) + "; min phi " + ", ".join(
                f"{r['min_phi']:.3f}" for r in opt))
        else:
            ctime = p.get("config_time", [])
            why[name] = ("not run" if not ctime else "ms per configuration: " + ", ".join(
                f"m={r['m']} n={r['n']}: {r['ms']:.2f}" for r in ctime
                if r.get("solver", "configure") == "configure"))
    return why
