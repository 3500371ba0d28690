"""StreamWindow's stored basic windows against brute-force definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.join.windows import StreamWindow, logical_spans


def _window(ts_list: list[int], b: int) -> StreamWindow:
    pred = build_predicate("band", attribute="value", epsilon=1.0)
    win = StreamWindow(10 * b, b, pred)
    for seq, t in enumerate(ts_list):
        win.insert(t, seq, pred.encode({"value": float(seq)}))
    return win


#: a window filled in any ts order, and a probe: its logical windows (n of b ms), the
#: chosen ones (some out of range), its ts past the newest tuple, and its window span
PROBES = {
    "ts_list": st.lists(st.integers(0, 400), min_size=1, max_size=60),
    "b": st.sampled_from([7, 10, 25]),
    "n": st.integers(1, 12),
    "chosen": st.lists(st.integers(-1, 13), max_size=5),
    "probe_at": st.integers(0, 200),
    "span": st.integers(0, 400),
}


@settings(max_examples=80, deadline=None)
@given(**PROBES)
def test_logical_parts_hold_exactly_the_chosen_logical_windows(
    ts_list: list[int], b: int, n: int, chosen: list[int], probe_at: int, span: int
) -> None:
    win = _window(ts_list, b)
    ts = max(ts_list) + probe_at
    lo = ts - span
    picked = set()
    for bw, rows in win.logical_parts(ts, lo, tuple(chosen), n):
        idx = np.arange(len(bw)) if rows is None else rows
        t = bw.ts.view()[idx]
        assert (t >= lo).all()
        lbw = np.minimum((ts - t) // b, n - 1)
        picked |= {int(q) for q, v in zip(bw.seq.view()[idx], lbw, strict=True)
                   if int(v) in chosen}
    want = {seq for seq, t in enumerate(ts_list)
            if t >= lo and min((ts - t) // b, n - 1) in chosen}
    assert picked == want


@settings(max_examples=80, deadline=None)
@given(
    ts_list=st.lists(st.integers(0, 400), min_size=0, max_size=60),
    b=st.sampled_from([7, 10, 25]),
    expire_at=st.integers(-10, 420),
    lo=st.integers(-10, 420),
)
def test_count_from_and_size_equal_brute_force_after_expiry_and_restore(
    ts_list: list[int], b: int, expire_at: int, lo: int
) -> None:
    win = _window(ts_list, b)
    win.expire(expire_at)
    kept = [t for t in ts_list
            if max((u for u in ts_list if u // b == t // b), default=t) >= expire_at]
    assert win.size() == len(kept)
    assert win.count_from(lo) == sum(t >= lo for t in kept)
    again = StreamWindow(win.window_ms, b, win.predicate)
    again.restore(win.snapshot())
    assert (again.size(), again.count_from(lo)) == (len(kept), sum(t >= lo for t in kept))


@settings(max_examples=80, deadline=None)
@given(**PROBES)
def test_harvested_parts_are_exactly_the_chosen_logical_windows_in_order(
    ts_list: list[int], b: int, n: int, chosen: list[int], probe_at: int, span: int
) -> None:
    win = _window(ts_list, b)  # out-of-order inserts: late rows go to their ts position
    for bid in win.bids:
        tsv = win.bws[bid].ts.view()
        assert win.bws[bid].ordered and (tsv[1:] >= tsv[:-1]).all()
    ts = max(ts_list) + probe_at
    lo = ts - span
    got: list[int] = []
    for bw, rows in win.harvested_parts(ts, lo, logical_spans(tuple(chosen), n), n):
        got += bw.seq.view()[slice(None) if rows is None else rows].tolist()
    # brute force, in (basic window, ts, insertion) order
    want = sorted((t // b, t, seq) for seq, t in enumerate(ts_list)
                  if t >= lo and min((ts - t) // b, n - 1) in chosen)
    assert got == [seq for _, _, seq in want]
