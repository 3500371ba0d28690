"""`harvest bench peer` pieces that need no broker or Spark: bad --only, task overlap,
steady latency, busy time and the steady state, ATR replication, the differential
profile, the targets and summary of a payload, and the figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.peer.main import run
from bench.peer.plot import plot
from bench.peer.report import summary, targets, targets_missed_why
from bench.peer.runs import Batch, QueryRun, overlap, steady_latency
from bench.peer.scale import profile
from bench.peer.setup import Workload, replication
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings


def test_only_names_the_parts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="drain,startup,overhead,latency,scaling,cluster"):
        run(False, tmp_path, Settings(), only="drain,speed")


def test_overlap_counts_the_time_two_tasks_ran_at_once() -> None:
    stages = [[(0, 0.0, 1000.0), (1, 500.0, 1500.0)],  # 500 ms of 1500 together
              [(0, 0.0, 400.0), (1, 400.0, 800.0)]]  # one after the other
    got = overlap(stages)
    assert got["stages"] == 2 and got["overlap_s"] == 0.5 and got["span_s"] == 2.3
    assert got["overlap_share"] == round(0.5 / 2.3, 3)
    assert got["tasks_ms"][0] == [[0, 0, 1000], [1, 500, 1500]]
    assert got["stage_max_task_s"] == 1.4 and got["task_s"] == 2.8
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


def test_steady_state_leaves_out_the_first_two_batches_with_input() -> None:
    batches = [Batch(0, 100, 0, 5000.0, {}, 0.0), Batch(1, 0, 0, 700.0, {}, 1.0),
               Batch(2, 100, 0, 2000.0, {}, 2.0), Batch(3, 0, 3, 100.0, {}, 3.0),
               Batch(4, 300, 0, 400.0, {}, 4.0), Batch(5, 0, 4, 100.0, {}, 5.0)]
    run_ = QueryRun("harvest", batches=batches)
    assert [b.batch_id for b in run_.steady] == [4, 5]
    assert run_.steady_rows_per_s == pytest.approx(300 / 0.5)
    assert QueryRun("harvest", batches=batches[:4]).steady_rows_per_s is None


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


def _run(method: str, rows: int, exec_ms: float, python: dict[str, Any] | None = None
         ) -> QueryRun:
    """A drain of three batches of ``rows`` each, ``exec_ms`` of addBatch per batch."""
    batches = [Batch(i, rows, 0, exec_ms + 50.0, {"addBatch": exec_ms, "walCommit": 20.0},
                     float(i), {"commit": 10.0}) for i in range(3)]
    return QueryRun(method, batches=batches, python_profile=python)


def test_profile_is_each_method_less_the_one_beneath_it() -> None:
    w = _band(1_000)
    python = {"tuples": 3000, "seconds": {"input": 0.006, "probing": 0.003}}
    best = {"raw-read": _run("raw-read", 1000, 5.0), "read-floor": _run("read-floor", 1000, 20.0),
            "harvest": _run("harvest", 1000, 50.0, python),
            "spark-builtin": _run("spark-builtin", 1000, 80.0)}
    got = {(r["method"], r["phase"]): r["us_per_row"] for r in profile(w, best)}
    # steady = the third batch: 1000 rows; µs per row = addBatch ms
    assert got[("raw-read", "kafka_source")] == 5.0
    assert got[("read-floor", "kafka_source")] == 5.0
    assert got[("read-floor", "decode_validate")] == 15.0
    # the Python phases over the run's 3000 input rows: 2 and 1 µs
    assert got[("harvest", "python_input")] == 2.0 and got[("harvest", "python_probing")] == 1.0
    assert got[("harvest", "jvm_route_shuffle_arrow_sink")] == 30.0 - 3.0
    assert got[("spark-builtin", "join_state_sink")] == 60.0
    harvest = [r for r in profile(w, best) if r["method"] == "harvest"]
    assert sum(r["us_per_row"] for r in harvest) == pytest.approx(50.0)
    assert sum(r["share"] for r in harvest) == pytest.approx(1.0, abs=1e-3)


def _payload() -> dict[str, Any]:
    rows = [{"workload": w, "method": m, "steady_rows_per_s": v, "rows_per_s": v,
             "input_rows": 1_200_000, "equals_oracle": True, "duplicates": 0}
            for w, m, v in (("equi", "harvest", 60_000.0), ("equi", "spark-builtin", 20_000.0),
                            ("equi", "read-floor", 70_000.0), ("equi", "raw-read", 200_000.0),
                            ("band", "harvest", 15_000.0), ("band", "spark-builtin", 10_000.0),
                            ("band", "read-floor", 30_000.0))]
    for r in rows:
        if r["method"] in ("read-floor", "raw-read"):
            del r["equals_oracle"], r["duplicates"]
    scaling = [{"workload": "equi", "groups": g, "master": "local[2]", "rows_per_s": v,
                "steady_rows_per_s": v, "replication": 1.0,
                "overlap": {"overlap_share": o, "stage_max_task_s": t}}
               for g, v, o, t in ((1, 100.0, None, 10.0), (2, 150.0, 0.9, 6.0))]
    latency = [{"workload": "equi", "method": m, "load": 0.8, "capacity_of": c,
                "offered_rows_per_s": 16_000.0, "p50_ms": 500.0, "p99_ms": p99,
                "batch_ms_p50": 600.0, "equals_oracle": True}
               for m, c, p99 in (("spark-builtin", "spark-builtin", 3000.0),
                                 ("harvest", "spark-builtin", 2000.0),
                                 ("harvest", "harvest", 2500.0))]
    return {"rows": rows, "trigger_ms": 500,
            "batch_overhead_ms": {"harvest": 900.0, "spark-builtin": 1000.0},
            "latency": latency, "scaling": scaling,
            "profile": [{"workload": "equi", "method": "harvest", "phase": "kafka_source",
                         "us_per_row": 5.0, "share": 1.0}]}


def test_targets_and_summary_of_a_payload(tmp_path: Path) -> None:
    payload = _payload()
    assert targets(payload) == {
        "harvest_steady>=50000_equi": True, "floor_steady>=80000_equi": False,
        "harvest>=0.4x_raw_read_equi": False, "near_empty_batch<=300ms": False,
        "batch_overhead<=builtin": True,
        "harvest>=2x_builtin_equi": True, "harvest>=0.8x_floor_equi": True,
        "harvest>=3x_builtin_band": False, "harvest>=0.8x_floor_band": False,
        "p99_at_0.8x_builtin<=builtin": True,
        "p99_at_0.8x_builtin<=builtin_kept_up": True, "results_equal_oracle": True,
        "groups2>=1.4x_groups1_local": True}
    why = targets_missed_why(payload)
    assert why["floor_steady>=80000_equi"] == "70000.0 rows/s"
    assert why["harvest>=3x_builtin_band"] == "1.5x"
    assert why["harvest>=0.4x_raw_read_equi"] == "0.3x (raw read 200000.0 rows/s)"
    assert "harvest>=2x_builtin_equi" not in why
    payload["targets_missed_why"] = why
    lines = summary(payload)
    assert lines[0].startswith("drain band (1200000 rows), steady rows/s: harvest 15000.0")
    assert "local[2]: groups=2 / groups=1 = 1.5x, keyed stage alone 1.667x" in lines
    assert "missed harvest>=3x_builtin_band: 1.5x" in lines
    payload["rows"][0]["duplicates"] = 2
    assert targets(payload)["results_equal_oracle"] is False
    # the built-in's run fell behind (batches of 2.4 triggers): met as asked, not as read
    payload["latency"][0]["batch_ms_p50"] = 1_200.0
    met = targets(payload)
    assert met["p99_at_0.8x_builtin<=builtin"] is True
    assert met["p99_at_0.8x_builtin<=builtin_kept_up"] is False
    assert "'spark-builtin': False" in targets_missed_why(payload)[
        "p99_at_0.8x_builtin<=builtin_kept_up"]
    assert plot(payload, tmp_path).exists()


def test_warm_ups_of_different_sizes_read_their_own_topics() -> None:
    """A warm-up is published under its name: the scaling part's tenth must not reuse
    the drain part's twentieth (its query then waited for rows that never came)."""
    from bench.peer.setup import head

    w = _band(1_000)
    assert head(w, 10).name != head(w, 20).name
    assert len(head(w, 10).records) == 2 * len(head(w, 20).records)
