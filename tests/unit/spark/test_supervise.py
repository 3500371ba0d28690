"""`harvest submit --max-restarts N` (no Spark started): restart after a failure with a
doubling backoff, each restart logged, partial reports folded in, exit 1 after N."""

from __future__ import annotations

import pytest

from pipeline.cli.main import build_parser
from pipeline.core.errors import ConfigError, JobFailedError, KafkaUnavailableError
from pipeline.spark.submit import JobReport, supervise
from pipeline.testing.cli import exit_2_stderr


def _failing(n: int, report: JobReport | None = None):
    """A run_once that fails ``n`` times (the query failed, or no broker), then succeeds."""
    calls = {"n": 0}

    def run_once() -> JobReport:
        calls["n"] += 1
        if calls["n"] <= n:
            if calls["n"] % 2:
                exc = JobFailedError(f"streaming query failed #{calls['n']}")
                exc.report = JobReport(batches=2, input_rows=10, results=3)  # type: ignore[attr-defined]
                raise exc
            raise KafkaUnavailableError("no broker at 127.0.0.1:1")
        return report or JobReport(batches=5, input_rows=50, results=7, stopped="idle")

    return run_once, calls


def test_restarts_with_backoff_and_folds_the_reports() -> None:
    run_once, calls = _failing(3)
    slept: list[float] = []
    report = supervise(run_once, 5, backoff_s=2.0, max_backoff_s=5.0, sleep=slept.append)
    assert calls["n"] == 4
    assert slept == [2.0, 4.0, 5.0]  # doubling, capped
    assert report.restarts == 3
    assert report.input_rows == 10 + 10 + 50  # the failed runs' partial reports too
    assert report.results == 3 + 3 + 7 and report.stopped == "idle"


def test_gives_up_after_max_restarts() -> None:
    run_once, calls = _failing(10)
    with pytest.raises(JobFailedError, match=r"failed 3 times, giving up \(--max-restarts 2\)"):
        supervise(run_once, 2, sleep=lambda s: None)
    assert calls["n"] == 3


def test_no_restarts_by_default() -> None:
    run_once, calls = _failing(1)
    with pytest.raises(JobFailedError, match="--max-restarts 0"):
        supervise(run_once, 0, sleep=lambda s: None)
    assert calls["n"] == 1
    other, _ = _failing(0)
    assert supervise(other, 0).restarts == 0


def test_other_errors_are_not_restarted() -> None:
    def bad() -> JobReport:
        raise ConfigError("spec: nope")

    with pytest.raises(ConfigError):
        supervise(bad, 5, sleep=lambda s: None)


def test_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["submit", "--spec", "s.toml", "--max-restarts", "3"])
    assert args.max_restarts == 3
    assert build_parser().parse_args(["submit", "--spec", "s.toml"]).max_restarts == 0
    assert "--max-restarts" in exit_2_stderr(["submit", "--spec", "s.toml",
                                              "--max-restarts", "-1"], capsys)
