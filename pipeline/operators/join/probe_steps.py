"""The per-tuple probe's steps against one stored basic window (GrubJoin §1.3 nested
loops, §IV harvested logical windows; the ``[join] index`` lookup): which rows are
selected, which match the probing tuple, which of those match the partial results, and
the partial results' extension. Used by the probe of one tuple
(:mod:`~pipeline.operators.join.tuple_probe`); the run probe path has its own
(:mod:`~pipeline.operators.join.run_probe`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.basicwindow import BasicWindow, Rows
from pipeline.operators.join.windows import row_count

I64 = NDArray[np.int64]
#: one NLJ step's extensions: (partial result each grows, ts, seq, predicate side of the
#: new member — None at the last position)
Found = tuple[I64, I64, I64, Any]


def covered(sel: NDArray[np.bool_], ts: int, min_ts: int, max_ts: int, b: int,
             n: int) -> bool:
    """Whether every logical basic window a stored one spans (ts − t for t in
    [min_ts, max_ts]) is selected, so its rows need no per-row filter."""
    first = min((ts - max_ts) // b, n - 1)
    last = min((ts - min_ts) // b, n - 1)
    return first >= 0 and bool(sel[first : last + 1].all())


def rows_selected(sel: NDArray[np.bool_], ts: int, bw: BasicWindow, rows: Rows, b: int,
                   n: int) -> I64:
    """The rows (None = all) of a stored basic window whose logical basic window
    min((ts − t) // b, n − 1) is chosen in ``sel`` (GrubJoin §IV harvesting)."""
    assert not isinstance(rows, slice)  # slices only come from harvested_parts
    all_ts = bw.ts.view() if rows is None else bw.ts.view()[rows]
    lbw = np.minimum((ts - all_ts) // b, n - 1)
    base = np.arange(len(bw)) if rows is None else rows
    return base[sel[lbw]]


def index_hits(pred: Any, left: Any, bw: BasicWindow, rows: Rows,
                band: tuple[float, float], sealed: bool) -> tuple[I64, int]:
    """Rows of ``bw`` (among ``rows``; None = all) matching the probing tuple: a sorted-
    index lookup of ``band``, then the exact predicate on the candidates. Returns (rows,
    candidates tested)."""
    cand = bw.range_rows(band[0], band[1], sealed=sealed)
    assert not isinstance(rows, slice)
    if rows is not None and cand.size:
        allowed = np.zeros(len(bw), dtype=bool)
        allowed[rows] = True
        cand = cand[allowed[cand]]
    return cand[pred.match(left, bw.feats, cand)[0]], int(cand.size)


def inverted_hits(pred: Any, left: Any, bw: BasicWindow, rows: Rows,
                  sealed: bool) -> tuple[I64, int]:
    """Rows of ``bw`` (among ``rows``; None = all) matching the probing tuple by the
    basic window's inverted index (``overlap``: the overlaps are exact, no re-check).
    Returns (rows, postings read)."""
    overlaps, read = bw.overlaps(left, sealed=sealed)
    mask = pred.passes(overlaps)
    assert not isinstance(rows, slice)
    if rows is None:
        return np.flatnonzero(mask), read
    return rows[mask[rows]], read


def scan_hits(pred: Any, left: Any, bw: BasicWindow, rows: Rows) -> tuple[I64, int]:
    """Rows of ``bw`` (among ``rows``) matching the probing tuple, by one 1×n predicate
    test: every member must match it, so only these rows meet the k partial results.
    Returns (rows, n tested)."""
    n = row_count(bw, rows)
    cols = np.flatnonzero(pred.match(left, bw.feats, rows)[0])
    if rows is None:
        return cols, n
    if isinstance(rows, slice):
        return cols + rows.start, n
    return rows[cols], n


def match_partials(pred: Any, partners: list[Any], bw: BasicWindow,
                    rows: I64) -> tuple[I64, I64]:
    """(partial result, position in ``rows``) pairs where the stored row matches every
    bound member but the probing tuple (k × |rows| per partner, vectorized)."""
    mask = pred.match(partners[0], bw.feats, rows)
    for side in partners[1:]:
        mask = mask & pred.match(side, bw.feats, rows)
    pi, qi = np.nonzero(mask)
    return pi, qi


def extend(pred: Any, stream: int, l: int, found: Found, p_ts: dict[int, I64],
            p_seq: dict[int, I64], p_side: dict[int, Any], last: bool) -> int:
    """Replace the partial results by their extensions with stream ``l`` (``found``:
    which partial result each extension grows, and l's ts/seq/side); returns their count."""
    pick, new_ts, new_seq, new_side = found
    for s in list(p_side):
        p_ts[s] = p_ts[s][pick]
        p_seq[s] = p_seq[s][pick]
        if not last and s != stream:  # the probing tuple's side stays 1 row
            p_side[s] = pred.take(p_side[s], pick)
    p_ts[l] = new_ts
    p_seq[l] = new_seq
    if not last:
        p_side[l] = new_side
    return int(pick.size)
