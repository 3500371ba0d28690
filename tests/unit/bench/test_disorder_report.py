"""bench disorder's report: the targets from result rows, the plot and the table."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bench.disorder.report import plot, print_table, targets


def _row(method: str, gamma: float, k_ms: float, phi_99: float) -> dict[str, object]:
    return {"workload": "positions2", "method": method, "recall_target": gamma,
            "avg_k_ms": k_ms, "phi": phi_99, "phi_99": phi_99, "mean_recall": gamma}


ROWS = [_row("quality", 0.99, 150.0, 0.98), _row("max-k-slack", 0.99, 2000.0, 1.0),
        _row("quality", 0.999, 1500.0, 0.99), _row("max-k-slack", 0.999, 2000.0, 1.0)]


def test_targets_from_rows() -> None:
    out = targets(ROWS, {"positions2": {"mean_ms": 1.0, "max_ms": 4.0}})
    assert out["phi_99_min"] == 0.98 and out["phi_99_min_met"]
    assert out["k_ratio_at_0.99"] == 150.0 / 2000.0 and out["k_ratio_at_0.99_met"]
    assert out["k_ratio_at_0.999"] == 0.75 and out["k_ratio_at_0.999_met"] is False
    assert out["adapt_met"]


def test_missing_baseline_gives_no_ratio() -> None:
    out = targets(ROWS[:1], {})
    assert out["k_ratio_at_0.99"] is None and out["k_ratio_at_0.99_met"] is None
    assert out["adapt_max_mean_ms"] is None and not out["adapt_met"]


def test_plot_and_table(tmp_path: Path) -> None:
    plot(ROWS, tmp_path)
    assert (tmp_path / "disorder.png").stat().st_size > 0
    console = Console(record=True, width=120)
    print_table(console, ROWS, {"phi_99_min": 0.98})
    assert "positions2" in console.export_text()
