"""The instance's column-wise input path equals the row-by-row one it replaced: events
built per row, member-store entries added with ``MemberStore.add`` one tuple at a time."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.events import Event, ResultRows
from pipeline.runtime.frames import events_of, opt_int, remember, sorted_rows
from pipeline.runtime.members import MemberStore

STREAMS = ("s1", "s2", "s3")


def _events_by_row(rows: pd.DataFrame, attributes: tuple[str, ...], needed: set[str]
                   ) -> list[Event]:
    out = []
    for _, r in rows.iterrows():
        attrs = {n: (dict(r[n]) if isinstance(r[n], list) else r[n])
                 for n in attributes if n in needed}
        out.append(Event(int(r["stream_idx"]), int(r["seq"]), int(r["event_time"]),
                         int(r["arrival_time"]), attrs))
    return out


def _store(payload: bool) -> MemberStore:
    return MemberStore(STREAMS, (1000, 1000, 1000), payload=payload)


def _add_by_row(store: MemberStore, rows: pd.DataFrame, events: list[Event]) -> None:
    cols = rows.columns
    for i, ev in enumerate(events):
        part = rows["partition"].iloc[i] if "partition" in cols else None
        off = rows["offset"].iloc[i] if "offset" in cols else None
        pay = rows["payload"].iloc[i] if store.payload and "payload" in cols else None
        store.add(ev.stream, ev.seq, ev.ts, opt_int(part), opt_int(off),
                  bytes(pay) if pay is not None else None)


@st.composite
def frames(draw: Any) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    streams = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    seqs = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))  # repeats: duplicates
    ts = draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n))
    f = pd.DataFrame({"stream_idx": np.array(streams, np.int32),
                      "seq": np.array(seqs, np.int64), "event_time": np.array(ts, np.int64),
                      "arrival_time": np.array(ts, np.int64) + 7,
                      "value": [float(t) / 3 for t in ts], "a1": np.array(seqs, np.int64),
                      "tags": [[("k", float(s))] for s in seqs]})
    coords = draw(st.sampled_from(["int", "float-nan", "object", "missing"]))
    if coords == "int":
        f["partition"] = np.zeros(n, np.int32)
        f["offset"] = np.arange(n, dtype=np.int64) + 10
    elif coords == "float-nan":
        f["partition"] = [math.nan if i % 3 == 0 else 1.0 for i in range(n)]
        f["offset"] = [math.nan if i % 4 == 0 else float(i) for i in range(n)]
    elif coords == "object":
        f["partition"] = pd.Series([None if i % 2 else 2 for i in range(n)], dtype=object)
        f["offset"] = pd.Series([None if i % 5 == 0 else i for i in range(n)], dtype=object)
    if draw(st.booleans()):
        f["payload"] = pd.Series([None if i % 6 == 0 else bytes([i]) for i in range(n)],
                                 dtype=object)
    return f


@settings(max_examples=60, deadline=None)
@given(f=frames(), payload=st.booleans(),
       needed=st.sampled_from([{"value"}, {"a1"}, {"value", "a1"}, {"tags"}, set()]))
def test_columns_equal_rows(f: pd.DataFrame, payload: bool, needed: set[str]) -> None:
    rows = sorted_rows(f)
    attributes = ("value", "a1", "tags")
    got = events_of(rows, attributes, needed)
    want = _events_by_row(rows, attributes, needed)
    assert got == want
    assert all(type(v) is type(w) for e, x in zip(got, want, strict=True)
               for v, w in zip(e.attrs.values(), x.attrs.values(), strict=True))
    a, b = _store(payload), _store(payload)
    remember(a, rows, got)
    _add_by_row(b, rows, want)
    assert a.info == b.info and a.order == b.order and a.added == b.added
    assert _same_changes(a, b)


def _same_changes(a: MemberStore, b: MemberStore) -> bool:
    (ha, sa, ra), (hb, sb, rb) = a.changes(), b.changes()
    return ha == hb and ra == rb and sa.keys() == sb.keys() and all(
        all(np.array_equal(sa[k][c], sb[k][c]) if isinstance(sa[k][c], np.ndarray)
            else sa[k][c] == sb[k][c] for c in sa[k]) for k in sa)


def _result_frame_by_row(results: list[Any], store: MemberStore) -> pd.DataFrame:
    """The result frame built row by row from each result's members (the reference)."""
    from pipeline.runtime.frames import member_column, output_frame

    rows = []
    for r in results:
        got = [store.info[k].get(m.seq) for k, m in enumerate(r.members)]
        if store.payload and any(g is None or g[2] is None for g in got):
            continue
        row = {"kind": "result", "instance": "7", "id": r.id, "result_time": r.result_time,
               "emit_time": 5,
               "payload": b"".join(g[2] for g in got) if store.payload else None}
        for k, m in enumerate(r.members):
            partition, offset = store.coordinates(k, m.seq)
            row.update({member_column(k, "seq"): m.seq, member_column(k, "time"): m.event_time,
                        member_column(k, "partition"): partition,
                        member_column(k, "offset"): offset})
        rows.append(row)
    if not rows:
        return output_frame([], len(STREAMS)).iloc[0:0]
    frame = output_frame(rows, len(STREAMS))
    for k in range(len(STREAMS)):
        for f, dtype in (("seq", np.int64), ("time", np.int64), ("partition", np.int32),
                         ("offset", np.int64)):
            frame[member_column(k, f)] = frame[member_column(k, f)].astype(dtype)
    return frame


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.integers(0, (1 << 45)) for _ in STREAMS],
                          *[st.integers(-10**6, 10**9) for _ in STREAMS]), max_size=30),
       st.booleans(), st.booleans(), st.integers(0, 3))
