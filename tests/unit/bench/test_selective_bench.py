"""`harvest bench selective`: the configurations' wiring on a tiny run, and the targets."""

from __future__ import annotations

import numpy as np

from bench.selective.sim import CONFIGS, Point, calibrate, run_point
from bench.selective.targets import missed_why, targets


def test_each_configuration_sheds_as_the_paper_setting_it_stands_for() -> None:
    point = Point(kappa=1.0, shift_s=2.5, window_ms=4_000, basic_ms=500, rate=300.0)
    cap = calibrate(point, measure_s=2.0) / 5.0  # heavily overloaded
    runs = {c: run_point(point, c, cap, 12.0, 6.0, seed=1, bucket_ms=1_000)
            for c in CONFIGS}
    for config, res in runs.items():
        assert res["output_rate"] > 0, config
        assert res["steps"], config
    for config in ("rate", "rate+time"):  # one fraction r for both directions
        for step in runs[config]["steps"]:
            fr = np.asarray(step["harvest_fractions"])
            assert np.ptp(fr) <= 1.0 / 9 + 1e-9, (config, step["harvest_fractions"])
    assert all("keep" in s for s in runs["randomdrop"]["steps"])


def test_targets_read_the_profile_phases_and_the_kappa_trends() -> None:
    def row(fig: str, config: str, rate: float, kappa: float = 0.8, **kw: float) -> dict:
        return {"figure": fig, "config": config, "rate": rate, "kappa": kappa,
                "window_s": 20.0, **kw}

    rows = [row("fig3_4", "rate", 500.0, ratio_vs_randomdrop=2.0),
            row("fig3_4", "rate", 300.0, ratio_vs_randomdrop=1.2),
            row("fig6_7", "rate+time", 500.0, ratio_vs_below=1.5),
            row("fig5", "rate", 500.0, 0.4, ratio_vs_randomdrop=1.1),
            row("fig5", "rate", 500.0, 1.2, ratio_vs_randomdrop=3.0)]
    met = targets(rows)
    assert met["fig4_rate_ge_1.8x_randomdrop_at_500"] is True
    assert met["fig4_rate_ge_1.4x_randomdrop_at_300"] is False
    assert met["fig7_time_ge_1.3x_rate_at_500"] is True
    assert met["fig7_direction_ge_1.3x_time_at_500"] is None  # no row: not run
    assert met["fig5_gain_rises_with_kappa"] is True


def test_steady_targets_read_the_constant_rate_rows_only() -> None:
    def row(config: str, below: float, steady: bool) -> dict:
        return {"figure": "fig6_7", "config": config, "rate": 500.0, "kappa": 0.8,
                "window_s": 20.0, "ratio_vs_below": below, "steady": steady}

    rows = [row("rate+time", 2.0, False), row("rate+time+direction", 1.1, False),
            row("rate+time", 1.2, True), row("rate+time+direction", 1.5, True)]
    met = targets(rows)
    assert met["fig7_direction_ge_1.3x_time_at_500"] is False   # the profile's phase
    assert met["fig7_steady_direction_ge_1.3x_time_at_500"] is True
    assert met["fig7_steady_time_ge_1.3x_rate_at_500"] is False


def test_a_missed_direction_target_lists_the_ratio_seed_by_seed() -> None:
    def row(config: str, below: float, per_seed: list[float]) -> dict:
        return {"figure": "fig6_7", "config": config, "rate": 500.0, "kappa": 0.8,
                "window_s": 20.0, "ratio_vs_below": below, "steady": True,
                "per_seed": per_seed}

    rows = [row("rate+time", 2.0, [100.0, 200.0]),
            row("rate+time+direction", 1.2, [150.0, 180.0])]
    met = targets(rows)
    assert met["fig7_steady_direction_ge_1.3x_time_at_500"] is False
    why = missed_why(rows, met)["fig7_steady_direction_ge_1.3x_time_at_500"]
    assert "per seed: [1.5, 0.9]" in why
