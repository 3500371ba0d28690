"""`harvest submit` resolution and stop logic (no Spark started): config precedence,
`--until-idle` validation, progress folding and the idle-flush stop condition."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli.main import main
from pipeline.core.errors import ConfigError
from pipeline.core.settings import load_settings
from pipeline.spark.submit import (
    JobReport,
    ProgressWatch,
    check_until_idle,
    java_client_options,
    job_config,
)
from pipeline.spec.model import Spec, parse_spec
from pipeline.testing.cli import exit_2_stderr


def spec(**job: Any) -> Spec:
    return parse_spec({"join": {"streams": ["s1", "s2"], "window_ms": 100,
                                "predicate": "band", "attribute": "value"}, "job": job})


@dataclass
class Progress:
    batchId: int  # noqa: N815 - Spark's field name
    numInputRows: int  # noqa: N815
    timestamp: str
    batchDuration: int  # noqa: N815
    observedMetrics: dict[str, Any] = field(default_factory=dict)  # noqa: N815
    durationMs: dict[str, int] = field(default_factory=dict)  # noqa: N815


@pytest.mark.parametrize(("cli", "spec_job", "env", "want"), [
    ({}, {}, {}, ("harvest", "join", "sensors")),
    ({}, {"topic_prefix": "p1", "mode": "passthrough", "workload": "equi"},
     {}, ("p1", "passthrough", "equi")),
    ({}, {}, {"topic_prefix": "envp"}, ("envp", "join", "sensors")),
    ({"topic_prefix": "cli", "mode": "passthrough", "workload": "news"},
     {"topic_prefix": "p1"}, {"topic_prefix": "envp"}, ("cli", "passthrough", "news")),
])
def test_job_config_precedence_cli_spec_settings(
    cli: dict[str, Any], spec_job: dict[str, Any], env: dict[str, Any],
    want: tuple[str, str, str], tmp_path: Path,
) -> None:
    settings = load_settings(cache_dir=tmp_path, bootstrap_servers="b:1", **env)
    cfg = job_config(spec(**spec_job), settings, **cli)
    assert (cfg.topic_prefix, cfg.mode, cfg.workload) == want
    assert cfg.bootstrap == "b:1"
    assert cfg.checkpoint == str(tmp_path / "checkpoints" / f"{want[0]}-{want[1]}")
    assert cfg.input_topics == (f"{want[0]}.in.{want[2]}.s1", f"{want[0]}.in.{want[2]}.s2")
    assert cfg.output_topics == (f"{want[0]}.results", f"{want[0]}.metrics",
                                 f"{want[0]}.deadletter")


def test_explicit_checkpoint_wins(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path)
    cfg = job_config(spec(checkpoint=str(tmp_path / "a")), settings,
                     checkpoint=str(tmp_path / "b"))
    assert cfg.checkpoint == str(tmp_path / "b")
    assert job_config(spec(checkpoint=str(tmp_path / "a")), settings).checkpoint == str(
        tmp_path / "a")


@pytest.mark.parametrize(("until_idle", "mode", "ok"), [
    (None, "join", True), (3.5, "join", True), (3.0, "join", False), (1.0, "join", False),
    (1.0, "passthrough", True),
])
def test_until_idle_must_leave_room_for_the_idle_flush(
    until_idle: float | None, mode: str, ok: bool, tmp_path: Path,
) -> None:
    cfg = job_config(spec(idle_flush_ms=2000, trigger_ms=1000, mode=mode),
                     load_settings(cache_dir=tmp_path))
    if ok:
        check_until_idle(cfg, until_idle)
    else:
        with pytest.raises(ConfigError, match="--until-idle"):
            check_until_idle(cfg, until_idle)


def test_progress_watch_counts_each_batch_once_and_detects_the_flush() -> None:
    report = JobReport()
    w = ProgressWatch(report)
    out = {"out": {"results": 5, "metrics": 1, "deadletters": 2}}
    p0 = Progress(0, 100, "2026-01-01T00:00:00.000Z", 1500, out)
    assert w.update([p0]) is True
    assert w.update([p0]) is False  # seen already
    assert (report.batches, report.input_rows, report.results, report.deadletters) == (
        1, 100, 5, 2)
    assert not w.flushed(2000)  # no batch after the input yet
    p1 = Progress(1, 0, "2026-01-01T00:00:03.000Z", 10)
    assert w.update([p0, p1]) is False
    assert not w.flushed(2000)  # 3.0 s < 1.5 s (end of batch 0) + 2 s
    p2 = Progress(2, 0, "2026-01-01T00:00:03.600Z", 10, out)
    w.update([p2])
    assert w.flushed(2000)
    assert (report.batches, report.results, report.metrics) == (3, 10, 2)


class _Row:
    """Like a pyspark Row of observed metrics: indexable, but without ``get``."""

    def __init__(self, **values: int) -> None:
        self._values = values

    def __getitem__(self, name: str) -> int:
        return self._values[name]


def test_progress_watch_sums_stale_source_records() -> None:
    report = JobReport()
    w = ProgressWatch(report)
    w.update([Progress(0, 90, "2026-01-01T00:00:00.000Z", 10,
                       {"source": _Row(records=100, stale=10)}),
              Progress(1, 5, "2026-01-01T00:00:01.000Z", 10,
                       {"source": _Row(records=8, stale=3)}),
              Progress(2, 5, "2026-01-01T00:00:02.000Z", 10, {})])  # no source metrics
    assert (report.input_rows, report.stale) == (100, 13)
    assert report.to_json()["stale"] == 13


def test_report_summarizes_spark_phase_times_of_batches_with_input() -> None:
    report = JobReport()
    w = ProgressWatch(report)
    for i, add in enumerate([900, 300, 600]):
        w.update([Progress(i, 10, f"2026-01-01T00:00:0{i}.000Z", 1000, {},
                           {"addBatch": add, "walCommit": 20})])
    w.update([Progress(3, 0, "2026-01-01T00:00:05.000Z", 10, {}, {"addBatch": 5})])  # idle
    assert report.to_json()["phase_ms_p50"] == {"addBatch": 600.0, "walCommit": 20.0}


def test_java_client_options_for_sasl(tmp_path: Path) -> None:
    assert java_client_options(load_settings(cache_dir=tmp_path)) == {}
    opts = java_client_options(load_settings(
        cache_dir=tmp_path, security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
        sasl_username="u", sasl_password="p"))
    assert opts["security.protocol"] == "SASL_SSL"
    assert opts["sasl.mechanism"] == "SCRAM-SHA-512"
    assert "ScramLoginModule required username=\"u\" password=\"p\";" in opts["sasl.jaas.config"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["submit", "--spec", "x.toml", "--until-idle", "0"], "--until-idle"),
    (["submit", "--spec", "x.toml", "--until-idle", "soon"], "--until-idle"),
    (["submit", "--spec", "x.toml", "--workload", "nope"], "--workload"),
    (["submit", "--spec", "x.toml", "--max-offsets-per-trigger", "-3"],
     "--max-offsets-per-trigger"),
])
def test_bad_cli_values_exit_2_naming_the_flag(argv: list[str], needle: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert needle in exit_2_stderr(argv, capsys)


def test_bad_spec_values_exit_2_naming_the_key(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[join]\nstreams = ["a", "b"]\nwindow_ms = 10\npredicate = "band"\n'
                    'attribute = "v"\n[job]\nidle_flush_ms = 0\n')
    assert main(["submit", "--spec", str(path)]) == 2
    assert "job.idle_flush_ms" in capsys.readouterr().err
    assert main(["submit", "--spec", str(tmp_path / "missing.toml")]) == 2


def test_bad_topic_prefix_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="topic_prefix"):
        job_config(spec(), load_settings(cache_dir=tmp_path), topic_prefix="bad prefix!")
