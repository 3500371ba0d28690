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


def _ratios(rows: list[Row], workloads: tuple[str, ...], method: str, key: str,
            min_zipf: float = 1.0) -> dict[str, float | None]:
    """``key`` of ``method`` per input of ``workloads`` with Zipf ≥ ``min_zipf``."""
    return {f"{wl} zipf {r['zipf'][0]}": r[key]
            for wl in workloads for r in _pick(rows, workload=wl, method=method)
            if r["zipf"] is not None and r["zipf"][0] >= min_zipf}


def _low(ratios: dict[str, float | None], threshold: float) -> list[str]:
    return [k for k, v in ratios.items() if v is not None and v < threshold]


def targets(rows: list[Row]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    out["prob_ge_0.96_opt_at_M_eq_w_zipf_ge_1"] = _target_opt(rows)
    out["prob_ge_0.90_exact_at_50pct_memory_skewed"] = _target_exact(rows)
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


def _target_opt(rows: list[Row]) -> dict[str, Any]:
    """PROB/OPT at M = w, Zipf ≥ 1 (Figs. 10–11), judged on the online PROB (what a user
    runs) at the paper's input length when those rows exist (OPT may fill its memory
    for the counted steps during the uncounted warm-up; 4,800 counted steps amortise
    that, 1,000 do not)."""
    long = ("fig10-long", "fig11-long")
    judged = long if _pick(rows, workload="fig10-long") else ("fig10", "fig11")
    ratios = _ratios(rows, judged, "PROB", "ratio_to_opt")
    vals = [v for v in ratios.values() if v is not None]
    known = _ratios(rows, judged, "PROB-KNOWN", "ratio_to_opt")
    low = _low(ratios, 0.96)
    note = None
    if low:
        bounds = {f"{wl} zipf {r['zipf'][0]}": r["ratio_to_exact"]
                  for wl in judged for r in _pick(rows, workload=wl, method="OPT")}
        note = (f"missed on {', '.join(low)}: the paper's PROB (the arriving tuple "
                "competes with the residents, ties evict the tuple that expires first, "
                "i.e. the older one here, counts fresh at every arrival) reaches "
                + ", ".join(f"{k} {known.get(k)}" for k in low)
                + " with the whole input's frequencies known in advance (the paper's "
                "setting); the rest is OPT's foresight: with i.i.d. input a stored tuple's "
                "expected output per step is its value's arrival probability on the other "
                "stream, which is what PROB ranks by, while OPT keeps the tuples that will "
                "actually meet a partner; on uncorrelated streams more stored tuples meet "
                "none (OPT/EXACT "
                + ", ".join(f"{k} {bounds.get(k)}" for k in low)
                + "); the paper gives no number at Zipf 1 ('moderate to high skew')")
    return {"threshold": 0.96, "value": min(vals) if vals else None,
            "judged_on": f"online PROB (counts of the input so far), {', '.join(judged)}",
            "per_input": ratios,
            "at_1000_counted_steps": _ratios(rows, ("fig10", "fig11"), "PROB",
                                             "ratio_to_opt"),
            "known_frequencies_papers_setting": known,
            "note": note, "met": bool(vals) and min(vals) >= 0.96}


def _target_exact(rows: list[Row]) -> dict[str, Any]:
    """PROB/EXACT with 50% of the memory on the skewed workload: judged on the input
    closest to the paper's (weather: ~650 values, w = 5,000, Zipf 1) when it was run;
    the domain-50 input (fig11, Zipf 1) is reported beside it."""
    small = _at_w(rows, "fig11", 1.0, "PROB")
    small_opt = _at_w(rows, "fig11", 1.0, "OPT")
    wide = _at_w(rows, "weather", 1.0, "PROB")
    wide_opt = _at_w(rows, "weather", 1.0, "OPT")
    judged = wide if wide is not None else small
    value = None if judged is None else judged["ratio_to_exact"]
    small_v = None if small is None else small["ratio_to_exact"]
    bound = None if small_opt is None else small_opt["ratio_to_exact"]
    return {
        "threshold": 0.90, "value": value,
        "memory_fraction": None if judged is None else judged["memory_fraction"],
        "workload": ("weather: domain 650, w = 5,000, both streams Zipf 1 with the same "
                     "value ranking, M = w" if wide is not None else
                     "fig11: domain 50, w = 400, both streams Zipf 1, same ranking, M = w"),
        "why_this_input": "the paper's 90% is on weather data (~650 values, w = 5,000); "
                          "weather is that shape with Zipf 1 (the data set is not here)",
        "weather_opt_ratio_to_exact": None if wide_opt is None else wide_opt["ratio_to_exact"],
        "weather_by_skew": {str(r["zipf"][0]): r["ratio_to_exact"]
                            for r in _pick(rows, workload="weather", method="PROB")},
        "weather_known_frequencies": {
            str(r["zipf"][0]): r["ratio_to_exact"]
            for r in _pick(rows, workload="weather", method="PROB-KNOWN")},
        "domain_50": {
            "value": small_v, "opt_ratio_to_exact": bound,
            "uncorrelated_zipf1": (lambda r: None if r is None else r["ratio_to_exact"])(
                _at_w(rows, "fig10", 1.0, "PROB")),
            "met": small_v is not None and small_v >= 0.90,
            "note": None if bound is None or small_v is None else
            f"OPT-offline itself keeps {bound:.3f} of EXACT here and PROB {small_v / bound:.3f}"
            " of OPT: on 50 values the half of the memory holds about the top 5 values, "
            "which carry 0.90 of Σp² (the results) at Zipf 1; on 650 values it holds about "
            "the top 19, which carry 0.97"},
        "met": value is not None and value >= 0.90}


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


def _claim_prob_vs_opt(rows: list[Row]) -> dict[str, Any]:
    """PROB over OPT at M = w (Das et al. Figs. 10–11)."""
    ratios = {f"{wl} z={r['zipf'][0]}": r["ratio_to_opt"]
              for wl in ("fig10", "fig11", "fig10-long", "fig11-long")
              for r in _pick(rows, workload=wl, method="PROB")}
    known = {f"{wl} z={r['zipf'][0]}": r["ratio_to_opt"]
             for wl in ("fig10", "fig11", "fig10-long", "fig11-long")
             for r in _pick(rows, workload=wl, method="PROB-KNOWN")}
    return {"claim": "PROB/OPT at M = w (Figs. 10–11), moderate to high skew",
            "paper": "> 0.96", "ours": ratios,
            "ours_with_known_frequencies": known,
            "note": "uncorrelated Zipf 1 is the one input below 0.96, also with the "
                    "frequencies known in advance (the paper's setting) and at the "
                    "paper's input length (-long): OPT's foresight, not the policy "
                    "(see targets_met); the paper says the correlation does not "
                    "matter, here it does at Zipf 1"}


def _claim_rand_vs_skew(rows: list[Row]) -> dict[str, Any]:
    """RAND over OPT against skew (Figs. 10–11)."""
    rand = {f"{wl} z={r['zipf'][0]}": r["ratio_to_opt"]
            for wl in ("fig10", "fig11") for r in _pick(rows, workload=wl, method="RAND")}
    return {"claim": "RAND/OPT vs skew (Figs. 10–11): PROB ≈ RAND at Zipf 0, PROB's lead "
                     "grows with skew", "paper": "shape only (plots)", "ours": rand}


def _claim_half_memory(rows: list[Row]) -> dict[str, Any]:
    """PROB over EXACT with half the memory (§5.2.4, weather data)."""
    skewed = _at_w(rows, "fig11", 1.0, "PROB")
    wide = _at_w(rows, "weather", 1.0, "PROB")
    return {"claim": "PROB/EXACT with 50% of the memory", "paper":
            "> 0.90 (weather data, w = 5,000, ~650 values)",
            "ours": None if wide is None else wide["ratio_to_exact"],
            "ours_input": "synthetic weather-like: both streams Zipf 1, domain 650, "
                          "w = 5,000",
            "ours_domain_50": None if skewed is None else skewed["ratio_to_exact"],
            "ours_domain_50_input": "synthetic: both streams Zipf 1, domain 50, w = 400",
            "ours_weather_by_skew": {str(r["zipf"][0]): r["ratio_to_exact"]
                                     for r in _pick(rows, workload="weather",
                                                    method="PROB")},
            "note": "the weather data set is not available; the weather-like input has "
                    "its shape (650 values, w = 5,000) and an assumed Zipf 1 skew; at "
                    "Zipf 1.5 one value is 40% of the window and PROB keeps "
                    "less, at 0.5 the results are spread thin"}


def _claim_variable_gain(rows: list[Row]) -> dict[str, Any]:
    """Variable over fixed allocation (§4.3)."""
    gains = [g for g in (_vs_fixed(rows, r) for r in _pick(rows, workload="variable")
                         if r["method"] in ("PROBV", "OPTV")) if g is not None]
    return {"claim": "variable vs fixed allocation (PROBV/PROB, OPTV/OPT)",
            "paper": "better, gain never above 10%",
            "ours": {"max_gain": round(max(gains) - 1.0, 4) if gains else None,
                     "all": gains},
            "note": "the gain grows with the skew difference; the paper does not say "
                    "which skew pairs it ran, ours include Zipf 2 vs uniform"}


def _claim_memory_share(rows: list[Row]) -> dict[str, Any]:
    """The more skewed stream's memory share under PROBV."""
    shares = [(r["zipf"], r["memory_share"]) for r in _pick(rows, workload="variable",
                                                            method="PROBV")]
    return {"claim": "memory share of the more skewed stream under PROBV",
            "paper": "more memory, up to 75%",
            "ours": [{"zipf": z, "share_of_more_skewed": s[int(np.argmax(z))]}
                     for z, s in shares]}


def _claim_rand_linear(rows: list[Row]) -> dict[str, Any]:
    """RAND's output linear in M (Figs. 7–8)."""
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
    return {"claim": "RAND's output grows linearly with M (Figs. 7–8)", "paper": "linear",
            "ours": {"r_squared_of_linear_fit": lin}}


def _claim_life(rows: list[Row]) -> dict[str, Any]:
    """LIFE against RAND and PROB (Figs. 7–9)."""
    life = {f"{wl} M={r['memory_tuples']}": _ratio_between(rows, r, "RAND")
            for wl in ("fig7", "fig8", "fig9") for r in _pick(rows, workload=wl, method="LIFE")}
    life_prob = {f"{wl} M={r['memory_tuples']}": _ratio_between(rows, r, "PROB")
                 for wl in ("fig7", "fig8") for r in _pick(rows, workload=wl, method="LIFE")}
    return {"claim": "LIFE only marginally better than RAND (Figs. 7–9)",
            "paper": "marginally better", "ours": {"LIFE/RAND": life,
                                                   "LIFE/PROB": life_prob},
            "note": "not reproduced: our LIFE (the same online rates × ms of lifetime "
                    "left) stays within ~10% of PROB and far above RAND on Zipf input; "
                    "it is below PROB everywhere, as the paper says"}


def _claim_uniform(rows: list[Row]) -> dict[str, Any]:
    """Uniform input: OPT gains little (Fig. 9)."""
    uni = {f"M={r['memory_tuples']}": r["ratio_to_exact"]
           for r in _pick(rows, workload="fig9", method="OPT")}
    return {"claim": "uniform input: even OPT gains little (Fig. 9)",
            "paper": "no major improvement", "ours": {"OPT/EXACT": uni, "RAND/EXACT": {
                f"M={r['memory_tuples']}": r["ratio_to_exact"]
                for r in _pick(rows, workload="fig9", method="RAND")}},
            "note": "the online policies all stay at RAND's output, as in the paper; OPT, "
                    "which knows which tuples will meet a partner within the window, does "
                    "gain (about 1.5x RAND at M = w) on this small domain"}


def paper_vs_ours(rows: list[Row]) -> list[dict[str, Any]]:
    """Claims with a number (or a clear shape) in the paper's text, and ours."""
    return [claim(rows) for claim in (
        _claim_prob_vs_opt, _claim_rand_vs_skew, _claim_half_memory, _claim_variable_gain,
        _claim_memory_share, _claim_rand_linear, _claim_life, _claim_uniform)]


def _ratio_between(rows: list[Row], r: Row, other: str) -> float | None:
    o = _one(rows, workload=r["workload"], method=other, memory_tuples=r["memory_tuples"])
    if not o or not o["results"]:
        return None
    return round(r["results"] / o["results"], 4)
