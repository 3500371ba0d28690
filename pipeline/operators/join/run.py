"""Ji et al. Alg. 2 over a run of tuples at once (ours): probing vectorized across the run.

A *run* is a sequence of tuples in the order the Synchronizer releases them, joined at
once instead of one by one (elsewhere in harvest a Spark *micro-batch* is something
else: the records of one trigger). Tuple i
of the run sees exactly what Alg. 2 lets it see when the tuples are joined one by one:

* ⋈T before i is the largest ts before it (the stored ⋈T included), so i is *in order*
  (probed) if ts_i ≥ ⋈T, *late* (only inserted) if ts_i ≥ ⋈T − W_i, else discarded;
* an in-order tuple sees, of every other window W_l, the stored rows with
  ts ≥ ts_i − W_l plus the run's rows inserted before it with ts ≥ ts_i − W_l
  (expiry only ever drops rows older than that, and nothing stored is newer than ⋈T);
* GrubJoin's harvest plans (§IV) then restrict each position to the chosen logical
  basic windows relative to ts_i; tuples of one adaptation step share a plan, so the
  run's probes are grouped by (direction, join order R_i) and each group is probed in
  blocks (:func:`~pipeline.operators.join.run_probe.probe_group`) — a probes × stored-rows
  test plus the run against itself with the order constraint, not one Python probe
  per tuple.

Afterwards the run's tuples are inserted (in order) and every window is expired once to
the bound its last probe needed. The outputs — outcome, results, GrubJoin cost,
feedback — equal what :meth:`MWayJoin.process` gives tuple by tuple
(:mod:`~pipeline.operators.join.tuple_probe`); both paths read and update only the
:class:`~pipeline.operators.join.state.JoinState`; the default join
order even follows the same periodic σ samples (GrubJoin §V). One difference: a basic
window that Alg. 2 would expire and later re-create for a late tuple keeps its old rows
until the next expiry — rows no probe can see any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.profile import PhaseProfile
from pipeline.operators.join.config import Outcome
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.run_probe import GroupOut, probe_group, sample_position
from pipeline.operators.join.run_side import Geometry, Probes, Side, run_rows_seen, visible_stored
from pipeline.operators.join.state import SAMPLE_EVERY, JoinState

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: cost units of one (probe, stored basic window) lookup on the indexed run path,
#: in nested-loop comparisons (ours; fitted in bench/join.py ``indexed``, see costmodel)
INDEX_WINDOW_COST = 6


@dataclass(frozen=True, slots=True)
class RunOutput:
    """Per tuple of the run: :class:`~pipeline.operators.join.config.Outcome` value,
    results, GrubJoin cost (comparisons, or index units) and n^× (only if asked); the
    results (rows = results in run order, columns = streams); feedback of the probes
    whose plan asked for it; pair evaluations as the per-tuple probe counts them."""

    outcome: NDArray[np.int8]
    count: I64
    cost: I64
    seqs: I64
    tss: I64
    feedback: tuple[tuple[int, ProbeFeedback], ...]
    checks: int
    cross: I64 | None = None
    #: pair evaluations this path ran (≥ ``checks``, which counts what the per-tuple
    #: probe runs: blocks also test rows outside a probe's window)
    evaluated: int = 0


def classify(join_time: int, windows: Sequence[int], streams: I64,
             ts: I64) -> tuple[NDArray[np.int8], int]:
    """Alg. 2 :class:`Outcome` of every tuple of a run from ⋈T before the run; and ⋈T
    after it."""
    before = np.maximum.accumulate(np.concatenate(([join_time], ts[:-1])))
    outcome = np.full(ts.shape[0], Outcome.DISCARDED, np.int8)
    w = np.asarray(windows, np.int64)[streams]
    outcome[ts >= before - w] = Outcome.LATE
    outcome[ts >= before] = Outcome.PROBED
    return outcome, max(join_time, int(ts.max())) if ts.shape[0] else join_time


def process_run(state: JoinState, streams: I64, ts: I64, seqs: I64, feats: F64,
                plans: Sequence[ProbePlan | None], want_cross: bool = False,
                profile: PhaseProfile | None = None) -> RunOutput:
    """Alg. 2 for the run (``plans[i]`` is used for in-order tuples only); inserts the
    run and expires the windows. Dense predicates only (the per-tuple probe handles the
    others). ``profile`` (ours, issue 28): laps probing, the cross counts and the window
    insertion on it."""
    cfg = state.config
    outcome, join_after = classify(state.join_time, cfg.windows, streams, ts)
    inserted = outcome != Outcome.DISCARDED
    sides = _sides(state, streams, ts, seqs, feats, inserted)
    geos = tuple(Geometry(cfg.windows[l], cfg.basic_window_ms, cfg.n_basic(l))
                 for l in range(cfg.m))
    probed = np.flatnonzero(outcome == Outcome.PROBED)
    plan_of = [plans[i] for i in probed.tolist()]
    grp = _group_probes(state, streams, ts, feats, probed, plan_of, sides, geos)
    found = _probe_groups(state, ts, seqs, feats, probed, grp, sides, geos)
    feedback = _feedback(state, streams, ts, probed, grp, found)
    if profile is not None:
        profile.lap("probing")
    cross = _cross(cfg.windows, streams, ts, probed, sides) if want_cross else None
    if profile is not None:
        profile.lap("join_stats")
    _update_windows(state, streams, ts, seqs, feats, inserted, probed)
    state.join_time = join_after
    if profile is not None:
        profile.lap("insertion")
    return RunOutput(outcome, found.count, found.cost, found.seqs, found.tss, feedback,
                     found.checks, cross, found.evaluated)


def _sides(state: JoinState, streams: I64, ts: I64, seqs: I64, feats: F64,
           inserted: NDArray[np.bool_]) -> list[Side]:
    """What each stream offers the run's probes: its stored rows (the merged copy, or
    the sorted value index with ``[join] index``) and the run's rows inserted into it."""
    pos_all = np.arange(ts.shape[0], dtype=np.int64)
    vix = state.value_indexes() if state.use_index else None
    sides = []
    for l, win in enumerate(state.windows):
        q = pos_all[inserted & (streams == l)]
        bws = tuple(map(win.bws.__getitem__, win.bids))
        if vix is not None:  # the window's sorted value index: no merged copy
            sides.append(Side(bws, q, ts[q], seqs[q], feats[q], vindex=vix[l],
                              q_sorted=np.argsort(feats[q, 0], kind="stable")))
        else:  # the merged copy, built if a probe scans this window
            sides.append(Side(bws, q, ts[q], seqs[q], feats[q], window=win))
    return sides


