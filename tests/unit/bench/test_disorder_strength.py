"""`harvest bench disorder`'s paper-strength part: γ(P) against a brute-force count, the
workloads' stated shape, and the targets."""

from __future__ import annotations

import numpy as np

from bench.disorder.strength import DEFAULT_MARGIN, TARGET_RULE, Setting, _spec, recalls, workloads
from bench.disorder.strength_report import floor_bound, targets


def test_period_recall_matches_a_brute_force_count() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 20_000, 3_000)
    produced = rng.choice(truth, 2_000, replace=False)
    got = recalls(produced, truth, 20_000, 5_000, 700)
    want = []
    for t in range(5_700, 20_001, 700):
        n_true = int(((truth > t - 5_000) & (truth <= t)).sum())
        if n_true:
            want.append(int(((produced > t - 5_000) & (produced <= t)).sum()) / n_true)
    assert np.allclose(got, want)


def test_workloads_run_at_the_papers_rate_and_delays() -> None:
    ws = {w.name: w for w in workloads(1.0)}
    assert set(ws) == {"syn3", "syn4", "real2", "real2j"}
    for w in ws.values():
        assert all(w.gen.rate_of(i) == 100.0 for i in range(w.gen.streams))
    assert [getattr(d, "skew", None) for d in ws["syn3"].gen.disorder] == [2.0, 3.0, 3.0]
    assert [getattr(d, "skew", None) for d in ws["syn4"].gen.disorder] == [3.0, 3.0, 3.0, 4.0]


def test_targets_name_the_missed_ones() -> None:
    def row(fig: str, wl: str, method: str, gamma: float, k: float, phi: float,
            model: str | None = None, recall: float = 0.99) -> dict:
        return {"figure": fig, "workload": wl, "method": method, "recall_target": gamma,
                "avg_k_ms": k, "phi_99": phi, "mean_recall": recall,
                "selectivity_model": model, "k_of_max": k / 20_000.0, "value": gamma}

    part = {"rows": [row("fig6", "real2", "no-k-slack", 0.99, 0, 0.0, recall=0.5),
                     row("table2", "real2", "max-k-slack", 0.99, 20_000, 1.0),
                     row("fig7", "real2", "quality", 0.99, 800, 0.99, "NonEqSel"),
                     row("fig7", "real2", "quality", 0.999, 15_000, 0.98, "NonEqSel")],
            "adaptation": [{"workload": "real2", "recall_target": 0.99,
                            "granularity_ms": 10, "mean_ms": 1.0}]}
    met, why = targets(part)
    assert met["no_k_recall_le_0.85_every_workload"]
    assert met["real2_avg_k_le_5pct_of_max_at_0.99"]
    assert not met["real2_cut_ge_35pct_at_0.999"]
    assert "real2_cut_ge_35pct_at_0.999" in why


def test_a_missed_k_target_cites_the_constant_k_floor_and_the_papers_model() -> None:
    def row(fig: str, method: str, k: float, phi: float, gamma: float = 0.99,
            model: str | None = None, value: float | None = None) -> dict:
        return {"figure": fig, "workload": "syn3", "method": method, "recall_target": gamma,
                "avg_k_ms": k, "phi_99": phi, "mean_recall": 0.95 + phi / 100,
                "selectivity_model": model, "k_of_max": k / 20_000.0,
                "value": gamma if value is None else value}

    part = {"rows": [row("fig6", "no-k-slack", 0, 0.0),
                     row("table2", "max-k-slack", 20_000, 1.0),
                     row("fig7", "quality", 6_000, 1.0, model="NonEqSel"),
                     row("fig7_paper", "quality-paper", 18_000, 1.0, model="NonEqSel"),
                     row("floor", "fixed-k-slack", 1_000, 0.0, value=0.05),
                     row("floor", "fixed-k-slack", 4_000, 1.0, value=0.2)],
            "adaptation": []}
    met, why = targets(part)
    assert not met["syn3_avg_k_le_5pct_of_max_at_0.99"]
    note = why["syn3_avg_k_le_5pct_of_max_at_0.99"]
    assert "constant K at 5% of Max-K's" in note
    assert "smallest constant K with Φ(.99Γ) ≥ 0.97: 20% of Max-K's (5% fails)" in note
    assert "no constant K up to 20% of Max-K's has mean γ(P) ≥ Γ = 0.99" in note
    assert "Ji's model as published: 0.900" in note


