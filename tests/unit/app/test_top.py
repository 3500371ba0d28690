"""`harvest top` without a broker: the checkpoint reader, the model's rates, lag and
history against brute-force counts, the rendered view, JSON lines, and one refresh
through a fake follower."""

from __future__ import annotations

import io
import json
import os
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from connectors.io.consumer import Consumed, Undecodable
from pipeline.app.top.checkpoint import Batch, parse_offsets, read_batches
from pipeline.app.top.keys import quit_keys
from pipeline.app.top.live import Target, fold, refresh
from pipeline.app.top.model import STALE_S, TopModel
from pipeline.app.top.view import json_line, render, sparkline

T0 = 1_800_000_000_000  # wall ms


def _metric(instance: str, wall: int, z: float, **more: Any) -> dict[str, Any]:
    return {"time": wall - 500, "wall_time": wall, "instance": instance, "z": z,
            "harvest_fractions": [1.0, 0.5, 0.25, 0.0, 1.0, 1.0], "k_ms": 1500,
            "recall_target": 0.95, "instant_recall_target": None, "estimated_recall": 0.97,
            "measured_recall": None, "rate_in": 300.0, "rate_out": 40.0, "queue_drops": 7,
            "state_size": 1234, "extra": {"validator_late": 2.0, "validator_future": 1.0,
                                           "validator_jumps": 5.0}, **more}


def _write_checkpoint(root: Path, batches: list[tuple[int, int, int, dict[str, int]]]
                      ) -> None:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch_id, start_ms, commit_ms, offsets in batches:
        meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": start_ms, "conf": {}})
        source = json.dumps({"in.s1": {"0": offsets["s1"]},
                             "in.s2": {"0": offsets["s2"], "1": 5}})
        (root / "offsets" / str(batch_id)).write_text(f"v1\n{meta}\n{source}\n")
        commit = root / "commits" / str(batch_id)
        commit.write_text('v1\n{"nextBatchWatermarkMs":0}')
        os.utime(commit, ns=(commit_ms * 1_000_000, commit_ms * 1_000_000))


def test_checkpoint_batches_durations_and_offsets(tmp_path: Path) -> None:
    _write_checkpoint(tmp_path, [(0, T0, T0 + 800, {"s1": 10, "s2": 20}),
                                 (1, T0 + 1000, T0 + 1600, {"s1": 40, "s2": 50})])
    (tmp_path / "offsets" / "2").write_text("v1\n")  # planned, not committed
    batches = read_batches(str(tmp_path))
    assert [(b.batch_id, b.duration_ms) for b in batches] == [(0, 800), (1, 600)]
    assert batches[1].offsets == {("in.s1", 0): 40, ("in.s2", 0): 50, ("in.s2", 1): 5}
    assert batches[1].total_offset - batches[0].total_offset == 60
    assert read_batches(tmp_path.as_uri()) == batches
    assert read_batches("hdfs://nn/ck") == []
    assert read_batches(str(tmp_path / "none")) == []
    assert parse_offsets("v1\n{}\n-\n") == (0, {})