# ----------------------------------------------------------------------------- orders
@dataclass(frozen=True, slots=True)
class _Grouping:
    """The run's probes (index k into the probed tuples) by (direction, join order):
    ``gid[k]`` into ``keys``; ``fast[k]``: its plan scans no window of the first
    partner; ``code[k]`` into the distinct ``plans``, whose ``feedback`` flags are kept;
    the comparisons of each probe's σ sample."""

    gid: I64
    keys: list[tuple[int, tuple[int, ...]]]
    fast: NDArray[np.bool_]
    code: I64
    plans: list[ProbePlan | None]
    feedback: NDArray[np.bool_]
    sample_cost: I64


def _group_probes(state: JoinState, streams: I64, ts: I64, feats: F64, probed: I64,
                  plan_of: list[ProbePlan | None], sides: list[Side],
                  geos: tuple[Geometry, ...]) -> _Grouping:
    """Each probe's join order: its plan's own order, else MJoin's default order
    (GrubJoin §V), re-derived after every SAMPLE_EVERY-th probe of a direction samples σ
    against every other window — in run order, exactly as the per-tuple probe does.
    Plans are looked at once per distinct plan (tuples of one adaptation step share
    them), not once per tuple."""
    m = state.config.m
    n = len(plan_of)
    _, first_of, code = np.unique(np.fromiter(map(id, plan_of), np.int64, n),
                                  return_index=True, return_inverse=True)
    code = code.reshape(-1)
    plans = [plan_of[k] for k in first_of.tolist()]
    fast = np.array([p is not None and p.windows is not None and p.windows[0] == ()
                     for p in plans], dtype=bool)[code]
    default = np.array([p is None or p.order is None for p in plans], dtype=bool)[code]
    feedback = np.array([p is not None and p.feedback for p in plans], dtype=bool)
    p_str = streams[probed]
    gid = np.zeros(n, np.int64)
    keys: dict[tuple[int, tuple[int, ...]], int] = {}
    sample_cost = np.zeros(n, np.int64)
    own = np.flatnonzero(~default)
    if own.shape[0]:
        combos, inverse = np.unique(code[own] * m + p_str[own], return_inverse=True)
        ids = np.empty(combos.shape[0], np.int64)
        for c, combo in enumerate(combos.tolist()):
            s = combo % m
            ids[c] = keys.setdefault((s, state.plan_order(s, plans[combo // m])), len(keys))
        gid[own] = ids[inverse.reshape(-1)]
    for s in range(m):
        ks = np.flatnonzero(default & (p_str == s))
        if ks.shape[0]:
            _default_orders(state, s, ks, probed, ts, feats, sides, geos, gid, keys,
                            sample_cost)
    return _Grouping(gid, list(keys), fast, code, plans, feedback, sample_cost)


def _default_orders(state: JoinState, s: int, ks: I64, probed: I64, ts: I64, feats: F64,
                    sides: list[Side], geos: tuple[Geometry, ...], gid: I64,
                    keys: dict[tuple[int, tuple[int, ...]], int], sample_cost: I64) -> None:
    """The probes ``ks`` of direction ``s`` without a plan order: every SAMPLE_EVERY-th
    samples σ against every other window first (GrubJoin §V), and each takes the
    default order the samples before it give (``gid``, ``sample_cost`` filled in)."""
    pred = state.config.predicate
    first = state.next_probes(s, ks.shape[0])
    sampled = np.flatnonzero((first + np.arange(ks.shape[0])) % SAMPLE_EVERY == 0)
    per_l: list[tuple[I64, I64]] = []
    if sampled.shape[0]:
        rows = probed[ks[sampled]]
        for l in state.others[s]:
            matches, seen, spent = sample_position(
                pred, sides[l], rows, ts[rows], feats[rows], geos[l],
                INDEX_WINDOW_COST if state.use_index else None)
            per_l.append((matches, seen))
            sample_cost[ks[sampled]] += spent
    bounds = [0, *sampled.tolist(), ks.shape[0]]
    for seg in range(len(bounds) - 1):
        a, c = bounds[seg], bounds[seg + 1]
        if seg > 0:  # the probe at ``a`` sampled σ first: its own order uses it
            for l, (matches, seen) in zip(state.others[s], per_l, strict=True):
                state.add_sample(s, l, int(matches[seg - 1]), int(seen[seg - 1]))
        if c > a:
            gid[ks[a:c]] = keys.setdefault((s, state.default_order(s)), len(keys))


def _tables(state: JoinState, order: tuple[int, ...], codes: I64,
            plans: list[ProbePlan | None]) -> list[NDArray[np.bool_] | None]:
    """Per position, the probes' chosen-logical-window tables (None = all windows for
    every probe; one distinct plan gives one broadcast row)."""
    out: list[NDArray[np.bool_] | None] = []
    distinct, inverse = np.unique(codes, return_inverse=True)
    for pos, l in enumerate(order):
        n_l = state.config.n_basic(l)
        rows = [state.selection(l, plans[c], pos) for c in distinct.tolist()]
        if all(r is None for r in rows):
            out.append(None)
            continue
        full = np.ones(n_l, dtype=bool)
        table = np.stack([full if r is None else r[0] for r in rows])
        if table.shape[0] == 1:
            out.append(np.broadcast_to(table[0], (codes.shape[0], n_l)))
        else:
            out.append(table[inverse.reshape(-1)])
    return out


# ----------------------------------------------------------------------------- probes
@dataclass(slots=True)
class _Found:
    """What the run's probes found: per tuple the results and the GrubJoin cost; the
    results in run order; per probe asking for feedback the partial results entering
    and the cost at each position; pair evaluations (as counted tuple by tuple, and run)."""

    count: I64
    cost: I64
    seqs: I64
    tss: I64
    reached: dict[int, tuple[I64, I64]]
    checks: int
    evaluated: int


def _probe_groups(state: JoinState, ts: I64, seqs: I64, feats: F64, probed: I64,
                  grp: _Grouping, sides: list[Side], geos: tuple[Geometry, ...]) -> _Found:
    """Every group of probes (one direction, join order and plan) probed in blocks
    (:func:`~pipeline.operators.join.run_probe.probe_group`)."""
    cfg = state.config
    n = ts.shape[0]
    count = np.zeros(n, np.int64)
    cost = np.zeros(n, np.int64)
    cost[probed] += grp.sample_cost
    cost[probed[grp.fast]] = 0  # no window of the first partner: the per-tuple fast path
    live = np.flatnonzero(~grp.fast)
    # one group per (direction, join order, plan): a block's probes then share their
    # chosen windows, and the block scans only those (union_ranges) — a harvest's probes
    # mixed with shredding's, which choose other windows, made every block scan nearly
    # the whole window and mask the rest away
    key = grp.gid[live] * len(grp.plans) + grp.code[live]
    by_key = np.argsort(key, kind="stable")
    live = live[by_key]
    cuts = np.flatnonzero(np.diff(key[by_key])) + 1
    results: list[tuple[I64, I64, I64]] = []
    reached: dict[int, tuple[I64, I64]] = {}
    checks = evaluated = 0
    for ks in np.split(live, cuts) if live.shape[0] else []:
        s, order = grp.keys[int(grp.gid[ks[0]])]
        rows = probed[ks]
        probes = Probes(rows, ts[rows], seqs[rows], feats[rows],
                        _tables(state, order, grp.code[ks], grp.plans))
        out = probe_group(cfg.predicate, order, tuple(geos[l] for l in order),
                          tuple(sides[l] for l in order), probes, state.use_index,
                          INDEX_WINDOW_COST)
        checks += out.checks
        evaluated += out.evaluated
        cost[rows] += out.scanned.sum(axis=1)
        count[rows] = np.bincount(out.res_probe, minlength=rows.shape[0])
        results.append(_columns(cfg.m, s, order, rows, probes, out))
        for r in np.flatnonzero(grp.feedback[grp.code[ks]]).tolist():
            reached[int(rows[r])] = (out.entering[r], out.scanned[r])
    res_seqs, res_tss = _in_run_order(cfg.m, count, results)
    return _Found(count, cost, res_seqs, res_tss, reached, checks, evaluated)


# ----------------------------------------------------------------------------- results
def _columns(m: int, s: int, order: tuple[int, ...], rows: I64, probes: Probes,
             out: GroupOut) -> tuple[I64, I64, I64]:
    """A group's results as (run position, seqs m-wide, tss m-wide), grouped by probe."""
    r = out.res_probe.shape[0]
    seqs = np.empty((r, m), np.int64)
    tss = np.empty((r, m), np.int64)
    seqs[:, s] = probes.seq[out.res_probe]
    tss[:, s] = probes.ts[out.res_probe]
    for j, l in enumerate(order):
        seqs[:, l] = out.res_seq[j]
        tss[:, l] = out.res_ts[j]
    return rows[out.res_probe], seqs, tss


def _in_run_order(m: int, count: I64, results: list[tuple[I64, I64, I64]]
                  ) -> tuple[I64, I64]:
    """All groups' results, grouped by probe in run order (a scatter, no sort)."""
    total = int(count.sum())
    seqs = np.empty((total, m), np.int64)
    tss = np.empty((total, m), np.int64)
    start = np.cumsum(count) - count
    for where, g_seqs, g_tss in results:
        if where.shape[0] == 0:
            continue
        first = np.flatnonzero(np.concatenate(([True], where[1:] != where[:-1])))
        within = np.arange(where.shape[0]) - np.repeat(first, np.diff(
            np.append(first, where.shape[0])))
        dest = start[where] + within
        seqs[dest] = g_seqs
        tss[dest] = g_tss
    return seqs, tss


def _feedback(state: JoinState, streams: I64, ts: I64, probed: I64, grp: _Grouping,
              found: _Found) -> tuple[tuple[int, ProbeFeedback], ...]:
    """The :class:`ProbeFeedback` of every probe whose plan asked for it, as the
    per-tuple probe reports it (match histograms by logical basic window)."""
    out = []
    start = np.cumsum(found.count) - found.count
    for k in np.flatnonzero(grp.feedback[grp.code]).tolist():
        i = int(probed[k])
        s, t = int(streams[i]), int(ts[i])
        order = grp.keys[int(grp.gid[k])][1]
        got = found.reached.get(i)
        if got is None:  # the fast path: no window of the first partner scanned
            entering: list[int] = [1]
            scanned = (0,) * len(order)
        else:
            ent, scn = got
            depth = int(np.count_nonzero(ent))
            entering = [int(v) for v in ent[:depth]]
            scanned = tuple(int(v) for v in scn[:depth]) + (0,) * (len(order) - depth)
        results = int(found.count[i])
        rows = found.tss[start[i] : start[i] + results]
        members = {l: rows[:, l] for l in order} if results else {}
        out.append((i, ProbeFeedback(s, t, order, state.match_counts(t, order, members),
                                     scanned, results, int(found.cost[i]),
                                     tuple(entering))))
    return tuple(out)


def _cross(windows: Sequence[int], streams: I64, ts: I64, probed: I64,
           sides: list[Side]) -> I64:
    """n^× = Π_{l≠i} |S_l[W_l]| as each probe saw it (Ji §3.5): stored rows with
    ts ≥ ts_i − W_l plus the run's earlier rows of l in that range."""
    cross = np.ones(ts.shape[0], np.int64)
    p_str = streams[probed]
    for l, side in enumerate(sides):
        who = probed[p_str != l]
        if who.shape[0] == 0:
            continue
        lo = ts[who] - windows[l]
        cross[who] *= visible_stored(side, lo) + run_rows_seen(side, who, lo)
    return cross


def _update_windows(state: JoinState, streams: I64, ts: I64, seqs: I64, feats: F64,
                    inserted: NDArray[np.bool_], probed: I64) -> None:
    """Insert the run's inserted tuples (in run order) and expire every window to the
    bound its last probe of another stream needed (Alg. 2); the value indexes follow."""
    cfg = state.config
    vix = state.value_indexes() if state.use_index else None
    for l, win in enumerate(state.windows):
        rows = np.flatnonzero(inserted & (streams == l))
        if rows.shape[0]:
            win.insert_many(ts[rows], seqs[rows], feats[rows])
        others = probed[streams[probed] != l]
        if others.shape[0]:
            win.expire(int(ts[others].max()) - cfg.windows[l])
        if vix is not None:  # in step with the window (valueindex.py)
            index = vix[l]
            index.add(feats[rows, 0], ts[rows], seqs[rows])
            if win.bids:
                index.expire(win.bids[0] * cfg.basic_window_ms)


def encode_dense(pred: Any, attrs: Sequence[Any], items: bool = False) -> F64:
    """Feature rows of many tuples (dense predicates): one float conversion per column;
    a bad attribute falls back to :meth:`encode`, which names it. ``items``: ``attrs``
    holds (event, delay) items, whose events' attributes are read."""
    cols = pred.columns
    out = np.empty((len(attrs), len(cols)), np.float64)
    try:
        for c, name in enumerate(cols):
            if items:
                out[:, c] = [it[0].attrs[name] for it in attrs]
            else:
                out[:, c] = [a[name] for a in attrs]
    except (KeyError, TypeError, ValueError):
        for r, a in enumerate(attrs):
            out[r] = pred.encode(a[0].attrs if items else a)
    return out
