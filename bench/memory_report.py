"""Targets, summary and the paper's numbers next to ours for `harvest bench memory`.

Targets (issue #18): PROB ≥ 0.96·OPT at M = w for Zipf ≥ 1 (Figs. 10–11); PROB ≥
0.90·EXACT with 50% of the memory on the skewed workload (the paper's weather-data claim;
ours: both streams Zipf 1 with the same value ranking, M = w); uniform input: PROB within
5% of RAND (Fig. 9); LAGPROB ≥ 1.5·PROB on the lagged workload at 25% memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Row = dict[str, Any]


def _pick(rows: list[Row], **want: Any) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in want.items())]


def _one(rows: list[Row], **want: Any) -> Row | None:
    got = _pick(rows, **want)
    return got[0] if got else None


def _at_w(rows: list[Row], workload: str, z: float, method: str) -> Row | None:
    """The row of ``method`` at M = w on the Zipf-z input of ``workload``."""
    for r in _pick(rows, workload=workload, method=method):
        if r["zipf"] == [z, z] and r["memory_tuples"] == r["window"]:
            return r
    return None


def targets(rows: list[Row]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    ratios = {f"{wl} zipf {r['zipf'][0]}": r["ratio_to_opt"]
              for wl in ("fig10", "fig11") for r in _pick(rows, workload=wl, method="PROB")
              if r["zipf"][0] >= 1.0}
    vals = [v for v in ratios.values() if v is not None]
    out["prob_ge_0.96_opt_at_M_eq_w_zipf_ge_1"] = {
        "threshold": 0.96, "value": min(vals) if vals else None, "per_input": ratios,
        "met": bool(vals) and min(vals) >= 0.96}
    skewed = _at_w(rows, "fig11", 1.0, "PROB")
    other = _at_w(rows, "fig10", 1.0, "PROB")
    best = _at_w(rows, "fig11", 1.0, "OPT")
    value = None if skewed is None else skewed["ratio_to_exact"]
    bound = None if best is None else best["ratio_to_exact"]
    out["prob_ge_0.90_exact_at_50pct_memory_skewed"] = {
        "threshold": 0.90, "value": value,
        "memory_fraction": None if skewed is None else skewed["memory_fraction"],
        "workload": "both streams Zipf 1, same value ranking (fig11 input), M = w",
        "uncorrelated_zipf1": None if other is None else other["ratio_to_exact"],
        "opt_ratio_to_exact": bound,
        "note": None if bound is None or value is None else
        f"OPT-offline itself keeps {bound:.3f} of EXACT on this input and PROB "
        f"{value / bound:.3f} of OPT; the paper's 90% is on weather data (~650 values, "
        "w = 5,000), whose figures are not in the text",
        "met": value is not None and value >= 0.90}
    gaps = []
    for r in _pick(rows, workload="fig9", method="PROB"):
        rand = _one(rows, workload="fig9", method="RAND", memory_tuples=r["memory_tuples"])
        if rand and rand["results"]:
            gaps.append(r["results"] / rand["results"] - 1.0)
    worst = max(gaps, key=abs) if gaps else None
    out["uniform_prob_within_5pct_of_rand"] = {
        "threshold": 0.05, "value": None if worst is None else round(worst, 4),
        "per_memory": [round(g, 4) for g in gaps],
        "met": bool(gaps) and max(abs(g) for g in gaps) <= 0.05}
    lag = _one(rows, workload="lagged", method="LAGPROB")
    prob = _one(rows, workload="lagged", method="PROB")
    ratio = None
    note = None
    if lag and prob:
        ratio = lag["results"] / max(prob["results"], 1)
        if not prob["results"]:
            note = ("PROB produced no result (ratio taken over 1): the values sweep the "
                    "domain, so their frequencies tie and PROB keeps the newest tuples, "
                    "which have not met their partner (5 s later) yet")
    out["lagprob_ge_1.5x_prob_lagged_25pct"] = {
        "threshold": 1.5, "value": None if ratio is None else round(ratio, 3), "note": note,
        "lagprob": None if lag is None else lag["results"],
        "prob": None if prob is None else prob["results"],
        "lagprob_ratio_to_opt": None if lag is None else lag["ratio_to_opt"],
        "met": ratio is not None and ratio >= 1.5}
    return out


def summary(rows: list[Row]) -> dict[str, Any]:
    """Eviction cost per tuple per method, and the variable runs' memory shares."""
    cost: dict[str, list[float]] = {}
    for r in rows:
        if "evict_us_per_tuple" in r:
            cost.setdefault(r["method"], []).append(float(r["evict_us_per_tuple"]))
    shares = [{"zipf": r["zipf"], "method": r["method"], "share": r["memory_share"],
               "ratio_to_fixed": _vs_fixed(rows, r)}
              for r in rows if "memory_share" in r]
    return {
        "evict_us_per_tuple_median": {m: round(float(np.median(v)), 2)
                                      for m, v in sorted(cost.items())},
        "evict_us_per_tuple_max": {m: round(float(np.max(v)), 2) for m, v in sorted(cost.items())},
        "variable_allocation": shares,
    }


