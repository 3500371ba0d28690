"""One join order's probes of a run, vectorized across the probing tuples (ours).

:func:`probe_group` runs MJoin's nested-loop join (GrubJoin §1.3) for every probing
tuple of one direction and join order R_i at once: each position of R_i is one NumPy
step over a *block* of probes — a probes × rows comparison against the stored window
(or, with ``[join] index``, one search of the stream window's sorted value index across
all its basic windows for the whole block, :mod:`~pipeline.operators.join.valueindex`) plus
the run's own earlier tuples — then the partial results are extended pairwise
(:mod:`~pipeline.operators.join.run_match`). Ji et al. Alg. 2 fixes what each probe may
see: the stored rows with ts ≥ ts_i − W_l and the run's rows inserted before it
(:class:`Side`); GrubJoin's harvest plans restrict that to the chosen logical basic
windows, per probe (tables of :class:`Probes`). Nothing is compared pair by pair in
Python.

Per probe and position the step reports what the per-tuple probe
(:mod:`~pipeline.operators.join.tuple_probe`) charges (GrubJoin's cost unit: partial
results entering × window rows scanned) and the partial results entering, so the
harvesting feedback and cost accounting do not depend on how the input is cut into
runs. The indexed step charges its own cost (``window_cost`` per lookup + 1 per
candidate + partial results × rows found), which the indexed cost model is fitted to
(costmodel.py). Results of one probe come out in lexicographic order of their members'
(ts, seq) along R_i — the same order however the input is cut into runs (the per-tuple
probe sorts to it too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.predicates import value_bounds
from pipeline.operators.join.run_match import (
    BLOCK_ELEMS,
    block_hits,
    expand,
    order_hits,
    pair_match,
)
from pipeline.operators.join.run_side import (
    Geometry,
    Probes,
    Side,
    logical,
    run_rows_seen,
    stored_counts,
    union_ranges,
    visible_stored,
)

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B8 = NDArray[np.bool_]
#: probes per block on the indexed path (no probes × rows matrix there)
INDEX_BLOCK = 1024
#: most probes per block of the scan path
MAX_BLOCK = 4096
__all__ = ["GroupOut", "index_position", "probe_group", "sample_position", "scan_position"]


@dataclass(slots=True)
class GroupOut:
    """Per probe: partial results entering each position (0 = not reached) and the cost
    charged there; the results (probe index, then one (ts, seq) column per stream of
    the order); pair evaluations a per-tuple probe runs (``checks``: probing tuple ×
    rows it sees, partial results × rows found) and those this path ran (``evaluated``:
    whole blocks, so also rows outside a probe's window)."""

    entering: I64
    scanned: I64
    res_probe: I64
    res_ts: list[I64]
    res_seq: list[I64]
    checks: int = 0
    evaluated: int = 0


# ----------------------------------------------------------------------------- one position
@dataclass(slots=True)
class Hits:
    """Rows matching the probes at one position: probe (block-local), ts, seq, features —
    sorted by (probe, ts, seq) — per probe the cost units of finding them, and pair
    evaluations run (``checks``) and needed tuple by tuple (``needed``)."""

    probe: I64
    ts: I64
    seq: I64
    feats: F64
    unit_cost: I64
    checks: int
    needed: int


def _in_run_hits(pred: Any, side: Side, pos: I64, ts: I64, feats: F64, lo: I64,
                 sel: B8 | None, geo: Geometry) -> tuple[I64, I64, I64, int]:
    """Hits among the run's rows inserted before each probe (visibility: earlier
    position, ts ≥ lo, chosen window); (probe, row index into ``side.q_*``, rows seen
    per probe, pairs evaluated)."""
    none = np.zeros(0, np.int64)
    if side.q_pos.shape[0] == 0:
        return none, none, np.zeros(pos.shape[0], np.int64), 0
    cand = np.flatnonzero((side.q_pos < pos[-1]) & (side.q_ts >= lo.min()))
    if cand.shape[0] == 0:
        return none, none, np.zeros(pos.shape[0], np.int64), 0
    q_pos, q_ts = side.q_pos[cand], side.q_ts[cand]
    seen = (q_pos[None, :] < pos[:, None]) & (q_ts[None, :] >= lo[:, None])
    if sel is not None:
        v = np.maximum(logical(ts[:, None], q_ts[None, :], geo), 0)  # later rows: unseen
        seen &= np.take_along_axis(sel, v, axis=1)
    counts = seen.sum(axis=1).astype(np.int64)
    pi, qi = block_hits(pred, feats, side.q_feats[cand])
    keep = seen[pi, qi]
    return pi[keep], cand[qi[keep]], counts, int(pos.shape[0] * cand.shape[0])


def scan_position(pred: Any, side: Side, pos: I64, ts: I64, feats: F64,
                  sel: B8 | None, geo: Geometry) -> Hits:
    """Nested-loop step (unindexed): every probe against the stored rows its block may
    see (one probes × rows test per disjoint ts range) and the run's earlier rows."""
    lo = ts - geo.window
    parts_p: list[I64] = []
    parts_r: list[I64] = []
    checks = 0
    for t_a, t_b in union_ranges(ts, lo, sel, geo):
        ra = int(side.ts.searchsorted(t_a, "left"))
        rb = int(side.ts.searchsorted(t_b, "right"))
        if rb <= ra:
            continue
        pi, ri = block_hits(pred, feats, side.feats[ra:rb])
        checks += pos.shape[0] * (rb - ra)
        parts_p.append(pi)
        parts_r.append(ri + ra)
    pi = np.concatenate(parts_p) if parts_p else np.zeros(0, np.int64)
    ri = np.concatenate(parts_r) if parts_r else np.zeros(0, np.int64)
    r_ts = side.ts[ri]
    keep = r_ts >= lo[pi]
    if sel is not None:
        keep &= sel[pi, logical(ts[pi], r_ts, geo)]
    pi, ri = pi[keep], ri[keep]
    seen = stored_counts(side.ts, ts, lo, sel, geo)
    qp, qi, q_seen, q_checks = _in_run_hits(pred, side, pos, ts, feats, lo, sel, geo)
    return _merge_hits(side, pi, ri, qp, qi, seen + q_seen, checks + q_checks,
                       int(seen.sum() + q_seen.sum()))


def index_position(pred: Any, side: Side, pos: I64, ts: I64, feats: F64,
                   sel: B8 | None, geo: Geometry, window_cost: int) -> Hits:
    """Indexed step (band/equi): every probe's value range searched at once in the
    stream window's sorted index (:class:`~pipeline.operators.join.valueindex.ValueIndex`,
    across all its basic windows) and in the run's rows sorted by value; candidates
    filtered by visibility (ts ≥ lo, earlier in the run, chosen logical windows) and
    re-checked exactly. Charges ``window_cost`` per probe (the lookup) plus one per
    candidate examined."""
    lo = ts - geo.window
    v_lo, v_hi = value_bounds(pred, feats[:, 0])
    p_n = pos.shape[0]
    assert side.vindex is not None
    pi, c_val, c_ts, c_seq = side.vindex.candidates(v_lo, v_hi)
    examined = np.bincount(pi, minlength=p_n)
    keep = c_ts >= lo[pi]
    if sel is not None:
        keep &= sel[pi, logical(ts[pi], c_ts, geo)]
    pi, c_val, c_ts, c_seq = pi[keep], c_val[keep], c_ts[keep], c_seq[keep]
    parts = [(pi, c_val, c_ts, c_seq)]
    if side.q_sorted is not None and side.q_sorted.shape[0]:
        order = side.q_sorted
        q_vals = side.q_feats[order, 0]
        a = q_vals.searchsorted(v_lo, "left")
        c = q_vals.searchsorted(v_hi, "right")
        cnt = c - a
        tot = int(cnt.sum())
        qp = np.repeat(np.arange(p_n), cnt)
        qi = order[np.repeat(a - np.cumsum(cnt) + cnt, cnt) + np.arange(tot)]
        examined += cnt
        q_ts = side.q_ts[qi]
        ok = (side.q_pos[qi] < pos[qp]) & (q_ts >= lo[qp])
        if sel is not None:
            ok &= sel[qp, np.maximum(logical(ts[qp], q_ts, geo), 0)]
        qp, qi = qp[ok], qi[ok]
        parts.append((qp, side.q_feats[qi, 0], side.q_ts[qi], side.q_seq[qi]))
    probe = np.concatenate([x[0] for x in parts])
    vals = np.concatenate([x[1] for x in parts])
    h_ts = np.concatenate([x[2] for x in parts])
    h_seq = np.concatenate([x[3] for x in parts])
    tested = int(probe.shape[0])
    match = pair_match(pred, feats[probe], vals[:, None])
    probe, vals, h_ts, h_seq = probe[match], vals[match], h_ts[match], h_seq[match]
    order_ = order_hits(probe, h_ts, h_seq)
    return Hits(probe[order_], h_ts[order_], h_seq[order_], vals[order_, None],
                window_cost + examined, tested, tested)


def sample_position(pred: Any, side: Side, pos: I64, ts: I64, feats: F64, geo: Geometry,
                    window_cost: int | None) -> tuple[I64, I64, I64]:
    """A σ sample (GrubJoin §V): per probe, the rows of its whole window it matches, the
    rows it sees and what finding them cost — by the same search the probe itself uses
    (``window_cost`` set: the indexed one)."""
    if window_cost is None:
        hits = scan_position(pred, side, pos, ts, feats, None, geo)
        return np.bincount(hits.probe, minlength=pos.shape[0]), hits.unit_cost, hits.unit_cost
    hits = index_position(pred, side, pos, ts, feats, None, geo, window_cost)
    lo = ts - geo.window
    return (np.bincount(hits.probe, minlength=pos.shape[0]),
            visible_stored(side, lo) + run_rows_seen(side, pos, lo), hits.unit_cost)


def _merge_hits(side: Side, pi: I64, ri: I64, qp: I64, qi: I64, unit: I64,
                checks: int, needed: int) -> Hits:
    """Stored and in-run hits as one :class:`Hits`, sorted by (probe, ts, seq)."""
    probe = np.concatenate([pi, qp])
    h_ts = np.concatenate([side.ts[ri], side.q_ts[qi]])
    h_seq = np.concatenate([side.seq[ri], side.q_seq[qi]])
    feats = np.concatenate([side.feats[ri], side.q_feats[qi]], axis=0)
    order = order_hits(probe, h_ts, h_seq)
    return Hits(probe[order], h_ts[order], h_seq[order], feats[order], unit, checks, needed)


# ----------------------------------------------------------------------------- the order
def _widest_scan(sides: tuple[Side, ...], sels: list[B8 | None],
                 geos: tuple[Geometry, ...]) -> int:
    """Rows a probe of the group compares with at its widest position: the stored rows
    times the share of logical basic windows the group's plans choose there (a harvest
    scans only those; the whole window without a selection), plus the run's rows. Sizing
    blocks by the whole window would cut a harvest's blocks as short as the full join's
    and pay the per-block work once per few hundred comparisons."""
    widest = 1
    for side, sel, geo in zip(sides, sels, geos, strict=True):
        rows = side.ts.shape[0]
        if sel is not None and sel.shape[0]:
            chosen = int(np.count_nonzero(sel.any(axis=0)))
            rows = -(-rows * min(geo.n, chosen + 1) // geo.n)  # + 1: a block spans time
        widest = max(widest, rows + side.q_pos.shape[0])
    return widest


def probe_group(pred: Any, streams: tuple[int, ...], geos: tuple[Geometry, ...],
                sides: tuple[Side, ...], probes: Probes, indexed: bool,
                window_cost: int = 1) -> GroupOut:
    """All positions of the order ``streams`` (R_i) for every probe of the group, block
    by block (block size bounded so a probes × rows test fits :data:`BLOCK_ELEMS`)."""
    p_all = probes.pos.shape[0]
    npos = len(streams)
    entering = np.zeros((p_all, npos), np.int64)
    scanned = np.zeros((p_all, npos), np.int64)
    out_probe: list[I64] = []
    out_ts: list[list[I64]] = [[] for _ in range(npos)]
    out_seq: list[list[I64]] = [[] for _ in range(npos)]
    checks = evaluated = 0
    step = INDEX_BLOCK if indexed else max(8, min(MAX_BLOCK, BLOCK_ELEMS // max(
        _widest_scan(sides, probes.sels, geos), 1)))
    for a in range(0, p_all, step):
        c = min(p_all, a + step)
        got, blk_evaluated, blk_checks = _probe_block(pred, geos, sides, probes, a, c,
                                                      indexed, window_cost, entering, scanned)
        checks += blk_checks
        evaluated += blk_evaluated
        if got is None:
            continue
        pp, mts, mseq = got
        out_probe.append(pp + a)
        for j in range(npos):
            out_ts[j].append(mts[j])
            out_seq[j].append(mseq[j])
    if out_probe:
        res_probe = np.concatenate(out_probe)
        res_ts = [np.concatenate(col) for col in out_ts]
        res_seq = [np.concatenate(col) for col in out_seq]
    else:
        res_probe = np.zeros(0, np.int64)
        res_ts = [np.zeros(0, np.int64) for _ in range(npos)]
        res_seq = [np.zeros(0, np.int64) for _ in range(npos)]
    return GroupOut(entering, scanned, res_probe, res_ts, res_seq, checks, evaluated)


def _probe_block(pred: Any, geos: tuple[Geometry, ...], sides: tuple[Side, ...],
                 probes: Probes, a: int, c: int, indexed: bool, window_cost: int,
                 entering: I64, scanned: I64
                 ) -> tuple[tuple[I64, list[I64], list[I64]] | None, int, int]:
    """Positions 1..m−1 for probes [a, c): hits of the probes still holding partial
    results, then the extension of those partials (pairwise against every member bound
    so far but the probe, which the hits already match)."""
    npos = len(sides)
    pos, ts, feats = probes.pos[a:c], probes.ts[a:c], probes.feats[a:c]
    active = np.arange(c - a)
    pp = active  # the partial results: probe (block-local) of each
    m_ts: list[I64] = []
    m_seq: list[I64] = []
    m_feat: list[F64] = []
    evaluated = needed = 0
    for j in range(npos):
        sel_all = probes.sels[j]
        sel = None if sel_all is None else sel_all[a:c][active]
        if indexed:
            hits = index_position(pred, sides[j], pos[active], ts[active], feats[active],
                                  sel, geos[j], window_cost)
        else:
            hits = scan_position(pred, sides[j], pos[active], ts[active], feats[active],
                                 sel, geos[j])
        evaluated += hits.checks
        needed += hits.needed
        k = np.bincount(pp, minlength=c - a)[active]
        entering[a + active, j] = k
        h_probe = active[hits.probe]  # block-local probe of each hit
        n_hits = np.bincount(hits.probe, minlength=active.shape[0])
        if indexed:
            scanned[a + active, j] = hits.unit_cost + k * n_hits
        else:
            scanned[a + active, j] = k * hits.unit_cost
        if j == 0:
            pp = h_probe
            m_ts, m_seq, m_feat = [hits.ts], [hits.seq], [hits.feats]
        else:
            cp, ch, tot = expand(pp, h_probe, c - a)
            ok = np.ones(cp.shape[0], dtype=bool)
            for f in m_feat:
                ok &= pair_match(pred, f[cp], hits.feats[ch])
            evaluated += tot * len(m_feat)
            needed += tot * len(m_feat)
            cp, ch = cp[ok], ch[ok]
            pp = pp[cp]
            m_ts = [col[cp] for col in m_ts] + [hits.ts[ch]]
            m_seq = [col[cp] for col in m_seq] + [hits.seq[ch]]
            if j < npos - 1:
                m_feat = [col[cp] for col in m_feat] + [hits.feats[ch]]
        if pp.shape[0] == 0:
            return None, evaluated, needed
        active = np.unique(pp)
    return (pp, m_ts, m_seq), evaluated, needed
