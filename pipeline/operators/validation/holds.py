"""What the engine holds, for the input validator's duplicate check (ours; ARCHITECTURE
§7): the engine's copies of some (stream, seq) keys (:func:`engine_holds`), and the
comparison of a held tuple's attributes with a new arrival's (:func:`same_attrs`) — for
a tuple already in a join window only the predicate's feature row is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.core.errors import SerializationError
from pipeline.operators.events import Event
from pipeline.operators.join.predicates import DenseStore


def same_attrs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal attributes (the ones the engine keeps), NaN-free by the decode rules."""
    if isinstance(a, _FeatureCheck):  # a windowed tuple: compare the predicate's features
        return a.matches(b)
    return all(b[name] == value for name, value in a.items() if name in b)


def engine_holds(engine: Any, events: Sequence[Event]) -> dict[tuple[int, int], tuple[int, Any]]:
    """The engine's copies of the (stream, seq) keys of ``events``: from the K-slack
    buffers and the Synchronizer (event time, attributes) and from the join windows
    (event time; attributes compared as the predicate's features). Empty for keys the
    engine does not hold."""
    n = len(events)
    out: dict[tuple[int, int], tuple[int, Any]] = {}
    if n == 0:
        return out
    st = np.fromiter((ev.stream for ev in events), np.int64, n)
    sq = np.fromiter((ev.seq for ev in events), np.int64, n)
    ts = np.fromiter((ev.ts for ev in events), np.int64, n)
    for s, ks in enumerate(engine.kslacks):
        mine = sq[st == s]
        if mine.shape[0] and len(ks):
            for ev in ks.holding(mine):
                out[(ev.stream, ev.seq)] = (ev.ts, ev.attrs)
    if len(engine.sync):
        wanted = set(zip(st.tolist(), sq.tolist(), strict=True))
        for ev in engine.sync.buffered():
            if (ev.stream, ev.seq) in wanted:
                out[(ev.stream, ev.seq)] = (ev.ts, ev.attrs)
    windows = getattr(engine.join, "windows", None)
    if not windows:
        return out
    predicate = engine.config.predicate
    bid = ts // engine.config.basic_window_ms
    todo = np.ones(n, bool)
    if out:
        todo = np.fromiter(((s, q) not in out for s, q in zip(st.tolist(), sq.tolist(),
                                                              strict=True)), bool, n)
    idx = np.flatnonzero(todo)
    order = idx[np.lexsort((bid[idx], st[idx]))]
    cuts = np.flatnonzero((np.diff(st[order]) != 0) | (np.diff(bid[order]) != 0)) + 1
    for group in np.split(order, cuts) if order.shape[0] else []:
        stream, b = int(st[group[0]]), int(bid[group[0]])
        bw = windows[stream].bws.get(b)
        if bw is None or len(bw) == 0:
            continue
        seqs = bw.seq.view()
        hits = np.flatnonzero(np.isin(seqs, sq[group]))
        if not hits.shape[0]:
            continue
        tsv = bw.ts.view()
        for r in hits.tolist():
            out[(stream, int(seqs[r]))] = (int(tsv[r]), _FeatureCheck(predicate, bw, r))
    return out


class _FeatureCheck(Mapping[str, Any]):
    """A windowed tuple's attributes, known only as the predicate's feature row: equal to
    an event's attributes iff the event encodes to the same row (:func:`same_attrs`)."""

    def __init__(self, predicate: Any, bw: Any, row: int) -> None:
        self.predicate, self.bw, self.row = predicate, bw, row

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def matches(self, attrs: Mapping[str, Any]) -> bool:
        side_of = getattr(self.bw.feats, "side", None)
        if not isinstance(self.bw.feats, DenseStore) or side_of is None:
            return True  # sparse features (cosine): (stream, seq, event time) decide
        try:
            enc = self.predicate.encode(attrs)
        except SerializationError:
            return False
        side = side_of(np.array([self.row], np.int64))
        return bool(np.array_equal(np.asarray(side).reshape(-1), np.asarray(enc).reshape(-1)))
