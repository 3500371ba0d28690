"""`harvest bench soak`: per-minute rows from samples, growth, drift and targets; the
process-tree memory sampler on a fake /proc."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak.memory import MemorySample, sample_memory
from bench.soak.rows import (
    BatchSample,
    Samples,
    minute_rows,
    output_drift,
    summarize,
)


def _samples(minutes: int, *, out: float = 5.0, rss_slope: float = 0.0,
             state_slope: float = 0.0) -> Samples:
    s = Samples()
    for t in range(0, 60 * minutes, 8):
        s.batches.append(BatchSample(t + 1.0, 8_000, int(out * 8), 6_000.0, 3e6))
        s.memory.append((t + 0.5, MemorySample(1000 + rss_slope * t, 800, 200, 400, 2)))
        s.state_tuples.append((t + 0.2, "0", 200_000, 5e6 + state_slope * t))
        s.load.append((t, 4.0))
    return s


def test_rows_and_targets_of_a_flat_run() -> None:
    rows = minute_rows(_samples(20), 20, 1)
    assert [r["minute"] for r in rows] == list(range(1, 21))
    keys = {"minute", "input_rate", "output_rate", "batch_ms_p50", "state_mb",
            "driver_rss_mb", "worker_rss_mb"}
    assert keys <= set(rows[0])
    assert rows[4]["state_mb"] == 5.0 and rows[4]["batch_ms_p50"] == 6000.0
    summary = summarize(rows)
    assert summary["state_growth"] == 0.0 and summary["rss_growth"] == 0.0
    assert abs(summary["output_drift"]) < 0.15  # 7 or 8 batches a minute
    assert summary["targets_met"]["state_growth<5%"] and summary["targets_met"]["rss_growth<5%"]


def test_growth_is_caught() -> None:
    rows = minute_rows(_samples(20, rss_slope=0.2, state_slope=2_000.0), 20, 1)
    summary = summarize(rows)
    assert summary["rss_growth"] > 0.05 and not summary["targets_met"]["rss_growth<5%"]
    assert summary["state_growth"] > 0.05 and not summary["targets_met"]["state_growth<5%"]


def test_drift_needs_both_spans() -> None:
    assert output_drift(minute_rows(_samples(8), 8, 1)) is None
    rows = [{"minute": m, "output_rate": 10.0 if m <= 10 else 8.0} for m in range(1, 21)]
    assert output_drift(rows) == pytest.approx(-0.2)


def test_memory_of_the_driver_its_jvm_and_python_workers(tmp_path: Path) -> None:
    procs = {100: (1, "python -m pipeline.cli.main bench soak", 200_000),
             101: (100, "/usr/bin/java -cp spark org.apache.spark.deploy.SparkSubmit", 800_000),
             102: (101, "/venv/bin/python -m pyspark.daemon", 50_000),
             103: (102, "/venv/bin/python -m pyspark.daemon", 70_000),
             104: (1, "/usr/bin/java kafka.Kafka", 999_999)}
    for pid, (ppid, cmd, rss_kb) in procs.items():
        d = tmp_path / str(pid)
        d.mkdir()
        (d / "stat").write_text(f"{pid} (x y) S {ppid} 1 1")
        (d / "cmdline").write_bytes(cmd.replace(" ", "\0").encode())
        (d / "status").write_text(f"Name:\tx\nVmRSS:\t{rss_kb} kB\n")
    m = sample_memory(100, tmp_path)
    assert m.workers == 2
    assert round(m.jvm_mb) == round(800_000 / 1024)
    assert round(m.driver_mb) == round(1_000_000 / 1024)
    assert round(m.worker_mb) == round(120_000 / 1024)


def test_nmt_summary_is_parsed_and_growth_attributed() -> None:
    from bench.soak.memory import parse_nmt
    from bench.soak.rows import Samples, native_growth

    text = """Native Memory Tracking:

Total: reserved=2743586KB, committed=1381282KB
       malloc: 33534KB #1
-                 Java Heap (reserved=1048576KB, committed=1048576KB)
                            (mmap: reserved=1048576KB, committed=1048576KB)
-                      Code (reserved=251904KB, committed=40960KB)
"""
    got = parse_nmt(text)
    assert got == {"Total": 1381282 / 1024.0, "Java Heap": 1024.0, "Code": 40.0}
    assert parse_nmt("NMT is off") == {}
    samples = Samples()
    samples.nmt = [(250.0, {"Total": 1000.0, "Code": 40.0, "Java Heap": 1024.0}),
                   (1190.0, {"Total": 1060.0, "Code": 100.0, "Java Heap": 1024.0})]
    assert native_growth(samples) == {"Total": 60.0, "Code": 60.0}


def test_compare_summary_is_the_mean_output_from_minute_2_over_tail_drop() -> None:
    from bench.soak.compare import summarize

    rows = {"grubjoin": [10.0, 60.0, 40.0], "taildrop": [30.0, 20.0, 30.0]}
    runs = {m: {"rows": [{"minute": i + 1, "output_rate": v} for i, v in enumerate(vs)]}
            for m, vs in rows.items()}
    got = summarize(runs)
    assert got["output_rate_from_minute_2"] == {"grubjoin": 50.0, "taildrop": 25.0}
    assert got["over_taildrop"] == {"grubjoin": 2.0, "taildrop": 1.0}
