"""`harvest bench delivery` measures that need no broker: latency per result over the
steady span, and the payload's per-sink rows, ratio and correctness target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.delivery import readback as delivery
from bench.delivery.measures import Run
from bench.delivery.readback import latencies as _latencies
from bench.delivery.report import payload as _payload
from bench.delivery.report import plot as _plot
from connectors.io.consumer import Consumed
from pipeline.core.settings import Settings


def _input(stream: str, seq: int, appended_ms: int) -> Consumed:
    return Consumed("in", 0, seq, None, appended_ms, "sensor_reading",
                    {"stream": stream, "seq": seq})


def _result(rid: str, members: list[tuple[str, int]]) -> dict[str, Any]:
    return {"id": rid, "members": [{"stream": s, "seq": q, "event_time": 0}
                                   for s, q in members]}


def test_latency_is_receipt_minus_latest_member_append_over_the_steady_span(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = [_input("s1", i, 1000 * i) for i in range(11)] + [_input("s2", 0, 0)]
    monkeypatch.setattr(delivery, "_read", lambda settings, topic: inputs)
    seen = [
        (_result("early", [("s1", 1), ("s2", 0)]), 1500.0),  # completed at 1 s: warm-up
        (_result("a", [("s1", 5), ("s2", 0)]), 5200.0),  # 200 ms
        (_result("a", [("s1", 5), ("s2", 0)]), 9000.0),  # a second copy: the first counts
        (_result("b", [("s1", 8), ("s2", 0)]), 8600.0),  # 600 ms
        (_result("late", [("s1", 10), ("s2", 0)]), 10100.0),  # after 90 %: the flush
        (_result("unknown", [("s1", 99)]), 5000.0),  # a member without an append time
    ]
    run = Run("paced", "exactly-once", 12, 2, 2, True, 0, 3, 1.0)
    _latencies(run, seen, Settings(), ["in"])
    assert run.latencies == 2
    assert (run.p50_ms, run.p99_ms) == (600.0, 600.0)


def _run(phase: str, mode: str, **kw: Any) -> Run:
    base: dict[str, Any] = {"input_records": 10, "results": 5, "true_results": 5,
                            "equals_oracle": True, "duplicates": 0, "batches": 2,
                            "wall_s": 1.0}
    return Run(phase, mode, **{**base, **kw})


def test_payload_averages_the_drains_and_checks_correctness(tmp_path: Path) -> None:
    runs = [
        _run("drain", "at-least-once", throughput=100.0, batch_ms_p50=900.0),
        _run("drain", "exactly-once", throughput=90.0, txn_ms_p50=20.0, commit_ms_p50=5.0),
        _run("drain", "exactly-once", throughput=70.0, txn_ms_p50=30.0, commit_ms_p50=7.0),
        _run("drain", "at-least-once", throughput=100.0, batch_ms_p50=1100.0),
        _run("paced", "at-least-once", p50_ms=1000.0, p99_ms=2000.0),
        _run("paced", "exactly-once", p50_ms=1100.0, p99_ms=2100.0, txn_ms_p50=3.0),
    ]
    payload = _payload(runs, False, 10, 10, 100)
    eo, alo = payload["by_delivery"]["exactly-once"], payload["by_delivery"]["at-least-once"]
    assert eo["throughput"] == 80.0 and eo["throughput_runs"] == [90.0, 70.0]
    assert eo["txn_ms_p50"] == 25.0 and eo["commit_ms_p50"] == 6.0
    assert alo["drain_batch_ms_p50"] == 1000.0
    assert payload["throughput_ratio_eo_over_alo"] == pytest.approx(0.8)
    assert payload["p99_extra_ms_eo"] == pytest.approx(100.0)
    assert payload["targets_met"]["equal_to_oracle_without_duplicates"] is True
    _plot(payload, tmp_path)
    assert (tmp_path / "delivery.png").stat().st_size > 0
    runs[1].duplicates = 1
    assert not _payload(runs, False, 10, 10, 100)["targets_met"][
        "equal_to_oracle_without_duplicates"]
