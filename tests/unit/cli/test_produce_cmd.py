"""`harvest produce` without a broker: validation (exit 2), dry runs, dumps, no-broker failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from connectors.launch.ports import ephemeral_port
from connectors.workloads import WorkloadSpec, ZipfDelay, generate, read_jsonl
from pipeline.cli.main import main


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["nosuch"], "invalid choice: 'nosuch'"),
        (["sensors", "--rate", "-5"], "argument --rate: expected comma-separated numbers, got '-5"),
        (["sensors", "--rate", "abc"], "argument --rate: expected comma-separated numbers"),
        (["sensors", "--rate", "1,2"], "--rate: 2 values for 3 streams"),
        (["sensors", "--streams", "0"], "argument --streams: must be > 0, got '0'"),
        (["sensors", "--duration", "0"], "argument --duration: must be > 0, got '0'"),
        (["sensors", "--seed", "-1"], "argument --seed: must be >= 0, got '-1'"),
        (["sensors", "--speedup", "0"], "argument --speedup: must be > 0, got '0'"),
        (["sensors", "--fast", "--speedup", "2"], "not allowed with argument --fast"),
        (["sensors", "--lags", "0,x,1"], "argument --lags: expected comma-separated numbers"),
        (["sensors", "--lags", "0,5"], "--lags: 2 values for 3 streams"),
        (["equi", "--lags", "0,5,15"], "--lags: the 'equi' workload has no lags"),
        (["sensors", "--kappas", "2,-1,3"], "argument --kappas: expected comma-separated numbers"),
        (["news", "--kappas", "2"], "--kappas: the 'news' workload has no deviations"),
        (["sensors", "--disorder", "gauss"], "--disorder: unknown disorder model 'gauss'"),
        (["sensors", "--disorder", "zipf:skew=x"], "skew must be a number, got 'x'"),
        (["sensors", "--disorder", "exp:mean=0"], "mean must be > 0 ms, got 0"),
        (["sensors", "--disorder", "none;none"], "--disorder: 2 models for 3 streams"),
        (["sensors", "--topic-prefix", "bad/p"], "--topic-prefix: invalid topic prefix 'bad/p'"),
        (["sensors", "--partitions", "0"], "argument --partitions: must be > 0, got '0'"),
        (["sensors", "--arrivals", "bursty"], "argument --arrivals: invalid choice: 'bursty'"),
    ],
)
def test_bad_values_exit_2_naming_flag_and_value(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        code = main(["produce", *argv, "--dry-run"])
        raise SystemExit(code)
    assert raised.value.code == 2
    assert needle in capsys.readouterr().err


def test_dry_run_dump_equals_the_generator(tmp_path: Path) -> None:
    dump = tmp_path / "out" / "sensors.jsonl"
    argv = [
        "produce", "sensors", "--streams", "3", "--rate", "50", "--duration", "4",
        "--lags", "0,5,15", "--kappas", "2,2,50", "--disorder", "zipf:max=20000,skew=2",
        "--seed", "7", "--dry-run", "--dump", str(dump),
    ]
    assert main(argv) == 0
    expected = generate(
        WorkloadSpec(
            "sensors", streams=3, rates=(50.0,), duration_s=4.0, lags_s=(0, 5, 15),
            kappas=(2, 2, 50), disorder=(ZipfDelay(20_000, 2.0),), seed=7,
        )
    )
    assert read_jsonl(dump) == expected
    first = json.loads(dump.read_text().splitlines()[0])
    assert list(first) == ["stream", "seq", "event_time", "arrival_time", "value", "a1", "x", "y"]


def test_per_stream_disorder_from_the_cli(tmp_path: Path) -> None:
    dump = tmp_path / "equi.jsonl"
    argv = [
        "produce", "equi", "--streams", "3", "--rate", "100", "--duration", "20",
        "--disorder", "none;exp:mean=300;zipf:max=1000,skew=1", "--dry-run", "--dump", str(dump),
    ]
    assert main(argv) == 0
    records = read_jsonl(dump)
    delays = {s: [r["arrival_time"] - r["event_time"] for r in records if r["stream"] == s]
              for s in ("s1", "s2", "s3")}
    assert set(delays["s1"]) == {0}
    assert 200 < sum(delays["s2"]) / len(delays["s2"]) < 400
    assert max(delays["s3"]) <= 1000 and min(delays["s3"]) == 0
    assert all(r["a1"] == r["value"] and 1 <= r["a1"] <= 100 for r in records)


@pytest.mark.timeout(90)
def test_no_broker_fails_within_30_s_and_keeps_the_dump(tmp_path: Path) -> None:
    """With the bootstrap pointing at a closed port: exit 1, a clear message, < 30 s."""
    port = ephemeral_port()
    dump = tmp_path / "dump.jsonl"
    env = {
        **os.environ,
        "HARVEST_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
        "HARVEST_CACHE_DIR": str(tmp_path / "cache"),
    }
    argv = [
        sys.executable, "-m", "pipeline.cli.main", "produce", "sensors", "--rate", "20",
        "--duration", "2", "--fast", "--dump", str(dump),
    ]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=80, check=False)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert "KafkaUnavailableError" in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert elapsed < 30.0  # the contract of the issue: fail within 30 s, not hang
    assert len(read_jsonl(dump)) == 3 * 40  # written before publishing started


def _fake_publish(monkeypatch: pytest.MonkeyPatch, *, delivered: int, raise_after: bool
                  ) -> None:
    """``publish`` that sends everything but gets ``delivered`` acknowledged, or fails
    outright after that many (a fatal producer error)."""
    from connectors.io import producer
    from pipeline.core.errors import DeliveryError

    def publish(records: Any, **_: object) -> producer.ProduceReport:
        sent = len(list(records))
        report = producer.ProduceReport(sent=sent, delivered=delivered,
                                        failed=sent - delivered,
                                        errors=["t: Local: Message timed out"])
        if raise_after:
            exc = DeliveryError("the Kafka producer failed: fenced")
            exc.report = report  # type: ignore[attr-defined]
            raise exc
        return report

    monkeypatch.setattr(producer, "publish", publish)


def test_undelivered_records_exit_1_naming_how_many(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_publish(monkeypatch, delivered=100, raise_after=False)
    assert main(["produce", "sensors", "--rate", "20", "--duration", "2", "--fast"]) == 1
    err = capsys.readouterr().err
    assert "20 of 120 records not delivered" in err
    assert "Message timed out" in err


def test_a_failed_producer_names_how_many_are_lost(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_publish(monkeypatch, delivered=30, raise_after=True)
    assert main(["produce", "sensors", "--rate", "20", "--duration", "2", "--fast"]) == 1
    assert "90 of 120 records not delivered: the Kafka producer failed" in (
        capsys.readouterr().err)