def test_output_rates_and_history_match_brute_force_counts() -> None:
    model = TopModel(window_s=5.0, history_s=60.0, bucket_s=5.0)
    emits = [T0 + i * 37 for i in range(1500)]  # 55.5 s of results, ~27/s
    for i, emit in enumerate(emits):
        model.add_result({"instance": str(i % 2), "emit_time": emit})
    model.add_result(None)
    model.add_metric(_metric("0", T0 + 55_000, 0.4))
    model.add_metric(_metric("0", T0 + 50_000, 0.9))  # older: not the latest
    model.add_metric(_metric("1", T0 + 55_000, 0.6))
    now = T0 + 55_400
    snap = model.snapshot(now)
    assert snap["live"] and snap["as_of_ms"] == now
    assert snap["totals"] == {"results": 1501, "metrics": 3, "undecodable_results": 1}
    rows = {r["instance"]: r for r in snap["instances"]}
    for name, row in rows.items():
        mine = [e for i, e in enumerate(emits) if str(i % 2) == name]
        hi = now // 1000  # the last 5 whole seconds before the running one
        lo = hi - 5
        assert row["out_per_s"] == pytest.approx(
            sum(1 for e in mine if lo <= e // 1000 < hi) / 5.0)
        history = row["history"]["out_per_s"]
        assert len(history) == 12
        assert sum(history) * 5.0 == pytest.approx(
            sum(1 for e in mine if hi - 60 <= e // 1000 < hi), abs=1e-6)
    assert rows["0"]["z"] == 0.4
    assert rows["0"]["history"]["z"][-1] == pytest.approx(0.4)
    assert rows["0"]["history"]["z"][-2] == pytest.approx(0.9)
    assert rows["0"]["rejects"] == 3 and rows["0"]["k_ms"] == 1500
    assert rows["0"]["in_per_s"] == 300.0 and rows["0"]["queue_drops"] == 7


def test_a_finished_run_is_shown_at_its_newest_record() -> None:
    model = TopModel()
    model.add_metric(_metric("0", T0, 0.5))
    snap = model.snapshot(T0 + STALE_S * 1000 + 1)
    assert snap["as_of_ms"] == T0 and not snap["live"]


def test_lag_is_end_minus_committed_offsets() -> None:
    model = TopModel()
    model.set_lag({("in.s1", 0): 100})
    assert model.snapshot(T0)["job"]["lag"] is None
    model.set_batches([Batch(0, T0, T0 + 400, {("in.s1", 0): 10, ("in.s2", 0): 5}),
                       Batch(1, T0 + 1000, T0 + 1500, {("in.s1", 0): 70, ("in.s2", 0): 15,
                                                      ("in.s3", 0): 9})])
    model.set_lag({("in.s1", 0): 100, ("in.s2", 0): 15})  # s3: no answer
    job = model.snapshot(T0)["job"]
    assert job["lag"] == {"total": 30, "topics": {"in.s1": 30, "in.s2": 0}}
    assert job["batches"] == 2 and job["batch_ms_last"] == 500
    assert job["input_rows_per_s"] == pytest.approx((94 - 15) / 1.1, abs=0.1)


def test_the_view_shows_rates_z_and_the_configuration() -> None:
    model = TopModel()
    for i in range(50):
        model.add_result({"instance": "0", "emit_time": T0 - 4000 + i * 50})
    model.add_metric(_metric("0", T0, 0.4321))
    snap = model.snapshot(T0 + 100)
    console = Console(record=True, width=220, color_system=None)
    console.print(render(snap, "harvest top: demo"))
    text = console.export_text()
    assert "harvest top: demo" in text and "live" in text
    numbers, history = (line for line in text.splitlines() if line.startswith("0 "))
    assert numbers.split() == ["0", "300", "10.0", "0.432", "1,500", "7", "3", "0.970",
                               "1,234"]
    assert "1.00 .50 | .25 .00 | 1.00 1.00" in history
    assert json.loads(json_line(snap))["instances"][0]["z"] == 0.4321
    empty = Console(record=True, width=120, color_system=None)
    empty.print(render(TopModel().snapshot(T0)))
    assert "waiting for the job's metrics" in empty.export_text()


def _busy_model() -> TopModel:
    """Three instances with large values everywhere and 150 s of history."""
    model = TopModel()
    for i in range(3000):
        model.add_result({"instance": str(i % 3), "emit_time": T0 - 150_000 + i * 50})
    for name in ("0", "1", "17"):
        for k in range(30):
            model.add_metric(_metric(name, T0 - 150_000 + k * 5000, 0.3 + k / 50,
                                     rate_in=654_321.0, k_ms=12_530, queue_drops=1_234_567,
                                     state_size=9_106_569,
                                     extra={"validator_late": 2_345_678.0}))
    model.set_batches([Batch(12_345, T0, T0 + 11_862, {("in.s1", 0): 10}),
                       Batch(12_346, T0 + 1000, T0 + 12_862, {("in.s1", 0): 4_000_010})])
    model.set_lag({("in.s1", 0): 10_000_000})
    return model


@pytest.mark.parametrize("width", [80, 100, 200])
def test_every_number_fits_an_80_column_terminal(width: int) -> None:
    console = Console(record=True, width=width, color_system=None)
    console.print(render(_busy_model().snapshot(T0), "harvest top: demo (demo2334334acc)"))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    lines = text.splitlines()
    assert lines[1].startswith("query: 12,347 micro-batches") and "4.00M rows/s" in lines[1]
    assert lines[2].startswith("lag 5,999,990 records   results 3,000")
    numbers = next(line.split() for line in text.splitlines() if line.startswith("17 "))
    assert numbers == ["17", "654k", "0.0", "0.880", "12,530", "1.23M", "2.35M", "0.970",
                       "9.11M"]
    bars = min(30, (width - 8 - 30 - 6) // 2)  # instance, z_ij, three gaps of 2
    history = [line for line in text.splitlines() if line.startswith("0 ")][1]
    assert f"out/s history {bars * 5}s" in text
    assert history.split()[-1] == sparkline(
        _busy_model().snapshot(T0)["instances"][0]["history"]["z"][-bars:], top=1.0)


def test_sparkline_scales_and_leaves_gaps() -> None:
    assert sparkline([0.0, 1.0, 2.0, None, 4.0]) == "▁▃▅ █"
    assert sparkline([0.5, None], top=1.0) == "▅ "
    assert sparkline([0.0, 0.0]) == "▁▁"


class _FakeFollower:
    def __init__(self, items: list[Consumed | Undecodable]) -> None:
        self.items = items
        self.asked: list[tuple[str, int]] = []

    def poll(self, budget_s: float) -> list[Consumed | Undecodable]:
        items, self.items = self.items, []
        return items

    def end_offsets(self, partitions: Any) -> dict[tuple[str, int], int]:
        self.asked = sorted(partitions)
        return {p: 100 for p in self.asked}


def test_one_refresh_folds_topics_checkpoint_and_lag(tmp_path: Path) -> None:
    _write_checkpoint(tmp_path, [(0, T0, T0 + 800, {"s1": 10, "s2": 20})])
    target = Target("p.metrics", "p.results", str(tmp_path), {})
    items: list[Consumed | Undecodable] = [
        Consumed("p.metrics", 0, 0, None, None, "operator_metrics", _metric("0", T0, 0.5)),
        Consumed("p.results", 0, 0, None, None, "join_result",
                 {"instance": "0", "emit_time": T0}),
        Undecodable("p.results", 0, 1, b"x", "bad"),
        Consumed("p.other", 0, 0, None, None, "x", {}),
    ]
    model = TopModel()
    follower = _FakeFollower(items)
    refresh(model, follower, target, 0.1)  # type: ignore[arg-type]
    assert follower.asked == [("in.s1", 0), ("in.s2", 0), ("in.s2", 1)]
    snap = model.snapshot(T0)
    assert snap["totals"] == {"results": 2, "metrics": 1, "undecodable_results": 1}
    assert snap["job"]["lag"]["total"] == 90 + 80 + 95
    fold(model, [Consumed("p.metrics", 0, 1, None, None, "m", _metric("1", T0, 0.2))],
         Target("p.metrics", None, None, {}))
    assert [r["instance"] for r in model.snapshot(T0)["instances"]] == ["0", "1"]


def test_the_header_names_undecodable_results() -> None:
    model = TopModel()
    model.add_metric(_metric("0", T0, 0.5))
    model.add_result(None)
    console = Console(record=True, width=300, color_system=None)
    console.print(render(model.snapshot(T0)))
    assert "(1 results undecodable" in console.export_text()


def test_q_quits_on_a_terminal_and_the_terminal_is_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = os.openpty()
    with os.fdopen(slave, "r") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        before = termios.tcgetattr(slave)
        with quit_keys() as wait:
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # keys one at a time
            assert wait(0.05) is False
            os.write(master, b"x")
            assert wait(0.05) is False  # another key: go on
            os.write(master, b"q")
            start = time.monotonic()
            assert wait(30.0) is True
            assert time.monotonic() - start < 5.0
            os.write(master, b"xq")
            assert wait(0.0) is True  # no time left (a slow refresh): q is still read
            assert wait(-1.0) is False
        assert termios.tcgetattr(slave) == before
    os.close(master)


def test_without_a_terminal_wait_only_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    with quit_keys() as wait:
        assert wait(0.01) is False
