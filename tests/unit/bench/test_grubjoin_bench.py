"""bench grubjoin's pure parts: ratios, targets, the index summary, --only parsing."""

from __future__ import annotations

from typing import Any

import pytest

from bench.grubjoin.index import index_summary
from bench.grubjoin.main import PARTS, _parts
from bench.grubjoin.sim import BASELINES
from bench.grubjoin.sweeps import SHEDDERS
from bench.grubjoin.targets import figures as paper_figures
from bench.grubjoin.targets import ratio, ratios_targets
from bench.kit.ratios import add_baseline_ratios
from pipeline.core.errors import ConfigError


def _rate_row(scenario: str, rate: float, method: str, out: float) -> dict[str, Any]:
    return {"scenario": scenario, "input_rate": rate, "kappa": None, "method": method,
            "output_rate": out}


def test_ratio_is_none_without_both_methods_or_a_zero_denominator() -> None:
    rows = [_rate_row("aligned", 50.0, "grubjoin", 30.0),
            _rate_row("aligned", 50.0, "randomdrop", 10.0),
            _rate_row("nonaligned", 50.0, "grubjoin", 5.0),
            _rate_row("nonaligned", 50.0, "randomdrop", 0.0)]
    assert ratio(rows, {"scenario": "aligned"}, "grubjoin", "randomdrop") == 3.0
    assert ratio(rows, {"scenario": "nonaligned"}, "grubjoin", "randomdrop") is None
    assert ratio(rows, {"scenario": "aligned"}, "grubjoin", "taildrop") is None


def test_targets_of_an_empty_payload_are_all_missed() -> None:
    ratios, targets = ratios_targets({})
    flat = [v for v in ratios.values() if not isinstance(v, dict)] + [
        x for v in ratios.values() if isinstance(v, dict) for x in v.values()]
    assert all(v is None for v in flat)
    assert targets and not any(targets.values())


def test_rate_targets_use_the_top_rate_and_the_best_baseline() -> None:
    rows = [_rate_row(s, r, m, out) for s in ("aligned", "nonaligned")
            for r, m, out in ((50.0, "grubjoin", 1.0), (50.0, "randomdrop", 1.0),
                              (500.0, "grubjoin", 30.0), (500.0, "randomdrop", 10.0),
                              (500.0, "randomdrop-static", 12.0), (500.0, "taildrop", 15.0),
                              (500.0, "grubjoin-flat", 15.0))]
    add_baseline_ratios(rows, ("scenario", "input_rate"), SHEDDERS, BASELINES)
    payload = {"rate_sweep": rows, "sweep_rates": [50.0, 500.0]}
    ratios, targets = ratios_targets(payload)
    assert ratios["aligned_top_rate"] == ratios["nonaligned_top_rate"] == 2.0
    assert ratios["vs_randomdrop"]["aligned_top_rate"] == 3.0
    assert ratios["vs_randomdrop_static"]["nonaligned_top_rate"] == 2.5
    assert ratios["learned_vs_flat_nonaligned"] == 2.0
    assert targets["aligned>=1.65x"] and not targets["nonaligned>=2.5x"]
    assert not targets["m5>=8x"]
    fig = paper_figures(payload)["fig11_aligned"]
    assert fig["paper"]["max_ratio"] == 1.65
    assert fig["ours"]["by_input_rate"]["500"] == {
        "vs_randomdrop_static": 2.5, "vs_randomdrop": 3.0, "vs_taildrop": 2.0,
        "vs_best_baseline": 2.0}
    assert fig["ours"]["max_vs_best_baseline"] == 2.0
    assert "notes" in fig


def test_baseline_ratios_per_point_best_and_eligibility() -> None:
    rows = [{"rate": 1, "method": "grubjoin", "output_rate": 60.0},
            {"rate": 1, "method": "randomdrop", "output_rate": 10.0},
            {"rate": 1, "method": "taildrop", "output_rate": 30.0, "late": True},
            {"rate": 2, "method": "grubjoin", "output_rate": 5.0},
            {"rate": 2, "method": "taildrop", "output_rate": 0.0},
            {"rate": 3, "method": "grubjoin", "output_rate": 5.0}]
    add_baseline_ratios(rows, ("rate",), ("grubjoin",), ("randomdrop", "taildrop"))
    assert rows[0]["ratio_vs"] == {"randomdrop": 6.0, "taildrop": 2.0}
    assert rows[0]["best_baseline"] == "taildrop"
    assert rows[0]["ratio_vs_best_baseline"] == 2.0
    assert "ratio_vs" not in rows[1]  # baselines are not compared with themselves
    assert rows[3]["ratio_vs"] == {"taildrop": None}  # it produced nothing
    assert rows[3]["ratio_vs_best_baseline"] is None
    assert rows[5]["best_baseline"] is None and rows[5]["ratio_vs"] == {}
    # a baseline outside the latency bound does not count as the best
    add_baseline_ratios(rows, ("rate",), ("grubjoin",), ("randomdrop", "taildrop"),
                        eligible=lambda r: not r.get("late"))
    assert rows[0]["best_baseline"] == "randomdrop"
    assert rows[0]["ratio_vs_best_baseline"] == 6.0
    assert rows[0]["ratio_vs"]["taildrop"] == 2.0  # still reported


def test_index_summary_per_rate() -> None:
    rows = [{"input_rate": 50.0, "indexed": False, "wall_s": 2.0, "results": 7},
            {"input_rate": 50.0, "indexed": True, "wall_s": 0.5, "results": 7},
            {"input_rate": 200.0, "indexed": False, "wall_s": 1.0, "results": 3},
            {"input_rate": 200.0, "indexed": True, "wall_s": 1.0, "results": 4}]
    assert index_summary(rows) == {"50.0": {"speedup": 4.0, "same_results": True},
                                   "200.0": {"speedup": 1.0, "same_results": False}}


def test_only_selects_parts_and_names_an_unknown_one() -> None:
    assert _parts(None) == list(PARTS)
    assert _parts(" sweeps, optimality ,") == ["sweeps", "optimality"]
    assert _parts("kappa_sweep,cost_sweep") == ["kappa_sweep", "cost_sweep"]
    with pytest.raises(ConfigError, match=r"--only: unknown part\(s\) \['nope'\]"):
        _parts("sweeps,nope")


def test_missed_targets_say_why_and_figures_can_be_derived_again() -> None:
    from bench.grubjoin.targets import missed_why

    ratios, targets = ratios_targets({})
    assert set(missed_why({}, ratios, targets)) == set(targets)
    assert all(v == "not run" for v in missed_why({}, ratios, targets).values())
    ratios["nonaligned_top_rate"] = 1.8
    why = missed_why({}, ratios, {"nonaligned>=2.5x": False, "aligned>=1.65x": True})
    assert list(why) == ["nonaligned>=2.5x"]
    assert why["nonaligned>=2.5x"].startswith("1.80x over the best baseline (target 2.5x): ")
    assert _parts("figures") == ["figures"]
    figs = paper_figures({})
    for name, fig in figs.items():  # every figure: the paper's side, ours, and notes
        assert {"paper", "ours", "notes"} <= set(fig), name