def test_result_frame_equals_row_by_row(rows: list[tuple[int, ...]], offset_ids: bool,
                                        payload: bool, forget: int) -> None:
    """Same frame, dtypes included, with coordinates read off ids or stored, with and
    without payload, with some members' payload unknown (those results are left out)."""
    from pipeline.operators.events import results_from_arrays
    from pipeline.runtime.frames import result_frame

    first: list[dict[int, int]] = [{} for _ in STREAMS]  # a tuple has one event time
    rows = [(*r[:3], *[first[k].setdefault(r[k], r[3 + k]) for k in range(3)]) for r in rows]
    results = results_from_arrays(list(STREAMS), [r[:3] for r in rows],
                                  [r[3:] for r in rows]) if rows else []
    store = MemberStore(STREAMS, (10**12,) * 3, offset_ids=offset_ids, payload=payload)
    for i, r in enumerate(results):
        for k, m in enumerate(r.members):
            if i % 4 != forget or k != 1:  # some members never stored
                store.add(k, m.seq, m.event_time, i % 3, i, f"p{i}".encode())
    got = result_frame(ResultRows.of(STREAMS, [([r[:3] for r in rows], [r[3:] for r in rows])]),
                       "7", 5, store)
    pd.testing.assert_frame_equal(got.reset_index(drop=True),
                                  _result_frame_by_row(results, store).reset_index(drop=True))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=6), st.integers(1, 12))
def test_bounded_frames_keep_every_row_in_order(sizes: list[int], max_rows: int) -> None:
    """Output frames cut to at most ``max_rows`` rows: the same rows in the same order."""
    from pipeline.runtime.frames import bounded

    start = np.cumsum([0, *sizes])
    frames = [pd.DataFrame({"id": np.arange(a, a + n)}) for a, n in zip(start, sizes,
                                                                       strict=False)]
    out = bounded(frames, max_rows)
    assert all(0 < len(f) <= max_rows for f in out)
    got = np.concatenate([f["id"].to_numpy() for f in out]) if out else np.empty(0)
    assert got.tolist() == list(range(sum(sizes)))


def _greedy_cuts(sizes: list[int], max_rows: int, max_bytes: int) -> list[tuple[int, int]]:
    """The cut points, one row at a time: a frame takes the next row while it stays within
    both limits (an empty frame always takes it)."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(sizes):
        stop, total = start, 0
        while stop < len(sizes) and stop - start < max_rows and (
                stop == start or total + sizes[stop] <= max_bytes):
            total += sizes[stop]
            stop += 1
        out.append((start, stop))
        start = stop
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=40), st.integers(1, 9), st.integers(1, 700))
def test_cuts_equal_row_by_row_greedy_cuts(sizes: list[int], max_rows: int,
                                           max_bytes: int) -> None:
    from pipeline.runtime.frames import cuts

    assert cuts(np.array(sizes, np.int64), max_rows, max_bytes) == \
        _greedy_cuts(sizes, max_rows, max_bytes)


_TEXT = st.one_of(st.none(), st.text(max_size=30))
_BYTES = st.one_of(st.none(), st.binary(max_size=60))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_TEXT, _BYTES, st.integers(-5, 5)), max_size=30),
       st.integers(1, 12), st.integers(1, 800))
def test_bounded_frames_stay_within_rows_and_arrow_bytes(
        rows: list[tuple[str | None, bytes | None, int]], max_rows: int, max_bytes: int
) -> None:
    """Every row kept, in order; each frame within ``max_rows`` rows and, unless it is a
    single row, ``max_bytes`` bytes — counted by :func:`row_bytes`, which is at least what
    Arrow makes of the frame (non-ASCII text counted in UTF-8 bytes)."""
    import pyarrow as pa

    from pipeline.runtime.frames import bounded, row_bytes

    frame = pd.DataFrame({"text": [r[0] for r in rows], "blob": [r[1] for r in rows],
                          "n": [r[2] for r in rows]})
    schema = pa.schema([("text", pa.string()), ("blob", pa.binary()), ("n", pa.int64())])
    out = bounded([frame, frame.iloc[0:0]], max_rows, max_bytes)
    assert pd.concat([frame.iloc[0:0], *out])["n"].tolist() == frame["n"].tolist()
    assert [(f["text"].tolist(), f["blob"].tolist()) for f in out] == [
        (frame["text"].iloc[a:b].tolist(), frame["blob"].iloc[a:b].tolist())
        for a, b in itertools.pairwise(np.cumsum([0, *[len(f) for f in out]]))]
    for f in out:
        size = int(row_bytes(f).sum())
        assert 0 < len(f) <= max_rows and (size <= max_bytes or len(f) == 1)
        arrow = pa.RecordBatch.from_pandas(f, schema=schema, preserve_index=False)
        assert arrow.nbytes <= size


def test_result_frames_are_cut_by_bytes_when_payloads_are_large() -> None:
    """10 results with 1 MB payloads each under a 3 MB bound: frames of 2 rows."""
    from pipeline.operators.events import results_from_arrays
    from pipeline.runtime.frames import bounded, result_frame, row_bytes

    results = results_from_arrays(list(STREAMS), [(i, i, i) for i in range(10)],
                                  [(5, 5, 5)] * 10)
    store = MemberStore(STREAMS, (10**12,) * 3, payload=True)
    for i, r in enumerate(results):
        for k, m in enumerate(r.members):
            store.add(k, m.seq, m.event_time, 0, i, bytes(350_000))
    out = bounded([result_frame(ResultRows.of(STREAMS, [([(i, i, i) for i in range(10)],
                                                          [(5, 5, 5)] * 10)]), "0", 1, store)],
                  10_000, 3_000_000)
    assert [len(f) for f in out] == [2] * 5
    assert all(1_050_000 * 2 <= row_bytes(f).sum() <= 3_000_000 for f in out)