def test_the_floor_bound_is_bracketed_as_asked_and_by_mean_recall() -> None:
    floor = [{"value": v, "phi_99": phi, "mean_recall": mean}
             for v, phi, mean in ((0.03, 0.9, 0.985), (0.04, 0.96, 0.989),
                                  (0.05, 0.972, 0.9933), (0.1, 1.0, 0.997))]
    got = floor_bound(floor, 0.99)
    assert "Φ(.99Γ) ≥ 0.97: 5% of Max-K's (4% fails)" in got
    assert "mean γ(P) ≥ Γ = 0.99: 5% of Max-K's (4% fails)" in got
    assert "(the smallest share run)" in floor_bound(floor[2:], 0.99)


def test_k_targets_use_max_k_over_the_papers_span_and_name_both_shares() -> None:
    def row(fig: str, method: str, k: float, gamma: float = 0.99,
            model: str | None = None) -> dict:
        return {"figure": fig, "workload": "syn4", "method": method, "recall_target": gamma,
                "avg_k_ms": k, "phi_99": 1.0, "mean_recall": 0.995, "selectivity_model": model,
                "k_of_max": k / 10_000.0, "k_of_max_paper_span": k / 16_000.0,
                "value": gamma}

    part = {"rows": [row("fig6", "no-k-slack", 0),
                     row("table2", "max-k-slack", 10_000),
                     row("fig7", "quality", 700, model="NonEqSel"),
                     row("fig7", "quality", 1_000, 0.999, model="NonEqSel")],
            "adaptation": []}
    met, why = targets(part)
    assert met["syn4_avg_k_le_5pct_of_max_at_0.99"]  # 700 / 16,000 (0.07 of 10,000)
    part["rows"][2] = row("fig7", "quality", 1_000, model="NonEqSel")
    met, why = targets(part)
    assert not met["syn4_avg_k_le_5pct_of_max_at_0.99"]
    assert ("0.062 of Max-K-slack's over the paper's span (0.100 of its average in the same "
            "run)") in why["syn4_avg_k_le_5pct_of_max_at_0.99"]


def test_a_missed_k_target_cites_the_lower_floors_of_the_instant_target() -> None:
    def row(fig: str, method: str, k: float, phi: float = 1.0,
            model: str | None = None, value: float = 0.99) -> dict:
        return {"figure": fig, "workload": "syn4", "method": method, "recall_target": 0.99,
                "avg_k_ms": k, "phi_99": phi, "mean_recall": 0.995,
                "selectivity_model": model, "k_of_max": k / 10_000.0, "value": value}

    part = {"rows": [row("fig6", "no-k-slack", 0, 0.0),
                     row("table2", "max-k-slack", 10_000),
                     row("fig7", "quality", 1_100, model="NonEqSel"),
                     row("fig7_margin", "quality", 800, 0.972, "NonEqSel", -0.5),
                     row("fig7_margin", "quality", 1_100, 0.811, "NonEqSel", -100.0)],
            "adaptation": []}
    met, why = targets(part)
    note = why["syn4_avg_k_le_5pct_of_max_at_0.99"]
    assert "Γ' floor Γ + -0.5·(1 − Γ): 0.080 of Max-K's, Φ(.99Γ) 0.972" in note
    assert note.index("-0.5·") < note.index("-100·")
    # the margin rows are not Fig. 7's: they move no target
    assert met["noneqsel_phi99_ge_0.97_every_gamma_and_workload"]


def test_quality_runs_pass_the_target_margin_to_the_spec() -> None:
    w = workloads(1.0)[0]
    assert _spec(w, "quality", Setting(0.99)).disorder.target_margin == DEFAULT_MARGIN
    assert _spec(w, "quality", Setting(0.99, target_margin=-0.5)).disorder.target_margin == -0.5
    assert set(TARGET_RULE) == {"fig7", "fig7_margin", "fig7_paper"}
