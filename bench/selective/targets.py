"""The targets of `harvest bench selective` (issue 34) from its rows: met or not, and
why where missed."""

from __future__ import annotations

from typing import Any

#: Fig. 4: rate adaptation over random drop at 500 and 300 tuples/s
RATE_500, RATE_300 = 1.8, 1.4
#: Fig. 7: each added adaptation over the setting below it at the high rate
STEP = 1.3
#: a target's name prefix → the figure part its rows come from
_FIGURE = {"fig4": "fig3_4", "fig7": "fig6_7", "fig5": "fig5", "fig8": "fig8"}


def _at(rows: list[dict[str, Any]], figure: str, config: str, rate: float,
        key: str, steady: bool = False) -> float | None:
    """``key`` of the first row of (figure, config, rate) — the profile's first phase at
    that rate, or with ``steady`` the constant-rate row."""
    for r in rows:
        if (r["figure"] == figure and r["config"] == config and r["rate"] == rate
                and bool(r.get("steady")) == steady):
            value = r.get(key)
            return None if value is None else float(value)
    return None


def _rises(rows: list[dict[str, Any]], figure: str, config: str, key: str,
           group: str | None = None) -> bool | None:
    """Whether ``key`` of ``config`` is larger at the largest κ than at the smallest, in
    every ``group`` (e.g. window size); None without rows."""
    sel = [r for r in rows if r["figure"] == figure and r["config"] == config
           and r.get(key) is not None]
    if not sel:
        return None
    groups = sorted({r[group] for r in sel}) if group else [None]
    for g in groups:
        part = sorted((r for r in sel if group is None or r[group] == g),
                      key=lambda r: r["kappa"])
        if len(part) < 2 or not part[-1][key] > part[0][key]:
            return False
    return True


def targets(rows: list[dict[str, Any]]) -> dict[str, bool | None]:
    """Each target: True (met), False (missed), None (its part did not run)."""
    def ge(value: float | None, bound: float) -> bool | None:
        return None if value is None else value >= bound

    return {
        "fig4_rate_ge_1.8x_randomdrop_at_500": ge(
            _at(rows, "fig3_4", "rate", 500.0, "ratio_vs_randomdrop"), RATE_500),
        "fig4_rate_ge_1.4x_randomdrop_at_300": ge(
            _at(rows, "fig3_4", "rate", 300.0, "ratio_vs_randomdrop"), RATE_300),
        "fig7_time_ge_1.3x_rate_at_500": ge(
            _at(rows, "fig6_7", "rate+time", 500.0, "ratio_vs_below"), STEP),
        "fig7_direction_ge_1.3x_time_at_500": ge(
            _at(rows, "fig6_7", "rate+time+direction", 500.0, "ratio_vs_below"), STEP),
        "fig7_steady_time_ge_1.3x_rate_at_500": ge(
            _at(rows, "fig6_7", "rate+time", 500.0, "ratio_vs_below", steady=True), STEP),
        "fig7_steady_direction_ge_1.3x_time_at_500": ge(
            _at(rows, "fig6_7", "rate+time+direction", 500.0, "ratio_vs_below", steady=True),
            STEP),
        "fig5_gain_rises_with_kappa": _rises(rows, "fig5", "rate", "ratio_vs_randomdrop",
                                             "window_s"),
        "fig8_time_gain_rises_with_kappa": _rises(rows, "fig8", "rate+time",
                                                  "ratio_vs_below"),
        "fig8_direction_gain_rises_with_kappa": _rises(rows, "fig8", "rate+time+direction",
                                                       "ratio_vs_randomdrop"),
    }


def missed_why(rows: list[dict[str, Any]], met: dict[str, bool | None]) -> dict[str, str]:
    """For each missed target, the measured numbers behind it (docs/NOTES.md says why)."""
    why: dict[str, str] = {}
    for name, ok in met.items():
        if ok is not False:
            continue
        fig = _FIGURE[name.split("_")[0]]
        steady = "_steady_" in name
        got = [(r["config"], r["kappa"], r["rate"], r.get("window_s"),
                r.get("ratio_vs_randomdrop"), r.get("ratio_vs_below"))
               for r in rows if r["figure"] == fig and r["config"] != "randomdrop"
               and bool(r.get("steady")) == steady]
        why[name] = ("measured (config, κ, rate, window s, vs randomdrop, vs below): "
                     + "; ".join(str(g) for g in got[:12]) + _per_seed(rows, fig, steady)
                     + " — docs/NOTES.md 'Selective processing: where we differ' and "
                     "'Join direction against the paper's setup (issue 34, session 17)'")
    return why


def _per_seed(rows: list[dict[str, Any]], figure: str, steady: bool) -> str:
    """+ direction over + time seed by seed, where the rows carry per-seed outputs."""
    at = {r["config"]: r.get("per_seed") for r in rows if r["figure"] == figure
          and bool(r.get("steady")) == steady and r.get("per_seed")}
    hi, lo = at.get("rate+time+direction"), at.get("rate+time")
    if not hi or not lo:
        return ""
    ratios = [round(a / b, 2) if b > 0 else None for a, b in zip(hi, lo, strict=True)]
    return f"; + direction over + time per seed: {ratios}"