def _vs_fixed(rows: list[Row], r: Row) -> float | None:
    fixed = _one(rows, workload=r["workload"], zipf=r["zipf"],
                 method=r["method"].removesuffix("V"), memory_tuples=r["memory_tuples"])
    if not fixed or not fixed["results"]:
        return None
    return round(r["results"] / fixed["results"], 4)


def paper_vs_ours(rows: list[Row]) -> list[dict[str, Any]]:
    """Claims with a number (or a clear shape) in the paper's text, and ours."""
    out: list[dict[str, Any]] = []
    ratios = {f"{wl} z={r['zipf'][0]}": r["ratio_to_opt"]
              for wl in ("fig10", "fig11") for r in _pick(rows, workload=wl, method="PROB")}
    out.append({"claim": "PROB/OPT at M = w (Figs. 10–11), moderate to high skew",
                "paper": "> 0.96", "ours": ratios,
                "note": "uncorrelated Zipf 1 is the one input below 0.96: the streams' "
                        "frequent values differ, so fewer tuples stand out"})
    rand = {f"{wl} z={r['zipf'][0]}": r["ratio_to_opt"]
            for wl in ("fig10", "fig11") for r in _pick(rows, workload=wl, method="RAND")}
    out.append({"claim": "RAND/OPT vs skew (Figs. 10–11): PROB ≈ RAND at Zipf 0, PROB's lead "
                         "grows with skew", "paper": "shape only (plots)", "ours": rand})
    skewed = _at_w(rows, "fig11", 1.0, "PROB")
    out.append({"claim": "PROB/EXACT with 50% of the memory", "paper":
                "> 0.90 (weather data, w = 5,000, ~650 values)",
                "ours": None if skewed is None else skewed["ratio_to_exact"],
                "ours_input": "synthetic: both streams Zipf 1, domain 50, w = 400"})
    gains = [g for g in (_vs_fixed(rows, r) for r in _pick(rows, workload="variable")
                         if r["method"] in ("PROBV", "OPTV")) if g is not None]
    out.append({"claim": "variable vs fixed allocation (PROBV/PROB, OPTV/OPT)",
                "paper": "better, gain never above 10%",
                "ours": {"max_gain": round(max(gains) - 1.0, 4) if gains else None,
                         "all": gains},
                "note": "the gain grows with the skew difference; the paper does not say "
                        "which skew pairs it ran, ours include Zipf 2 vs uniform"})
    shares = [(r["zipf"], r["memory_share"]) for r in _pick(rows, workload="variable",
                                                            method="PROBV")]
    out.append({"claim": "memory share of the more skewed stream under PROBV",
                "paper": "more memory, up to 75%",
                "ours": [{"zipf": z, "share_of_more_skewed": s[int(np.argmax(z))]}
                         for z, s in shares]})
    lin = {}
    for wl in ("fig7", "fig8"):
        pts = [(r["memory_tuples"], r["results"]) for r in _pick(rows, workload=wl,
                                                                 method="RAND")]
        if len(pts) >= 3:
            x, y = np.array(pts, np.float64).T
            fit = np.polyfit(x, y, 1)
            resid = y - np.polyval(fit, x)
            lin[wl] = round(1.0 - float(resid @ resid) / max(float(((y - y.mean()) ** 2).sum()),
                                                              1e-9), 4)
    out.append({"claim": "RAND's output grows linearly with M (Figs. 7–8)", "paper": "linear",
                "ours": {"r_squared_of_linear_fit": lin}})
    life = {f"{wl} M={r['memory_tuples']}": _ratio_between(rows, r, "RAND")
            for wl in ("fig7", "fig8", "fig9") for r in _pick(rows, workload=wl, method="LIFE")}
    life_prob = {f"{wl} M={r['memory_tuples']}": _ratio_between(rows, r, "PROB")
                 for wl in ("fig7", "fig8") for r in _pick(rows, workload=wl, method="LIFE")}
    out.append({"claim": "LIFE only marginally better than RAND (Figs. 7–9)",
                "paper": "marginally better", "ours": {"LIFE/RAND": life,
                                                       "LIFE/PROB": life_prob},
                "note": "not reproduced: our LIFE (the same online rates × ms of lifetime "
                        "left) stays within ~10% of PROB and far above RAND on Zipf input; "
                        "it is below PROB everywhere, as the paper says"})
    uni = {f"M={r['memory_tuples']}": r["ratio_to_exact"]
           for r in _pick(rows, workload="fig9", method="OPT")}
    out.append({"claim": "uniform input: even OPT gains little (Fig. 9)",
                "paper": "no major improvement", "ours": {"OPT/EXACT": uni, "RAND/EXACT": {
                    f"M={r['memory_tuples']}": r["ratio_to_exact"]
                    for r in _pick(rows, workload="fig9", method="RAND")}},
                "note": "the online policies all stay at RAND's output, as in the paper; OPT, "
                        "which knows which tuples will meet a partner within the window, does "
                        "gain (about 1.5x RAND at M = w) on this small domain"})
    return out


def _ratio_between(rows: list[Row], r: Row, other: str) -> float | None:
    o = _one(rows, workload=r["workload"], method=other, memory_tuples=r["memory_tuples"])
    if not o or not o["results"]:
        return None
    return round(r["results"] / o["results"], 4)
