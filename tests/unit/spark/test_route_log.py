"""Adaptive ATR's routing state in the checkpoint (:mod:`pipeline.spark.route_log`): the
tasks of a batch derive the same state from the files, write it once, and a replay reads
it back whatever the instances observed since."""

from __future__ import annotations

from pathlib import Path

from pipeline.diffusion.adaptive import AdaptiveConfig
from pipeline.diffusion.batches import BatchConfig, BatchRouting, observe_task
from pipeline.spark.route_log import KEEP_BATCHES, RouteStore, read_states

CFG = BatchConfig(AdaptiveConfig(groups=2, windows_ms=(20, 20, 20), segment_ms=10,
                                 adapt_master=True, adapt_interval_ms=50,
                                 segment_keys="least-loaded"),
                  ahead_ms=1000, retain_ms=40)


def _batch(b: int) -> tuple[list[int], list[int]]:
    """Stream 1 eight times as fast as 0 and 2."""
    streams, ts = [], []
    for t in range(b * 25, (b + 1) * 25):
        for s in (0, 1, 2):
            if s == 1 or t % 8 == 0:
                streams.append(s)
                ts.append(t)
    return streams, ts


def _run(store: RouteStore, batches: range) -> tuple[list[BatchRouting], list[BatchRouting]]:
    """Each batch: two routing tasks, then both keys' usage, through the files; → the
    states read from the files, and the same chain folded in memory."""
    states, folded = [], []
    mem = BatchRouting.initial(store.config)
    for b in batches:
        streams, ts = _batch(b)
        for part in (0, 1):
            state = store.state(b)
            s, t = streams[part::2], ts[part::2]
            state.route(s, t)
            horizon = state.router.log.horizon if state.router is not None else None
            store.put_task(b, part, observe_task(store.config, state, s, t, horizon))
        for key in (0, 1):
            store.put_key(b, key, [float(b * (key + 1)), 1.0, float(b)])
        states.append(store.state(b))
        folded.append(mem)
        mem = mem.step(*store.observations(b))
    return states, folded


def test_files_fold_like_memory_and_the_master_switches(tmp_path: Path) -> None:
    store = RouteStore(str(tmp_path), CFG)
    states, folded = _run(store, range(16))
    assert [s.snapshot() for s in states] == [s.snapshot() for s in folded]
    last = store.state(16)
    assert last.router is not None and last.router.master == 1 and last.router.switches
    kept = read_states(str(tmp_path))
    assert min(kept) >= 16 - KEEP_BATCHES and max(kept) == 16


def test_a_replayed_batch_reads_its_state_back(tmp_path: Path) -> None:
    store = RouteStore(str(tmp_path), CFG)
    _run(store, range(6))
    before = store.state(6).snapshot()
    store.put_key(5, 0, [1e9, 1e9, 1e9])  # the replay of batch 5's timers differed
    assert store.state(6).snapshot() == before
    (tmp_path / "harvest-route-epochs" / "state-6.json").unlink()
    assert store.state(6).snapshot() != before  # rederived from the new observation


def test_a_changed_spec_starts_over_with_static_atr(tmp_path: Path) -> None:
    _run(RouteStore(str(tmp_path), CFG), range(6))
    other = BatchConfig(AdaptiveConfig(groups=3, windows_ms=(20, 20, 20), segment_ms=10),
                        ahead_ms=1000, retain_ms=40)
    state = RouteStore(str(tmp_path), other).state(6)
    assert state.config == other and state.router is None
