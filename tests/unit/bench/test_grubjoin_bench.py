"""bench grubjoin's pure parts: ratios, targets, the index summary, --only parsing."""

from __future__ import annotations

from typing import Any

import pytest

from bench.grubjoin import PARTS, _parts
from bench.grubjoin_index import index_summary
from bench.grubjoin_targets import ratio, ratios_targets
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
    assert ratio(rows, {"scenario": "aligned"}, "grubjoin", "full") is None


def test_targets_of_an_empty_payload_are_all_missed() -> None:
    ratios, targets = ratios_targets({})
    assert all(v is None for v in ratios.values())
    assert targets and not any(targets.values())


def test_rate_targets_use_the_top_rate() -> None:
    rows = [_rate_row(s, r, m, out) for s in ("aligned", "nonaligned")
            for r, m, out in ((50.0, "grubjoin", 1.0), (50.0, "randomdrop", 1.0),
                              (500.0, "grubjoin", 30.0), (500.0, "randomdrop", 10.0),
                              (500.0, "grubjoin-flat", 15.0))]
    ratios, targets = ratios_targets({"rate_sweep": rows, "sweep_rates": [50.0, 500.0]})
    assert ratios["aligned_top_rate"] == ratios["nonaligned_top_rate"] == 3.0
    assert ratios["learned_vs_flat_nonaligned"] == 2.0
    assert targets["aligned>=1.65x"] and targets["nonaligned>=2.5x"]
    assert not targets["m5>=8x"]


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
    with pytest.raises(ConfigError, match=r"--only: unknown part\(s\) \['nope'\]"):
        _parts("sweeps,nope")
