"""`harvest bench peer` pieces that need no broker or Spark: bad --only, task overlap,
steady latency, busy time, ATR replication, the targets and summary of a payload, and
the figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.peer.main import run
from bench.peer.plot import plot
from bench.peer.report import summary, targets
from bench.peer.runs import Batch, QueryRun, overlap, steady_latency
from bench.peer.setup import Workload, replication
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings


def test_only_names_the_parts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="drain,floor,overhead,streaming,scaling,cluster"):
        run(False, tmp_path, Settings(), only="drain,speed")


def test_overlap_counts_the_time_two_tasks_ran_at_once() -> None:
    stages = [[(0, 0.0, 1000.0), (1, 500.0, 1500.0)],  # 500 ms of 1500 together
              [(0, 0.0, 400.0), (1, 400.0, 800.0)]]  # one after the other
    got = overlap(stages)
    assert got["stages"] == 2 and got["overlap_s"] == 0.5 and got["span_s"] == 2.3
    assert got["overlap_share"] == round(0.5 / 2.3, 3)
    assert got["tasks_ms"][0] == [[0, 0, 1000], [1, 500, 1500]]
    assert overlap([])["overlap_share"] is None


def test_steady_latency_leaves_out_the_fill_and_the_flush() -> None:
    points = [(float(t), 100.0) for t in range(100)]
    points[0] = (0.0, 99_000.0)  # window fill
    points[-1] = (99.0, 99_000.0)  # the final flush
    p50, p99, n = steady_latency(points)
    assert (p50, p99) == (100.0, 100.0) and n == 70  # t in [19.8, 89.1]
    assert steady_latency([]) == (None, None, 0)


def test_busy_time_counts_batches_with_input_or_results() -> None:
    run_ = QueryRun("harvest", batches=[
        Batch(0, 0, 0, 900.0, {}, 0.0), Batch(1, 10, 2, 100.0, {}, 1.0),
        Batch(2, 0, 0, 50.0, {}, 2.0), Batch(3, 0, 5, 30.0, {}, 3.0)])
    assert run_.input_rows == 10 and run_.busy_s == pytest.approx(0.13)
    assert [b.batch_id for b in run_.busy] == [1, 3]


def test_overhead_row_splits_the_state_time_and_the_empty_batches() -> None:
    from bench.peer.parts import _overhead_row

    batches = [Batch(0, 6, 0, 900.0, {"addBatch": 800.0}, 0.0, {"commit": 200.0}),
               Batch(1, 0, 0, 500.0, {}, 1.0),
               Batch(2, 4, 1, 700.0, {"addBatch": 600.0}, 2.0,
                     {"commit": 100.0, "updates": 50.0}),
               Batch(3, 0, 0, 300.0, {}, 3.0)]
    row = _overhead_row(QueryRun("harvest", batches=batches), [batches[0], batches[2]])
    assert row["batch_ms_p50"] == 800.0 and row["phases_ms_p50"] == {"addBatch": 700.0}
    assert row["state_ms_p50"] == {"commit": 150.0, "updates": 25.0, "removals": 0.0}
    assert row["empty_batch_ms_p50"] == 400.0 and row["empty_batches"] == 2


def _band(segment_ms: int) -> Workload:
    records = [{"stream": s, "seq": i, "event_time": i * 100, "arrival_time": i * 100,
                "value": 0.0} for i in range(600) for s in ("s1", "s2", "s3")]
    return Workload("band", "sensors", records,
                    {"streams": ["s1", "s2", "s3"], "window_ms": 1_000, "predicate": "band",
                     "attribute": "value", "epsilon": 0.1}, "atr", segment_ms, 10.0, 0,
                    frozenset())


def test_replication_follows_the_segment_length() -> None:
    assert replication(_band(6_000), 1) == 1.0
    # a slave tuple reaches 1 + 2W/T segments on average (capped at G): (1 + 2·4/3) / 3
    assert replication(_band(6_000), 2) == pytest.approx((1 + 2 * (1 + 2 / 6)) / 3, abs=0.02)
    assert replication(_band(1_000), 2) == pytest.approx(5 / 3, abs=0.02)


def _payload() -> dict[str, Any]:
    rows = [{"workload": w, "method": m, "rows_per_s": v, "results_equal": True}
            for w, m, v in (("equi", "harvest", 300.0), ("equi", "spark-builtin", 100.0),
                            ("band", "harvest", 150.0), ("band", "spark-builtin", 100.0))]
    scaling = [{"workload": "band", "groups": g, "master": "local[2]", "rows_per_s": v,
                "replication": r, "overlap": {"overlap_share": o}}
               for g, v, r, o in ((1, 100.0, 1.0, None), (2, 150.0, 1.22, 0.9))]
    return {"rows": rows, "ratio": {"equi": 3.0, "band": 1.5},
            "batch_overhead_ms": {"harvest": 900.0, "spark-builtin": 1000.0},
            "streaming": [{"workload": "equi", "offered_rows_per_s": 100.0,
                           "by_method": {"harvest": {"p50_ms": 1.0, "p99_ms": 2.0},
                                         "spark-builtin": {"p50_ms": 3.0, "p99_ms": 4.0}}}],
            "scaling": scaling}


def test_targets_and_summary_of_a_payload(tmp_path: Path) -> None:
    payload = _payload()
    assert targets(payload) == {
        "harvest>=3x_builtin_equi": True, "harvest>=3x_builtin_band": False,
        "groups2>=1.4x_groups1_local": True, "batch_overhead<=builtin": True,
        "results_equal": True}
    lines = summary(payload)
    assert lines[0].startswith("drain equi: harvest 300.0 vs spark-builtin 100.0 rows/s (3.0×)")
    assert "local[2]: groups=2 / groups=1 = 1.5×" in lines
    assert plot(payload, tmp_path).exists()


def test_summary_reports_the_floor() -> None:
    from bench.peer.report import summary

    payload = {"floor": {"rows": [{"workload": "equi", "rows_per_s": 30_000.0}],
                         "max_ratio": {"equi": 2.17}}}
    assert summary(payload) == ["read-and-decode floor equi: 30000.0 rows/s, at most 2.17× "
                                "the built-in join"]
