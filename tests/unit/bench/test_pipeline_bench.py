"""`harvest bench pipeline` entry points that need no broker: bad --only, remeasure guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.pipeline.main import run
from bench.pipeline.plot import full_buckets
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.settings import Settings


def test_only_takes_remeasure_or_points(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--only: no workload 'sweeps'; known: sensors"):
        run(False, tmp_path, Settings(), only="sweeps")


def test_remeasure_needs_every_row_to_name_its_topics(tmp_path: Path) -> None:
    rows = [{"workload": "news-cosine", "method": "grubjoin", "input_rate": 30.0,
             "topic_prefix": "bp1"},
            {"workload": "sensors-nonaligned", "method": "off", "input_rate": 700.0}]
    (tmp_path / "pipeline.json").write_text(json.dumps({"rows": rows}))
    with pytest.raises(InfraError, match="sensors-nonaligned/off at 700/s names no topic_prefix"):
        run(False, tmp_path, Settings(), only="remeasure")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["bench", "pipeline", "--only", "sweeps"], "--only: no workload 'sweeps'"),
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


def test_the_full_sweep_compares_shedders_at_every_load_and_says_so() -> None:
    from bench.pipeline.report import BASELINES, sweep_note
    from bench.pipeline.workload import QUICK_SWEEP, SWEEP

    assert set(SWEEP) == {1.5, 2.0, 3.0} and "off" in SWEEP[2.0]
    for methods in SWEEP.values():
        assert "grubjoin" in methods and len(set(methods) & set(BASELINES)) >= 2
    note = sweep_note(False, SWEEP)
    assert note.startswith("full sweep") and "1.5× capacity: grubjoin" in note
    assert sweep_note(True, QUICK_SWEEP).startswith("quick smoke")
