"""The probe of one tuple (GrubJoin §1.3 MJoin nested loops over the join order R_i;
§IV harvested logical basic windows; §V σ samples; the ``[join] index`` lookup).

:func:`probe_tuple` matches one in-order tuple against the other windows of a
:class:`~pipeline.operators.join.state.JoinState`: one vectorized step per position of
its join order, each a whole basic window against all partial results at once (the
steps against one basic window are :mod:`~pipeline.operators.join.probe_steps`). The
run probe path (:mod:`~pipeline.operators.join.run`) gives the same outputs for many
tuples at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.basicwindow import BasicWindow, Rows
from pipeline.operators.join.config import JoinOutput, Outcome
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.predicates import value_bounds
from pipeline.operators.join.probe_steps import (
    Found,
    covered,
    extend,
    index_hits,
    inverted_hits,
    match_partials,
    rows_selected,
    scan_hits,
)
from pipeline.operators.join.state import SAMPLE_EVERY, JoinState, Selection

I64 = NDArray[np.int64]
Band = tuple[float, float]
#: the index query of an ``overlap`` probe: its basic windows' inverted indexes
INVERTED = "inverted"
Query = Band | str


def probe_tuple(state: JoinState, stream: int, ts: int, seq: int, enc: Any,
                plan: ProbePlan | None = None) -> JoinOutput:
    """Match a tuple against the other windows along its join order R_i (GrubJoin
    §1.3): a nested-loop join, one vectorized step per position of the order."""
    pred: Any = state.config.predicate  # its store/side types pair up per predicate kind
    left = pred.left_one(enc)
    cost = _count_probe(state, stream, ts, left, plan)
    order = state.plan_order(stream, plan)
    if plan is not None and plan.windows is not None and plan.windows[0] == ():
        # harvesting scans no window of the first partner: nothing can match (fast path)
        return _no_results(state, stream, ts, order, plan, [0], 0, [1], 0)
    band = _index_query(pred, left) if state.use_index else None
    # the partial results so far: one column per bound stream (the probing tuple's
    # predicate side stays one row)
    p_ts: dict[int, I64] = {stream: np.array([ts], np.int64)}
    p_seq: dict[int, I64] = {stream: np.array([seq], np.int64)}
    p_side: dict[int, Any] = {stream: left}
    k, checks = 1, 0
    scanned: list[int] = []
    entering: list[int] = []
    last_pos = len(order) - 1
    for pos, l in enumerate(order):
        entering.append(k)
        partners = [side for s, side in p_side.items() if s != stream]
        found, step_scanned, step_checks = _scan_position(
            state, l, ts, left, partners, k, state.selection(l, plan, pos), band,
            pos == last_pos)
        cost += step_scanned
        checks += step_checks
        scanned.append(step_scanned)
        if found is None:
            return _no_results(state, stream, ts, order, plan, scanned, cost, entering, checks)
        k = extend(pred, stream, l, found, p_ts, p_seq, p_side, pos == last_pos)
    # one probe's results in lexicographic order of their members' (ts, seq) along
    # the order — the order the run probe path produces too
    rank = np.lexsort([key for l in reversed(order) for key in (p_seq[l], p_ts[l])])
    seqs = np.stack([p_seq[s][rank] for s in range(state.config.m)], axis=1)
    tss = np.stack([p_ts[s][rank] for s in range(state.config.m)], axis=1)
    fb = _feedback(state, stream, ts, order, plan, p_ts, scanned, k, cost, entering)
    return JoinOutput(Outcome.PROBED, seqs, tss, cost, fb, checks)


def _count_probe(state: JoinState, stream: int, ts: int, left: Any,
                 plan: ProbePlan | None) -> int:
    """Without a plan order, every SAMPLE_EVERY-th probe of a direction first samples
    σ_{i,l} for the default order (GrubJoin §V); returns the comparisons spent."""
    if plan is not None and plan.order is not None:
        return 0
    if state.next_probes(stream, 1) % SAMPLE_EVERY == 0:
        return _sample_selectivity(state, stream, ts, left)
    return 0


def _sample_selectivity(state: JoinState, stream: int, ts: int, left: Any) -> int:
    """Match the probing tuple alone against every other window; returns comparisons."""
    pred: Any = state.config.predicate
    inverted = state.use_index and pred.kind == "overlap"
    cost = 0
    for l in state.others[stream]:
        for bw, rows in state.windows[l].in_range(ts - state.config.windows[l]):
            n = len(bw) if rows is None else int(rows.size)
            if inverted:  # the same count, by the basic window's inverted index
                found = int(inverted_hits(pred, left, bw, rows, False)[0].size)
            else:
                found = int(np.count_nonzero(pred.match(left, bw.feats, rows)))
            state.add_sample(stream, l, found, n)
            cost += n
    return cost


def _index_query(pred: Any, left: Any) -> Query:
    """What the per-basic-window indexes are searched with: the value range of the
    sorted indexes (:func:`~pipeline.operators.join.predicates.value_bounds` of the
    probing value), or the inverted indexes of an ``overlap`` join (the probing set)."""
    if pred.kind == "overlap":
        return INVERTED
    lo, hi = value_bounds(pred, np.array([float(left[0, 0])]))
    return float(lo[0]), float(hi[0])


def _parts(state: JoinState, l: int, ts: int, selection: Selection | None, n_l: int,
           indexed: bool) -> tuple[Sequence[tuple[BasicWindow, Rows]],
                                   NDArray[np.bool_] | None]:
    """The (stored basic window, rows) pairs of W_l a probe at ``ts`` scans (ts ∈
    [ts − W_l, ts]), and the chosen-logical-window table their rows must still be
    filtered by (None = take them all)."""
    win = state.windows[l]
    lo = ts - state.config.windows[l]
    if selection is None:
        if indexed:
            return win.in_range(lo), None
        return win.merged_in_range(lo), None
    if not indexed:  # harvesting: exactly the rows of the chosen logical windows
        return win.harvested_parts(ts, lo, selection[2], n_l), None
    # the basic windows the selection touches; rows are filtered by the caller
    return win.logical_parts(ts, lo, selection[1], n_l), selection[0]


def _scan_position(
    state: JoinState, l: int, ts: int, left: Any, partners: list[Any], k: int,
    selection: Selection | None, band: Query | None, last: bool,
) -> tuple[Found | None, int, int]:
    """One NLJ step against W_l: the rows matching the probing tuple (``left``) and,
    for each, the k partial results (``partners`` = their bound streams' sides) it
    also matches. Returns (the extension, or None when nothing matched; tuple
    comparisons accounted, the GrubJoin cost; pair evaluations actually run)."""
    cfg = state.config
    pred: Any = cfg.predicate
    n_l = cfg.n_basic(l)
    parts, sel = _parts(state, l, ts, selection, n_l, band is not None)
    newest = state.windows[l].bids[-1] if state.windows[l].bids else None
    chunks: list[tuple[I64, BasicWindow, I64]] = []
    scanned = checks = 0
    for bw, part_rows in parts:
        got, step_scanned, step_checks = _scan_basic_window(
            pred, bw, part_rows, ts, left, partners, k, sel, band, cfg.basic_window_ms, n_l,
            bw.bid != newest)
        scanned += step_scanned
        checks += step_checks
        if got is not None:
            chunks.append((got[0], bw, got[1]))
    if not chunks:
        return None, scanned, checks
    side = None if last else pred.concat([pred.left_from_store(bw.feats, rr)
                                          for _, bw, rr in chunks])
    found = (np.concatenate([pi for pi, _, _ in chunks]),
             np.concatenate([bw.ts.view()[rr] for _, bw, rr in chunks]),
             np.concatenate([bw.seq.view()[rr] for _, bw, rr in chunks]), side)
    return found, scanned, checks


def _scan_basic_window(
    pred: Any, bw: BasicWindow, rows: Rows, ts: int, left: Any, partners: list[Any], k: int,
    sel: NDArray[np.bool_] | None, band: Query | None, b: int, n_l: int, sealed: bool,
) -> tuple[tuple[I64, I64] | None, int, int]:
    """One stored basic window of an NLJ step: (partial result, row) of every extension
    it adds (None: none), tuple comparisons accounted, pair evaluations run."""
    if isinstance(band, tuple) and bw.misses(band[0], band[1]):
        return None, 1, 0  # one index lookup, nothing in range
    if sel is not None and not covered(sel, ts, bw.min_ts, bw.max_ts, b, n_l):
        rows = rows_selected(sel, ts, bw, rows, b, n_l)
        if rows.size == 0:
            return None, 0, 0
    if isinstance(band, tuple):
        hit_rows, checks = index_hits(pred, left, bw, rows, band, sealed=sealed)
        scanned = 1 + k * int(hit_rows.size)
    elif band is not None:  # one lookup, then k per row found (as a sorted index)
        hit_rows, checks = inverted_hits(pred, left, bw, rows, sealed=sealed)
        scanned = 1 + k * int(hit_rows.size)
    else:
        hit_rows, checks = scan_hits(pred, left, bw, rows)
        scanned = k * checks  # the NLJ's tuple comparisons (GrubJoin cost)
    if hit_rows.size == 0:
        return None, scanned, checks
    if not partners:
        return (np.zeros(hit_rows.size, dtype=np.int64), hit_rows), scanned, checks
    pi, qi = match_partials(pred, partners, bw, hit_rows)
    checks += k * int(hit_rows.size) * len(partners)
    if pi.size == 0:
        return None, scanned, checks
    return (pi, hit_rows[qi]), scanned, checks


def _no_results(state: JoinState, stream: int, ts: int, order: tuple[int, ...],
                plan: ProbePlan | None, scanned: list[int], cost: int, entering: list[int],
                checks: int) -> JoinOutput:
    """The output of a probe that ran out of partial results (no result)."""
    empty = np.zeros((0, state.config.m), np.int64)
    fb = _feedback(state, stream, ts, order, plan, {}, scanned, 0, cost, entering)
    return JoinOutput(Outcome.PROBED, empty, empty, cost, fb, checks)


def _feedback(state: JoinState, stream: int, ts: int, order: Sequence[int],
              plan: ProbePlan | None, p_ts: dict[int, I64], scanned: list[int], results: int,
              cost: int, entering: Sequence[int] = ()) -> ProbeFeedback | None:
    """The probe's :class:`ProbeFeedback` if its plan asked for it (GrubJoin §1.5)."""
    if plan is None or not plan.feedback:
        return None
    matches = state.match_counts(ts, order, p_ts if results else {})
    full_scanned = tuple(scanned) + (0,) * (len(order) - len(scanned))
    return ProbeFeedback(
        stream, ts, tuple(order), matches, full_scanned, results, cost, tuple(entering)
    )
