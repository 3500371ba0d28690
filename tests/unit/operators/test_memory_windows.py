"""Row-level eviction from basic windows (StreamWindow.remove / expire_rows)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.join.predicates import DenseStore, build_predicate
from pipeline.operators.join.sparse import SparseStore
from pipeline.operators.join.windows import StreamWindow

OPS = st.lists(st.tuples(st.sampled_from(["insert", "remove", "expire", "probe"]),
                         st.integers(0, 120)), max_size=60)


def _rows(win: StreamWindow) -> set[tuple[int, int]]:
    return {(int(t), int(q)) for bw in win.bws.values()
            for t, q in zip(bw.ts.view(), bw.seq.view(), strict=True)}


@settings(max_examples=50, deadline=None)
@given(ops=OPS, b=st.sampled_from([5, 16]), kind=st.sampled_from(["band", "cosine"]))
def test_remove_and_expire_rows_keep_the_window_consistent(
        ops: list[tuple[str, int]], b: int, kind: str) -> None:
    pred = build_predicate(kind, attribute="v", epsilon=0.5)
    win = StreamWindow(1000, b, pred)
    model: dict[tuple[int, int], float] = {}
    for seq, (op, x) in enumerate(ops):
        if op == "insert":
            val = float(x % 7)
            enc = pred.encode({"v": {f"w{x % 7}": 1.0}} if kind == "cosine" else {"v": val})
            win.insert(x, seq, enc)
            model[(x, seq)] = val
        elif op == "remove" and model:
            key = sorted(model)[x % len(model)]
            assert win.remove(*key)
            del model[key]
            assert not win.remove(*key)
        elif op == "expire":
            win.expire_rows(x)
            model = {k: v for k, v in model.items() if k[0] >= x}
        elif op == "probe" and kind == "band":  # the merged copy follows every change
            parts = win.merged_in_range(x)
            got = {(int(t), int(q)) for bw, rows in parts
                   for t, q in zip(bw.ts.view() if rows is None else bw.ts.view()[rows],
                                   bw.seq.view() if rows is None else bw.seq.view()[rows],
                                   strict=True)}
            assert got == {k for k in model if k[0] >= x}
        assert _rows(win) == set(model)
        assert win.size() == len(model)
    if kind == "band":  # features moved with their rows
        for bw in win.bws.values():
            assert isinstance(bw.feats, DenseStore)
            for t, q, f in zip(bw.ts.view(), bw.seq.view(), bw.feats.rows.view(), strict=True):
                assert model[(int(t), int(q))] == f[0]
    else:
        for bw in win.bws.values():
            feats = bw.feats
            assert isinstance(feats, SparseStore)
            assert len(feats.ptr) == len(bw)
            assert np.all(np.diff(np.append(feats.ptr.view(), len(feats.keys))) >= 1)
