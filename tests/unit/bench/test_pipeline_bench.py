"""`harvest bench pipeline` entry points that need no broker: bad --only, remeasure guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.pipeline.main import run
from bench.pipeline.measure import RunMeasure
from bench.pipeline.plot import full_buckets
from bench.pipeline.report import backlog_grows
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.settings import Settings


def test_only_takes_remeasure(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--only: bench pipeline takes 'remeasure', got 'sweeps'"):
        run(False, tmp_path, Settings(), only="sweeps")


def test_remeasure_needs_every_row_to_name_its_topics(tmp_path: Path) -> None:
    rows = [{"workload": "equi", "method": "ours", "input_rate": 30.0, "topic_prefix": "bp1"},
            {"workload": "sensors-nonaligned", "method": "off", "input_rate": 700.0}]
    (tmp_path / "pipeline.json").write_text(json.dumps({"rows": rows}))
    with pytest.raises(InfraError, match="sensors-nonaligned/off at 700/s names no topic_prefix"):
        run(False, tmp_path, Settings(), only="remeasure")


def _run(method: str, staleness: float | None, stopped: str) -> RunMeasure:
    return RunMeasure(workload="sensors-nonaligned", method=method, input_rate=1.0,
                      output_rate=1.0, recall=1.0, precision=1.0, p50_ms=1.0, p99_ms=1.0,
                      results=1, true_results=1, duplicates=0, wall_s=1.0,
                      staleness_slope=staleness, stopped=stopped)


@pytest.mark.parametrize(
    ("off_trend", "off_stopped", "shed_trend", "grows"),
    [
        (500.0, "idle for 10 s", 10.0, True),  # falls behind, shedding keeps up
        (500.0, "idle for 10 s", -80.0, False),  # not 10× the shedding run's drift
        (-5.0, "idle for 10 s", 1.0, False),  # keeps up
        (None, "idle for 10 s", 1.0, False),  # no trend, drained in time
        (None, "deadline of 240 s", 1.0, True),  # could not catch up before the deadline
    ],
)
def test_backlog_grows(off_trend: float | None, off_stopped: str, shed_trend: float,
                       grows: bool) -> None:
    off = _run("off", off_trend, off_stopped)
    assert backlog_grows(off, _run("grubjoin", shed_trend, "idle for 10 s")) is grows


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["bench", "pipeline", "--only", "sweeps"], "--only: bench pipeline takes 'remeasure'"),
        (["bench", "join", "--only", "x"], "--only: bench join does not take it, got 'x'"),
        (["bench", "grubjoin", "--only", "nope"], "--only: unknown part(s) ['nope']"),
    ],
)
def test_bad_only_exits_2_naming_the_field(argv: list[str], says: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.cli.main import main

    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    ("true", "kept"),
    [
        ([10.0, 40.0, 40.0, 40.0, 3.0], 4),  # the input ended inside the last bucket
        ([10.0, 40.0, 40.0, 40.0, 40.0], 5),  # it did not: nothing trimmed
        ([10.0, 40.0, 40.0, 2.0, 0.0], 3),  # two partial buckets at the end
        ([5.0], 1),
    ],
)
def test_timeline_plot_drops_only_trailing_partial_buckets(true: list[float],
                                                          kept: int) -> None:
    timeline = {"t_s": [20.0 * i for i in range(len(true))], "ours": list(true),
                "true": true}
    t_s, ours = full_buckets(timeline)
    assert len(t_s) == len(ours) == kept
    assert ours == true[:kept]


def test_pipeline_best_baseline_must_meet_the_latency_bound() -> None:
    from dataclasses import replace

    from bench.pipeline.report import compare_rows

    def run_of(method: str, out: float, p99: float | None) -> RunMeasure:
        return replace(_run(method, None, ""), output_rate=out, p99_ms=p99)

    rows = [run_of("grubjoin", 300.0, 15_000.0), run_of("randomdrop", 50.0, 16_000.0),
            run_of("randomdrop-static", 100.0, 20_000.0),
            run_of("taildrop", 200.0, 90_000.0), run_of("off", 400.0, 300_000.0)]
    table = compare_rows(rows, bound_ms=24_000.0)
    gj = next(r for r in table if r["method"] == "grubjoin")
    assert gj["ratio_vs"] == {"randomdrop": 6.0, "randomdrop-static": 3.0, "taildrop": 1.5}
    assert gj["best_baseline"] == "randomdrop-static"  # taildrop is over the bound
    assert gj["ratio_vs_best_baseline"] == 3.0
    assert "ratio_vs" not in next(r for r in table if r["method"] == "off")


def test_missed_targets_say_why() -> None:
    from dataclasses import replace

    from bench.pipeline.report import compare_rows, judge_targets

    gj = replace(_run("grubjoin", -50.0, "idle for 10 s"), output_rate=150.0,
                 p99_ms=30_000.0)
    td = replace(_run("taildrop", None, ""), output_rate=200.0, p99_ms=14_000.0)
    rd = replace(_run("randomdrop", None, ""), output_rate=100.0, p99_ms=14_000.0)
    off = replace(_run("off", 5.0, "idle for 10 s"), output_rate=400.0, p99_ms=300_000.0)
    row = next(r for r in compare_rows([gj, td, rd, off], bound_ms=24_000.0)
               if r["method"] == "grubjoin")
    targets, why = judge_targets(gj, row, off, rd, 24_000.0)
    assert targets == {"p99<=3x_trigger": False, "off_latency_grows": False,
                       "grubjoin>=2x_randomdrop": False, "grubjoin>best_baseline": False}
    assert why["p99<=3x_trigger"] == "grubjoin p99 30000 ms > 24000 ms"
    assert why["grubjoin>=2x_randomdrop"].startswith("1.50x: grubjoin 150 vs randomdrop 100")
    assert why["grubjoin>best_baseline"].startswith(
        "0.75x: the best baseline (taildrop) gives 200 vs grubjoin 150 results/s")
    assert "off staleness trend 5 ms/s" in why["off_latency_grows"]
    met, none = judge_targets(replace(gj, p99_ms=10_000.0, output_rate=450.0), {
        **row, "ratio_vs_best_baseline": 2.25}, replace(off, stopped="deadline"), rd,
        24_000.0)
    assert all(met.values()) and none == {}


def test_the_full_sweep_compares_shedders_at_every_rate_and_says_so() -> None:
    from bench.pipeline.report import BASELINES, sweep_note
    from bench.pipeline.workload import METHODS, QUICK_SWEEP, SWEEP

    assert QUICK_SWEEP == {2.0: METHODS} and set(SWEEP[2.0]) == set(METHODS)
    for methods in SWEEP.values():
        assert "grubjoin" in methods and len(set(methods) & set(BASELINES)) >= 2
    note = sweep_note(False, SWEEP)
    assert note.startswith("full sweep") and "1.5× capacity: grubjoin" in note
    assert sweep_note(True, QUICK_SWEEP).startswith("quick sweep")
