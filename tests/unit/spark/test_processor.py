"""JoinProcessor's state handling with an in-memory, transactional stand-in for Spark's
state handle: the worker-side live-instance cache must never resume a state the store
did not commit (a batch that failed is replayed from the stored state), in both state
layouts; the incremental layout restores exactly what the blob does, writes only the
pieces a batch changed and deletes the expired ones."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from pipeline.core.errors import OperatorStateError
from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.runtime.persistence import WINDOW_PIECE
from pipeline.spark import processor as proc
from pipeline.spark.processor import JoinProcessor, ProcessorConfig, StateLayout
from pipeline.spec.model import Spec
from pipeline.spec.toml import with_overrides
from pipeline.testing.compare import assert_same_results
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.oracle import oracle_ids
from pipeline.testing.state import FakeStateHandle, FakeStateStore
from pipeline.testing.streams import SENSOR_ATTRS, sensor_rows, sensor_spec

LAYOUTS: list[StateLayout] = ["incremental", "blob"]


def _ids(out: list[pd.DataFrame]) -> list[str]:
    return result_ids([f for f in out if "kind" in f.columns])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fail_batch", [None, 1, 3])
def test_failed_batches_replay_from_the_committed_state(
        monkeypatch: pytest.MonkeyPatch, fail_batch: int | None, layout: StateLayout) -> None:
    rows = sensor_rows(11)
    sp = sensor_spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS),
                          run_token=f"t{fail_batch}{layout}", state_layout=layout)
    store = FakeStateStore()
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(store))  # type: ignore[arg-type]
    real = JoinInstance.process
    got: list[str] = []
    bounds = [0, 40, 90, 130, 180, len(rows)]
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        batch = batch_frame(rows[lo:hi])
        if i == fail_batch:  # the instance mutates, then the task dies before its save
            def boom(self: JoinInstance, f: pd.DataFrame) -> list[pd.DataFrame]:
                real(self, f)
                raise RuntimeError("task lost")
            monkeypatch.setattr(JoinInstance, "process", boom)
            with pytest.raises(RuntimeError):
                list(p.handleInputRows((0,), iter([batch]), None))  # type: ignore[arg-type]
            store.rollback()
            monkeypatch.setattr(JoinInstance, "process", real)
        got += _ids(list(p.handleInputRows((0,), iter([batch]), None)))  # type: ignore[arg-type]
        store.commit()
    got += _ids(list(p.handleExpiredTimer((0,), None, None)))  # type: ignore[arg-type]
    assert_same_results(got, oracle_ids(sp.join, rows))
    assert (cfg.run_token, 0) in proc._LIVE  # the cache was in use


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_stale_live_instance_is_not_resumed(layout: StateLayout) -> None:
    sp = sensor_spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS), run_token="stale",
                          state_layout=layout)
    store = FakeStateStore()
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(store))  # type: ignore[arg-type]
    list(p.handleInputRows((0,), iter([batch_frame(sensor_rows(3)[:50])]), None))  # type: ignore[arg-type]
    store.commit()
    version, live = proc._LIVE[("stale", 0)]
    assert version == 1 and p._load(0) == (live, 1)  # resumed: same version
    proc._LIVE[("stale", 0)] = (version + 5, live)  # a version the store never committed
    back = p._load(0)[0]
    assert back is not live and back.dump() == JoinInstance.load(
        cfg.instance, 0, live.dump(), proc.WALL_CLOCK).dump()


def _processor(spec: Spec, layout: StateLayout, token: str = "", chunk_bytes: int = 1 << 20
               ) -> tuple[JoinProcessor, FakeStateStore]:
    cfg = ProcessorConfig(InstanceConfig.from_spec(spec, SENSOR_ATTRS), run_token=token,
                          state_layout=layout, chunk_bytes=chunk_bytes)
    store = FakeStateStore()
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(store))  # type: ignore[arg-type]
    return p, store


def _batch(p: JoinProcessor, rows: list[dict[str, object]]) -> list[str]:
    return _ids(list(p.handleInputRows((0,), iter([batch_frame(rows)]), None)))  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 300])
def test_incremental_state_read_back_every_batch_equals_the_blob(chunk_bytes: int) -> None:
    """No live cache (every batch reads its state back, as after a restart): the pieces
    restore exactly what the blob does, and hold exactly the current basic windows."""
    rows = sensor_rows(5, n=600)
    sp = with_overrides(sensor_spec("band"), shedding={"basic_window_ms": 50})
    procs = {layout: _processor(sp, layout, chunk_bytes=chunk_bytes) for layout in LAYOUTS}
    got: dict[str, list[str]] = {layout: [] for layout in LAYOUTS}
    for lo, hi in itertools.pairwise([*range(0, len(rows), 70), len(rows)]):
        for layout, (p, store) in procs.items():
            got[layout] += _batch(p, rows[lo:hi])
            store.commit()
        inc, blob = (procs[layout][0]._load(0)[0] for layout in LAYOUTS)
        for x in (inc, blob):  # the idle-flush deadline: each processor's own wall clock
            x.meta.pop("idle_deadline_ms")
        assert inc.dump() == blob.dump()
        stored = {key[:3] for key in procs["incremental"][1].maps["pieces"]}
        assert {k for k in stored if k[0] == WINDOW_PIECE} == {
            (WINDOW_PIECE, j, bid) for j, w in enumerate(inc.engine.join.windows)
            for bid in w.bids}
    for layout, (p, _) in procs.items():
        got[layout] += _ids(list(p.handleExpiredTimer((0,), None, None)))  # type: ignore[arg-type]
    assert got["incremental"] == got["blob"]
    assert_same_results(got["incremental"], oracle_ids(sp.join, rows))


def test_a_batch_writes_what_it_changed_not_the_window() -> None:
    rows = sensor_rows(9, n=1200)
    sp = with_overrides(sensor_spec("band"), join={"window_ms": 3000, "epsilon": 0.001},
                        shedding={"basic_window_ms": 100})
    procs = {layout: _processor(sp, layout, token=f"few-{layout}") for layout in LAYOUTS}
    for lo, hi in itertools.pairwise(range(0, len(rows) + 1, 30)):
        for p, store in procs.values():
            _batch(p, rows[lo:hi])
            store.commit()
    inc, blob = (procs[layout][1].commits for layout in LAYOUTS)
    half = len(inc) // 2  # the window is full by then
    assert sum(inc[half:]) < 0.5 * sum(blob[half:]), (inc[half:], blob[half:])
    p, store = procs["incremental"]
    version, live = proc._LIVE[("few-incremental", 0)]
    saved = p._save(live, version)  # nothing happened since the last save
    assert (saved.pieces_written, saved.pieces_removed) == (0, 0)
    assert store.staged_bytes == saved.bytes_written + 8  # the header (+ the version)


def test_pieces_are_cut_in_parts_and_lose_the_extra_parts_when_they_shrink() -> None:
    p, store = _processor(sensor_spec("band"), "incremental", chunk_bytes=4)
    p._put_piece((WINDOW_PIECE, 0, 7), b"x" * 10)
    assert sorted(store.read_map("pieces")) == [(WINDOW_PIECE, 0, 7, i) for i in range(3)]
    p._put_piece((WINDOW_PIECE, 0, 7), b"y" * 5)
    assert p._read_pieces(0) == {(WINDOW_PIECE, 0, 7): b"y" * 5}
    p.pieces.removeKey((WINDOW_PIECE, 0, 7, 0))
    with pytest.raises(OperatorStateError, match="parts"):
        p._read_pieces(0)
    p._remove_piece((WINDOW_PIECE, 0, 7), 1)  # (part 0 is gone already)
    assert not p.pieces.exists()


def test_output_frames_stay_within_the_configured_rows_and_bytes() -> None:
    """Every frame the processor yields holds at most ``max_output_rows`` rows and
    ``max_output_bytes`` bytes (a single larger row alone), and the results are the
    oracle's."""
    from pipeline.runtime.frames import row_bytes

    rows = sensor_rows(11)
    sp = sensor_spec("band")
    cfg = ProcessorConfig(InstanceConfig.from_spec(sp, SENSOR_ATTRS), max_output_rows=7,
                          max_output_bytes=2_000)
    p = JoinProcessor(cfg)
    p.init(FakeStateHandle(FakeStateStore()))  # type: ignore[arg-type]
    out = list(p.handleInputRows((0,), iter([batch_frame(rows)]), None))  # type: ignore[arg-type]
    out += list(p.handleExpiredTimer((0,), None, None))  # type: ignore[arg-type]
    assert len(out) > 3
    for f in out:
        size = int(row_bytes(f).sum())
        assert 0 < len(f) <= 7 and (size <= 2_000 or len(f) == 1)
    assert_same_results(_ids(out), oracle_ids(sp.join, rows))


def test_output_limits_follow_sparks_arrow_settings() -> None:
    assert proc.output_limits(100_000, 2**31 - 1) == (10_000, 16 << 20)
    assert proc.output_limits(0, 0) == (10_000, 16 << 20)  # ≤ 0: no limit, as in Spark
    assert proc.output_limits(2_000, 4 << 20) == (2_000, 4 << 20)
