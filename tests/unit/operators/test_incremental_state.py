"""Incremental engine state (ARCHITECTURE §3): ``snapshot_header`` + the basic windows
``window_changes`` hands out, applied to a key-value store batch after batch, restore
(``from_pieces``) the same engine as the full snapshot — and a save writes only the
basic windows that changed."""

from __future__ import annotations

import itertools
import pickle
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.operators.engine.engine import Engine
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.join.windows import StreamWindow
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_dump, make_spec, to_events

Store = dict[tuple[int, int], bytes]


def same(a: Any, b: Any) -> bool:
    """Deep equality of snapshots (dicts, lists, tuples, NumPy arrays, scalars)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def save(eng: Engine, store: Store) -> tuple[bytes, int]:
    """Apply the engine's window changes to ``store``; the pickled header and the number
    of pieces written."""
    written = 0
    for j, (changed, removed) in enumerate(eng.window_changes()):
        for bid, piece in changed.items():
            store[(j, bid)] = pickle.dumps(piece)
            written += 1
        for bid in removed:
            del store[(j, bid)]
    return pickle.dumps(eng.snapshot_header()), written


def restore(config: Any, header: bytes, store: Store) -> Engine:
    windows: list[list[dict[str, Any]]] = [[] for _ in range(config.m)]
    for (j, _), blob in store.items():
        windows[j].append(pickle.loads(blob))
    return Engine.from_pieces(config, pickle.loads(header), windows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 3),
    predicate=st.sampled_from(["equi", "band", "cosine"]),
    mode=st.sampled_from(["none", "max", "fixed"]),
    cuts=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5),
)
def test_pieces_saved_batch_after_batch_restore_the_engine_exactly(
    seed: int, m: int, predicate: str, mode: str, cuts: list[float]
) -> None:
    spec = make_spec(
        m, predicate, [120] * m,
        disorder={"mode": mode, "slack_ms": 60, "interval_ms": 50, "period_ms": 1000},
        shedding={"basic_window_ms": 30},
    )
    events = to_events(make_dump(seed, m, 25, max_delay=150), spec)
    config = resolve_engine(spec)
    ref = Engine(config)
    expected = [r.id for r in ref.process_many(events) + ref.flush()]
    bounds = sorted({0, len(events), *(int(c * len(events)) for c in cuts)})
    store: Store = {}
    eng = Engine(config)
    got: list[str] = []
    for lo, hi in itertools.pairwise(bounds):
        got += [r.id for r in eng.process_many(events[lo:hi])]
        header, _ = save(eng, store)
        assert set(store) == {(j, bid) for j, w in enumerate(eng.join.windows)
                              for bid in w.bids}
        back = restore(config, header, store)
        full = Engine.from_snapshot(config, pickle.loads(pickle.dumps(eng.snapshot())))
        assert same(back.snapshot(), full.snapshot())
        assert save(back, dict(store))[1] == 0  # restored: everything is persisted
        eng = back  # continue from the restored engine, as after a restart
    got += [r.id for r in eng.flush()]
    assert got == expected
    assert eng.stats == ref.stats


def test_a_save_writes_only_the_changed_basic_windows() -> None:
    pred = build_predicate("band", attribute="value", epsilon=1.0)
    win = StreamWindow(1_000, 100, pred)
    for ts in range(0, 1_000, 10):
        win.insert(ts, ts, pred.encode({"value": 1.0}))
    changed, removed = win.changes()
    assert sorted(changed) == list(range(10)) and removed == []
    assert win.changes() == ({}, [])  # nothing changed since
    win.insert(995, 1, pred.encode({"value": 2.0}))  # the newest basic window grows
    win.insert(250, 2, pred.encode({"value": 2.0}))  # a late tuple into an old one
    changed, removed = win.changes()
    assert sorted(changed) == [2, 9] and removed == []
    assert len(changed[2]["ts"]) == 11
    win.expire(300)  # basic windows 0..2 hold only tuples older than 300
    win.insert(1_005, 3, pred.encode({"value": 2.0}))  # a new basic window
    changed, removed = win.changes()
    assert sorted(changed) == [10] and removed == [0, 1, 2]
    again = StreamWindow(1_000, 100, pred)
    again.restore(win.snapshot())
    assert sorted(again.changes()[0]) == list(range(3, 11))  # a full restore: all new
    again.restore(win.snapshot())
    again.mark_persisted()
    assert again.changes() == ({}, [])
